import typing

import pytest

from events import PlacerName
from services.cli.manifests import ManifestError, load_specs
from services.placement.placer import PLACERS

KAFKA_TOPIC = """
apiVersion: kafka.strimzi.io/v1beta2
kind: KafkaTopic
metadata:
  name: my-topic
  labels: {strimzi.io/cluster: my-cluster}
spec:
  partitions: 3
  replicas: 2
  config:
    retention.ms: 7200000
    cleanup.policy: compact
"""


def test_strimzi_kafka_topic() -> None:
    (spec,) = load_specs(KAFKA_TOPIC)
    assert (spec.name, spec.partitions, spec.replicas) == ("my-topic", 3, 2)
    assert spec.config == {"retention.ms": "7200000", "cleanup.policy": "compact"}


def test_the_placer_comes_from_the_plain_form_or_a_kafka_topic_annotation() -> None:
    annotated = KAFKA_TOPIC.replace("  labels:", "  annotations: {ballast.io/placer: multi-level}\n  labels:")
    assert load_specs(annotated)[0].placer == "multi-level"
    assert load_specs(KAFKA_TOPIC)[0].placer is None
    assert load_specs("{name: a, partitions: 1, replicas: 1, placer: striped}")[0].placer == "striped"
    with pytest.raises(ManifestError, match="placer"):
        load_specs("{name: a, partitions: 1, replicas: 1, placer: random}")


def test_every_placer_name_a_spec_may_use_is_registered() -> None:
    assert set(typing.get_args(PlacerName)) == set(PLACERS)


def test_plain_forms_and_lists() -> None:
    specs = load_specs("name: a\npartitions: 1\nreplicas: 1\n---\n- {name: b, partitions: 2, replicas: 3}\n")
    assert [s.name for s in specs] == ["a", "b"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("apiVersion: v1\nkind: KafkaTopic\nmetadata: {name: x}\nspec: {partitions: 1, replicas: 1}", "apiVersion"),
        ("apiVersion: kafka.strimzi.io/v1beta2\nkind: KafkaTopic\nmetadata: {name: x}\nspec: {partitions: 1}",
         "needs spec.replicas"),
        ("kind: Deployment\n", "unsupported kind"),
        ("name: 'a b'\npartitions: 1\nreplicas: 1", "invalid Kafka topic name"),
        ("name: x\npartitions: 1\nreplicas: 0", "replicas"),
        (": : :", "not valid YAML"),
        ("", "no topic specs"),
    ],
)
def test_errors_name_the_document(text: str, message: str) -> None:
    with pytest.raises(ManifestError, match=message):
        load_specs(text, "f.yaml")
