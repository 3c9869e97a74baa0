"""``ballast export`` (issue 30, feature 1): specs for the topics a cluster has, which read back as the same specs and
change nothing when applied."""

from __future__ import annotations

import re

import yaml

from services.cli.changes import Verdict, diff_topic
from services.cli.exporting import Form, document, export
from services.cli.manifests import load_specs
from services.adapters.admin import PartitionInfo, TopicDescription


def topic(name: str, partitions: int = 3, rf: int = 2, config: dict | None = None,
          overrides: frozenset[str] | None = None) -> TopicDescription:
    return TopicDescription(name, tuple(PartitionInfo(i, tuple(range(1, rf + 1)), 1) for i in range(partitions)),
                            config or {}, overrides)


CLUSTER = {
    "orders": topic("orders", 6, 3, {"retention.ms": "86400000", "min.insync.replicas": "2"},
                    overrides=frozenset({"retention.ms"})),
    "Payments_EU": topic("Payments_EU", 1, 1, {"cleanup.policy": "compact"}),
    "__consumer_offsets": topic("__consumer_offsets", 50, 3),
    "ballast.topic.specs": topic("ballast.topic.specs", 1, 1),
    "clicks": topic("clicks"),
    # faust's leader-election topic of a Ballast service on a bus that is the managed cluster (issue 56, defect 4).
    "ballast-topic-reconciler-__assignor-__leader": topic("ballast-topic-reconciler-__assignor-__leader", 1, 1),
}


def test_existing_topics_become_adopting_specs_of_what_they_are_now() -> None:
    result = export(CLUSTER, specified={"clicks"})
    assert [s.name for s in result.specs] == ["Payments_EU", "orders"]
    orders = result.specs[1]
    # Only the configs set on the topic: min.insync.replicas here is the brokers'.
    assert (orders.partitions, orders.replicas, orders.config, orders.adopt) == (6, 3, {"retention.ms": "86400000"},
                                                                                   True)
    assert set(result.skipped) == {"__consumer_offsets", "ballast.topic.specs", "clicks",
                                   "ballast-topic-reconciler-__assignor-__leader"}
    assert "a faust app's internal topic" in result.skipped["ballast-topic-reconciler-__assignor-__leader"]
    assert "internal topic" in result.skipped["__consumer_offsets"]
    assert "has a spec already" in result.skipped["clicks"]
    assert [s.name for s in export(CLUSTER, {"clicks"}, include_specified=True).specs] == ["Payments_EU", "clicks",
                                                                                            "orders"]
    assert [s.name for s in export(CLUSTER, set(), match=re.compile("^or")).specs] == ["orders"]


def test_both_forms_read_back_as_the_same_specs_and_diff_as_no_change_to_the_cluster() -> None:
    specs = export(CLUSTER, set()).specs
    for form in Form:
        documents = [document(s, form) for s in specs]
        text = yaml.safe_dump_all(documents, sort_keys=False, explicit_start=True)
        # A KafkaTopic whose metadata.name is not its topic's name reads back with it as the resource name (statuses
        # can be asked for by it).
        named = [s.model_copy(update={"resource_name": d["metadata"]["name"]})
                 if form is Form.strimzi and d["metadata"]["name"] != s.name else s for s, d in zip(specs, documents)]
        assert load_specs(text) == named
        for spec in specs:
            diff = diff_topic(spec, None, CLUSTER[spec.name], alive_brokers=3)
            assert diff.changes == [] and diff.verdict is Verdict.CHANGE  # the spec is new; the cluster keeps all
    strimzi = document(specs[0], Form.strimzi)
    # "Payments_EU" is no Kubernetes name: a made one, and the topic's own in spec.topicName, as Strimzi does.
    assert strimzi["spec"]["topicName"] == "Payments_EU" and strimzi["metadata"]["name"].startswith("payments-eu---")
    assert strimzi["metadata"]["annotations"] == {"ballast.io/adopt": "true"}
    assert document(specs[2], Form.plain) == {"name": "orders", "partitions": 6, "replicas": 3,
                                              "config": {"retention.ms": "86400000"}, "adopt": True}
