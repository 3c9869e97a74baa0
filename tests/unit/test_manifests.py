import typing
from pathlib import Path

import pytest

from events import PlacerName, TopicSpec
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
        ("apiVersion: v1\nkind: List\nitems: {name: x}", "a List's items must be a list"),
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


KAFKA_REBALANCE = """
apiVersion: kafka.strimzi.io/v1beta2
kind: KafkaRebalance
metadata:
  name: my-rebalance
  labels: {strimzi.io/cluster: my-cluster}
  annotations: {strimzi.io/rebalance-auto-approval: "true"}
spec:
  mode: remove-brokers
  brokers: [4, 3]
  goals: [RackAwareGoal, ReplicaCapacityGoal]
  skipHardGoalCheck: true
  replicationThrottle: 10000000
  concurrentPartitionMovementsPerBroker: 10
"""


def test_strimzi_kafka_rebalance_and_the_plain_form() -> None:
    from events import RebalanceRequest
    from services.cli.manifests import load_manifests

    (request,) = load_manifests(KAFKA_REBALANCE)
    assert isinstance(request, RebalanceRequest)
    assert (request.name, request.mode, request.brokers, request.auto_approve) == (
        "my-rebalance", "remove-brokers", [3, 4], True)
    assert request.goals == ["RackAwareGoal", "ReplicaCapacityGoal"] and request.skip_hard_goal_check
    assert (request.replication_throttle, request.concurrent_partition_movements_per_broker) == (10_000_000, 10)
    plain, topic = load_manifests("kind: Rebalance\nname: full-one\n---\nname: t\npartitions: 1\nreplicas: 1\n")
    assert isinstance(plain, RebalanceRequest) and plain.mode == "full" and not plain.auto_approve
    assert topic.name == "t"


@pytest.mark.parametrize(("text", "error"), [
    (KAFKA_REBALANCE.replace("  brokers: [4, 3]\n", ""), "needs the list of brokers"),
    (KAFKA_REBALANCE + "  replicaMovementStrategies: [x]\n", "replicaMovementStrategies is not supported"),
    (KAFKA_REBALANCE.replace("name: my-rebalance", "generateName: x"), "needs metadata.name"),
    ("kind: Rebalance\nname: r\nrebalanceDisk: true\ngoals: [a]\n", "takes no goals"),
])
def test_bad_rebalances_say_why(text: str, error: str) -> None:
    from services.cli.manifests import load_manifests

    with pytest.raises(ManifestError, match=error):
        load_manifests(text, "r.yaml")


def test_topic_spec_readers_refuse_a_rebalance() -> None:
    with pytest.raises(ManifestError, match="expected topic specs only"):
        load_specs(KAFKA_REBALANCE)


def test_load_aware_placement_can_be_turned_off_per_topic() -> None:
    assert load_specs(KAFKA_TOPIC)[0].load_aware
    annotated = KAFKA_TOPIC.replace("  labels:", "  annotations: {ballast.io/load-aware: \"false\"}\n  labels:")
    assert not load_specs(annotated)[0].load_aware
    assert not load_specs("{name: a, partitions: 1, replicas: 1, loadAware: false}")[0].load_aware


def test_a_strimzi_remove_disks_rebalance_reads_unchanged() -> None:
    from events import RebalanceRequest
    from services.cli.manifests import load_manifests

    (request,) = load_manifests("""
apiVersion: kafka.strimzi.io/v1beta2
kind: KafkaRebalance
metadata:
  name: drain
spec:
  mode: remove-disks
  moveReplicasOffVolumes:
    - brokerId: 3
      volumeIds: [1, 2]
  intraBrokerThrottle: 10000000
""")
    assert isinstance(request, RebalanceRequest) and request.mode == "remove-disks"
    assert [(v.broker_id, v.volume_ids) for v in request.move_replicas_off_volumes] == [(3, [1, 2])]
    assert request.intra_broker_throttle == 10_000_000


def test_sources_are_files_directories_recursively_and_stdin_in_order(tmp_path) -> None:
    """Issue 30, defect 1: `-f a.yaml -f b.yaml` used only the last file; a directory and `-f -` failed."""
    import io

    from services.cli.manifests import load_sources

    (tmp_path / "team" / "payments").mkdir(parents=True)
    (tmp_path / "team" / "b.yaml").write_text("name: b\npartitions: 1\nreplicas: 1\n")
    (tmp_path / "team" / "payments" / "c.json").write_text('{"name": "c", "partitions": 1, "replicas": 1}')
    (tmp_path / "team" / "notes.txt").write_text("not a manifest")
    (tmp_path / "team" / ".github" / "workflows").mkdir(parents=True)
    (tmp_path / "team" / ".github" / "workflows" / "ci.yml").write_text("on: push\n")  # hidden: not a manifest
    (tmp_path / "team" / "more.YAML").write_text("name: d\npartitions: 1\nreplicas: 1\n")
    (tmp_path / "a.yml").write_text("name: a\npartitions: 1\nreplicas: 1\n")
    stdin = io.StringIO("kind: Rebalance\nname: scale-up\nmode: add-brokers\nbrokers: [7]\n")
    loaded = load_sources([str(tmp_path / "a.yml"), str(tmp_path / "team"), "-"], stdin=stdin)
    assert [m.name for m in loaded.manifests] == ["a", "b", "d", "c", "scale-up"]


def test_a_topic_given_twice_or_an_empty_directory_is_refused(tmp_path) -> None:
    from services.cli.manifests import load_sources

    (tmp_path / "one.yaml").write_text("name: a\npartitions: 1\nreplicas: 1\n")
    (tmp_path / "two.yaml").write_text("name: a\npartitions: 2\nreplicas: 1\n")
    with pytest.raises(ManifestError, match=f"topic 'a' is given more than once \\(in {tmp_path}/one.yaml and "
                                            f"{tmp_path}/two.yaml\\): keep one"):
        load_sources([str(tmp_path / "one.yaml"), str(tmp_path / "two.yaml")])
    with pytest.raises(ManifestError, match="standard input\\) is given more than once"):
        load_sources(["-", "-"])
    (tmp_path / "empty").mkdir()
    with pytest.raises(ManifestError, match="no .yaml, .yml, .json file in this directory"):
        load_sources([str(tmp_path / "empty")])


def test_a_kafka_topic_with_a_misspelt_spec_field_is_refused() -> None:
    """Issue 30, defect 5: `spec.confg` was accepted and the config silently dropped."""
    text = KAFKA_TOPIC.replace("  config:", "  confg:")
    with pytest.raises(ManifestError, match=r"KafkaTopic 'my-topic': spec.confg is not a KafkaTopic field \(known: "
                                            r"config, partitions, replicas, topicName\)"):
        load_specs(text, "t.yaml")


def test_pause_and_unmanage_from_strimzis_annotations_or_the_plain_form() -> None:
    """Issue 30, defect 5: `strimzi.io/pause-reconciliation: "true"` was ignored (the RF change went ahead)."""
    def annotated(annotations: str):
        return load_specs(KAFKA_TOPIC.replace("  labels:", f"  annotations: {{{annotations}}}\n  labels:"))[0]

    assert annotated('strimzi.io/pause-reconciliation: "true"').paused
    assert not annotated('strimzi.io/pause-reconciliation: "false"').paused
    assert not annotated('strimzi.io/managed: "false"').managed
    assert annotated('strimzi.io/managed: "true"').managed
    plain = load_specs("{name: a, partitions: 1, replicas: 1, paused: true, managed: false}")[0]
    assert plain.paused and not plain.managed
    assert not load_specs(KAFKA_TOPIC)[0].paused and load_specs(KAFKA_TOPIC)[0].managed
    assert annotated("ballast.io/drift: report").drift == "report"
    assert load_specs("{name: a, partitions: 1, replicas: 1, drift: correct}")[0].drift == "correct"
    with pytest.raises(ManifestError, match="drift"):
        load_specs("{name: a, partitions: 1, replicas: 1, drift: ignore}")


def test_kubectl_get_kafkatopics_output_is_read_as_it_is() -> None:
    """Issue 56, Strimzi's users at home: `kubectl get kafkatopics -o yaml` prints a List whose items carry
    Kubernetes' metadata and Strimzi's status; a KafkaTopic may leave partitions and replicas to the cluster, and name
    its topic apart from its resource (spec.topicName)."""
    text = (Path(__file__).parents[1] / "data" / "kafkatopics-list.yaml").read_text().replace("{prefix}", "shop")
    orders, payments = load_specs(text, "kafkatopics.yaml")
    assert orders == TopicSpec(name="shop-orders", partitions=3, replicas=3,
                               config={"min.insync.replicas": "2", "retention.ms": "604800000"}, cluster="my-cluster")
    assert payments == TopicSpec(name="shop.Payments_EU", config={"cleanup.policy": "compact"},
                                 resource_name="shop-payments-eu", cluster="my-cluster")
    assert (payments.partitions, payments.replicas) == (None, None)


KAFKA_TOPICS_OF_TWO_CLUSTERS = """\
apiVersion: v1
kind: List
items:
  - apiVersion: kafka.strimzi.io/v1beta2
    kind: KafkaTopic
    metadata: {name: orders, labels: {strimzi.io/cluster: east}}
    spec: {partitions: 3, replicas: 3}
  - apiVersion: kafka.strimzi.io/v1beta2
    kind: KafkaTopic
    metadata: {name: orders, labels: {strimzi.io/cluster: west}}
    spec: {partitions: 6, replicas: 3}
  - apiVersion: kafka.strimzi.io/v1beta2
    kind: KafkaRebalance
    metadata: {name: west-full, labels: {strimzi.io/cluster: west}}
    spec: {}
  - {name: plain, partitions: 1, replicas: 1}
"""


def test_a_deployment_named_for_its_cluster_takes_the_manifests_labelled_for_it(tmp_path, monkeypatch) -> None:
    """strimzi.io/cluster selects which cluster a deployment manages (issue 56): one file for several clusters."""
    import events.topics
    from services.cli.manifests import load_sources

    (tmp_path / "topics.yaml").write_text(KAFKA_TOPICS_OF_TWO_CLUSTERS)
    monkeypatch.setattr(events.topics, "CLUSTER", "east")
    east = load_sources([str(tmp_path / "topics.yaml")])
    assert [(m.name, m.cluster) for m in east.manifests] == [("orders", "east"), ("plain", None)]
    assert east.manifests[0].partitions == 3
    assert east.skipped == [
        f"topic 'orders' ({tmp_path}/topics.yaml): it is for cluster 'west' (strimzi.io/cluster), and this "
        "deployment manages 'east' (BALLAST_CLUSTER)",
        f"rebalance 'west-full' ({tmp_path}/topics.yaml): it is for cluster 'west' (strimzi.io/cluster), and this "
        "deployment manages 'east' (BALLAST_CLUSTER)"]
    monkeypatch.setattr(events.topics, "CLUSTER", "west")
    west = load_sources([str(tmp_path / "topics.yaml")])
    assert [(m.name, m.cluster) for m in west.manifests] == [("orders", "west"), ("west-full", "west"),
                                                            ("plain", None)]
    assert west.manifests[0].partitions == 6
    # A deployment with no name is the bus's only one: both are its, and the same topic twice is refused.
    monkeypatch.setattr(events.topics, "CLUSTER", None)
    with pytest.raises(ManifestError, match="topic 'orders' is given more than once"):
        load_sources([str(tmp_path / "topics.yaml")])


def test_a_cluster_label_that_is_no_cluster_name_is_refused() -> None:
    text = KAFKA_TOPIC.replace("{strimzi.io/cluster: my-cluster}", "{strimzi.io/cluster: My_Cluster}")
    with pytest.raises(ManifestError, match="invalid cluster name 'My_Cluster'"):
        load_specs(text)
    assert load_specs(KAFKA_TOPIC)[0].cluster == "my-cluster"
