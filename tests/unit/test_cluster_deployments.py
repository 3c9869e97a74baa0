"""One bus for several clusters (issue 56, Strimzi's strimzi.io/cluster): a deployment named for its cluster has bus
topics and consumer groups of its own, and leaves the specs and rebalances for other clusters alone."""

from __future__ import annotations

import subprocess
import sys

import pytest
import yaml

import events.topics
from events import RebalanceRequest, TopicSpec
from events.topics import TOPICS, Topics, group, not_ours, reserved_topic
from services.cli.exporting import Form, document


def test_a_named_deployment_has_bus_topics_of_its_own() -> None:
    east = Topics.of("east")
    assert east.specs.name == "ballast.east.topic.specs"
    assert east.leases.name == "ballast.east.leases"
    assert [t.name for t in Topics.of(None).all()] == [t.name for t in Topics().all()]
    # Nothing else of a topic changes with its name: its events, its cleanup policy.
    assert [(t.events, t.compacted) for t in east.all()] == [(t.events, t.compacted) for t in Topics().all()]
    assert len({t.name for t in east.all()} & {t.name for t in Topics.of("west").all()}) == 0


def test_consumer_groups_carry_the_deployments_name() -> None:
    assert group("topic-reconciler", "east") == "ballast-east-topic-reconciler"
    assert group("rebalancer-owner", "east") == "ballast-east-rebalancer-owner"


@pytest.mark.parametrize("name", ["ballast.topic.specs", "ballast.east.topic.specs", "ballast.west-2.leases",
                                  "ballast-east-topic-reconciler-__assignor-__leader"])
def test_every_deployments_bus_topics_are_reserved(name: str) -> None:
    # A bus that is also a managed cluster carries other deployments' topics: none is anybody's spec to change.
    assert reserved_topic(name) is not None


@pytest.mark.parametrize("name", ["ballast.orders", "ballast.east.orders", "ballast.east.topic.specs.v2"])
def test_a_users_topic_that_looks_like_ours_is_not_reserved(name: str) -> None:
    assert reserved_topic(name) is None


def test_what_names_another_cluster_is_not_ours(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(events.topics, "CLUSTER", "east")
    assert not_ours(TopicSpec(name="orders", partitions=1, replicas=1, cluster="east")) is None
    assert not_ours(TopicSpec(name="orders", partitions=1, replicas=1)) is None
    assert not_ours(TopicSpec(name="orders", partitions=1, replicas=1, cluster="west")) == (
        "TopicSpec 'orders': it is for cluster 'west' (strimzi.io/cluster), and this deployment manages 'east' "
        "(BALLAST_CLUSTER)")
    assert "for cluster 'west'" in not_ours(RebalanceRequest(name="full", cluster="west"))
    # An unnamed deployment is the bus's only one: it acts on every spec, whatever cluster its label names.
    monkeypatch.setattr(events.topics, "CLUSTER", None)
    assert not_ours(TopicSpec(name="orders", partitions=1, replicas=1, cluster="west")) is None


def test_export_labels_each_kafka_topic_with_the_deployments_cluster(monkeypatch: pytest.MonkeyPatch) -> None:
    spec = TopicSpec(name="orders", partitions=3, replicas=3)
    assert "labels" not in document(spec, Form.strimzi)["metadata"]
    monkeypatch.setattr(events.topics, "CLUSTER", "east")
    assert document(spec, Form.strimzi)["metadata"]["labels"] == {"strimzi.io/cluster": "east"}
    assert document(spec.model_copy(update={"cluster": "west"}), Form.strimzi)["metadata"]["labels"] == {
        "strimzi.io/cluster": "west"}
    assert yaml.safe_load(yaml.safe_dump(document(spec.model_copy(update={"cluster": "west"}), Form.plain)))[
        "cluster"] == "west"


def run(code: str, cluster: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                          env={"BALLAST_CLUSTER": cluster, "PATH": "/usr/bin:/bin", "HOME": "/nonexistent"})


def test_the_name_is_read_as_the_process_starts_and_the_settings_agree() -> None:
    named = run("from events import TOPICS; from services.common.settings import Settings; "
                "print(TOPICS.specs.name, Settings().cluster)", "east")
    assert named.stdout.split() == ["ballast.east.topic.specs", "east"], named.stderr
    assert TOPICS.specs.name == "ballast.topic.specs"  # this process started with none


def test_settings_refuse_a_cluster_the_process_did_not_start_with(monkeypatch: pytest.MonkeyPatch) -> None:
    from pydantic import ValidationError

    from services.common.settings import Settings

    monkeypatch.setenv("BALLAST_CLUSTER", "east")
    with pytest.raises(ValidationError, match="set BALLAST_CLUSTER=east in the environment before starting it"):
        Settings()
    monkeypatch.setenv("BALLAST_CLUSTER", "")
    assert Settings().cluster is None


def test_the_cli_says_in_one_line_what_is_wrong_with_a_setting() -> None:
    wrong = run("import sys; sys.argv = ['ballast', 'status']; from services.cli.main import main; main()", "East")
    assert wrong.returncode == 2
    assert "Traceback" not in wrong.stderr
    assert "BALLAST_CLUSTER" in wrong.stderr and "invalid cluster name 'East'" in wrong.stderr


def test_a_stack_started_by_a_named_process_gives_it_settings_of_its_own_name(tmp_path) -> None:
    # `BALLAST_CLUSTER=east ballast up`: the stack's in-process clients (its bus topics made as it starts) are east's.
    started = run("import pathlib, sys; from services.local.stack import LocalStack; "
                  f"stack = LocalStack(pathlib.Path({str(tmp_path)!r})); "
                  "print(stack.settings().cluster, stack.topics.specs.name, stack.env['BALLAST_CLUSTER'])", "east")
    assert started.stdout.split() == ["east", "ballast.east.topic.specs", "east"], started.stderr
