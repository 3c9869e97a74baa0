"""Day two on the real cluster (issue 30): a topic made with Kafka's own tools exported and adopted with no change,
configs changed with Kafka's own kafka-configs.sh set back or only reported as each spec says, and a paused topic
left alone through an RF change."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewTopic,
    ResourceType,
)

from events import ReplicasChangeState, conditions
from events.topics import FAUST_LEADER_SUFFIX
from services.adapters.admin.kafka import KafkaClusterAdmin
from services.local.kafka_cluster import LocalKafka
from services.local.stack import LocalStack
from tests.integration.harness import Ballast, spec
from tests.kafka.conftest import eventually
from tests.kafka.test_admin import produce
from tests.kafka.test_log_dirs_cli import ballast as cli

# A broker config that every topic inherits: Kafka describes it among a topic's configs, but it is not the topic's
# own, so an export must leave it out (and it is removed again after the test).
INHERITED = "log.cleaner.delete.retention.ms"  # the brokers' name for the topic config delete.retention.ms


def _broker_default(kafka: LocalKafka, value: str | None) -> None:
    """Set (or remove) the broker config on every broker, as `kafka-configs.sh --entity-type brokers` would."""
    admin = AdminClient({"bootstrap.servers": kafka.bootstrap_servers})
    operation = AlterConfigOpType.SET if value is not None else AlterConfigOpType.DELETE
    for broker in kafka.brokers:  # librdkafka takes one broker a call
        resource = ConfigResource(ResourceType.BROKER, str(broker), incremental_configs=[
            ConfigEntry(INHERITED, value or "", incremental_operation=operation)])
        for future in admin.incremental_alter_configs([resource]).values():
            future.result(timeout=30)


def _kafka_configs(kafka: LocalKafka, topic: str, setting: str) -> None:
    kafka.tool_output("kafka.admin.ConfigCommand", "--bootstrap-server", kafka.bootstrap_servers, "--alter",
                      "--entity-type", "topics", "--entity-name", topic, "--add-config", setting)


@pytest.mark.timeout(900)  # several kafka-configs.sh JVMs and resyncs: minutes on a loaded machine
async def test_export_adopt_drift_and_pause_on_the_real_cluster(kafka_stack: LocalStack, kafka: LocalKafka,
                                                                 ballast: Ballast, admin: KafkaClusterAdmin,
                                                                 name: str, tmp_path) -> None:
    legacy = f"{name}-legacy"
    made = AdminClient({"bootstrap.servers": kafka.bootstrap_servers})
    made.create_topics([NewTopic(legacy, 3, 2, config={"retention.ms": "3600000"})])[legacy].result(timeout=30)
    _broker_default(kafka, "86400001")
    try:
        async def inherited() -> bool | None:
            described = (await admin.describe_topics([legacy]))[legacy]
            return True if described is not None and described.config.get("delete.retention.ms") == "86400001" \
                else None

        await eventually(inherited, "the broker default described among the topic's configs", timeout_s=30)
        exported = cli(kafka_stack, "export", legacy)
        (document,) = yaml.safe_load_all(exported.stdout)
        assert document == {"name": legacy, "partitions": 3, "replicas": 2, "config": {"retention.ms": "3600000"},
                            "adopt": True}
    finally:
        _broker_default(kafka, None)
    # The services' own faust topics (their leader election) are on this cluster, which is also their bus: never
    # listed for adoption (issue 56, defect 4: once adopted, a --prune could delete them).
    faust_topics = {t for t in await admin.list_topics() if t.endswith(FAUST_LEADER_SUFFIX)}
    assert "ballast-topic-reconciler" + FAUST_LEADER_SUFFIX in faust_topics
    unmanaged = cli(kafka_stack, "status", "--unmanaged").stdout.split()
    assert legacy in unmanaged and not faust_topics & set(unmanaged), unmanaged
    assert not faust_topics & {d["name"] for d in yaml.safe_load_all(cli(kafka_stack, "export").stdout)}
    manifest = tmp_path / "adopted.yaml"
    manifest.write_text(exported.stdout)
    assert json.loads(cli(kafka_stack, "diff", "-f", str(manifest), "-o", "json", check=False).stdout)["changes"] == []
    before = (await admin.describe_topics([legacy]))[legacy]
    cli(kafka_stack, "apply", "-f", str(manifest), "--wait", "--timeout", "120")
    ballast.watcher.wait_status(legacy, lambda s: s.origin == "adopted" and s.ready, "adopted")
    after = (await admin.describe_topics([legacy]))[legacy]
    assert [p.replicas for p in after.partitions] == [p.replicas for p in before.partitions]
    assert after.own_config == {"retention.ms": "3600000"}

    # kafka-configs.sh on an adopted topic (its spec says correct, the default) and on one whose spec only reports.
    reported = f"{name}-reported"
    ballast.apply(spec(reported, 2, partitions=1, retention_ms="3600000").model_copy(update={"drift": "report"}))
    ballast.watcher.wait_rf(reported, 2)
    _kafka_configs(kafka, legacy, "retention.ms=1000")
    _kafka_configs(kafka, reported, "retention.ms=1000")
    corrected = ballast.watcher.wait_status(
        legacy, lambda s: (c := s.condition(conditions.DRIFT)) is not None and c.reason == "Corrected", "corrected")
    assert "retention.ms=1000 (spec 3600000)" in corrected.condition(conditions.DRIFT).message

    async def set_back() -> bool | None:
        return True if (await admin.describe_topics([legacy]))[legacy].config.get("retention.ms") == "3600000" \
            else None

    await eventually(set_back, "retention.ms set back")
    left = ballast.watcher.wait_status(
        reported, lambda s: (c := s.condition(conditions.DRIFT)) is not None and c.reason == "Reported", "reported")
    assert left.condition(conditions.DRIFT).message.endswith("left as it is (drift: report)")
    assert (await admin.describe_topics([reported]))[reported].config["retention.ms"] == "1000"

    # Paused, an RF change in the spec is left alone: the status of the paused spec says so and shows no change.
    generation = ballast.watcher.latest[legacy].generation
    ballast.apply(spec(legacy, 3, partitions=3, retention_ms="3600000").model_copy(update={"paused": True,
                                                                                           "adopt": True}))
    paused = ballast.watcher.wait_status(legacy, lambda s: s.generation > generation and s.condition(
        conditions.RECONCILIATION_PAUSED) is not None, "paused")
    assert paused.replicas_change is None and paused.replicas == 2
    assert (await admin.describe_topics([legacy]))[legacy].replication_factor == 2


@pytest.mark.timeout(600)
async def test_a_topic_in_the_middle_of_a_reassignment_is_not_drifted(kafka: LocalKafka, ballast: Ballast,
                                                                       admin: KafkaClusterAdmin, name: str) -> None:
    """Issue 56: a move lists a partition's old and new replicas together, so an RF 2 topic moved to two other
    brokers shows four replicas until the copy ends. That is not a change made outside Ballast: no Drift, no
    replication-factor change asked for (which would alter the topic in the middle of the move), and the status
    says why the count differs. Here the move is another tool's (a plain AlterPartitionReassignments), held in
    flight by a 10 kB/s throttle, then let finish."""
    ballast.apply(spec(name, replicas=2, partitions=1))
    ballast.watcher.wait_rf(name, 2)
    old = (await admin.describe_topics([name]))[name].partitions[0].replicas
    new = [b for b in sorted(kafka.brokers) if b not in old][:2]
    produce(kafka, name, 1, 4000)  # about 4 MB: 400 s to copy at the throttle
    throttle = {"leader.replication.throttled.rate": "10000", "follower.replication.throttled.rate": "10000"}
    for broker in kafka.brokers:
        await admin.alter_broker_configs(broker, throttle)
    await admin.alter_configs(name, {"leader.replication.throttled.replicas": ",".join(f"0:{b}" for b in old),
                                     "follower.replication.throttled.replicas": ",".join(f"0:{b}" for b in new)})
    # Only what the topic's statuses say from the move on counts: on the shared cluster a broker another test added
    # and took away is still an observed one, and a creation placed over it fills its placeholder with a
    # replication-factor change of its own before this point.
    before_the_move = len(ballast.watcher.history[name])
    try:
        await admin.reassign_partitions(name, {0: new})
        moving = ballast.watcher.wait_status(
            name, lambda s: s.condition(conditions.PARTITIONS_MOVING) is not None, "the move said in the status")
        assert moving.ready and moving.replicas == 4
        assert "1 of 1 partition(s) are being reassigned" in moving.condition(conditions.PARTITIONS_MOVING).message
        assert [m.partition for m in await admin.list_reassignments([name])] == [0], "the move is still in flight"
    finally:
        for broker in kafka.brokers:
            await admin.alter_broker_configs(broker, dict.fromkeys(throttle))
        await admin.alter_configs(name, {"leader.replication.throttled.replicas": None,
                                         "follower.replication.throttled.replicas": None})
    done = ballast.watcher.wait_status(
        name, lambda s: s.condition(conditions.PARTITIONS_MOVING) is None and s.replicas == 2, "the move's end seen",
        timeout=300)
    assert done.ready
    assert [p.replicas for p in (await admin.describe_topics([name]))[name].partitions] == [tuple(new)]
    history = ballast.watcher.history[name]
    assert not [s for s in history if s.condition(conditions.DRIFT) is not None], "a move read as drift"
    asked = [s for s in history[before_the_move:]
             if s.replicas_change is not None and s.replicas_change.state != ReplicasChangeState.COMPLETED]
    assert not asked, f"a replication-factor change asked for mid-move: {asked}"


@pytest.mark.timeout(600)
async def test_kafkatopics_from_kubectl_adopt_a_strimzi_managed_cluster_with_nothing_moved(
        kafka_stack: LocalStack, kafka: LocalKafka, ballast: Ballast, admin: KafkaClusterAdmin, name: str,
        tmp_path) -> None:
    """Issue 56, Strimzi's users at home (docs/strimzi.md): topics as Strimzi's Topic Operator made them (one from a
    KafkaTopic that left partitions and replicas to the cluster), then `kubectl get kafkatopics -o yaml` as it prints
    it, applied with --adopt: diff shows nothing for the cluster, and after the apply nothing has moved."""
    orders, payments = f"{name}-orders", f"{name}.Payments_EU"
    made = AdminClient({"bootstrap.servers": kafka.bootstrap_servers})
    futures = made.create_topics([
        NewTopic(orders, 3, 3, config={"retention.ms": "604800000", "min.insync.replicas": "2"}),
        NewTopic(payments, config={"cleanup.policy": "compact"})])  # the brokers' defaults, as Strimzi asks
    for future in futures.values():
        future.result(timeout=30)
    manifest = tmp_path / "kafkatopics.yaml"
    manifest.write_text((Path(__file__).parents[1] / "data" / "kafkatopics-list.yaml").read_text()
                        .replace("{prefix}", name))

    async def described() -> dict[str, tuple[tuple[tuple[int, ...], ...], dict[str, str]]]:
        found = await admin.describe_topics([orders, payments])
        return {t: (tuple(p.replicas for p in d.partitions), d.own_config) for t, d in found.items() if d is not None}

    before = await eventually(lambda: _both(described, 2), "both topics described")
    diff = cli(kafka_stack, "diff", "-f", str(manifest), "--adopt", "-o", "json", check=False)
    plans = {d["topic"]: d for d in map(json.loads, diff.stdout.splitlines())}
    assert diff.returncode == 1 and set(plans) == {orders, payments}, diff.stdout + diff.stderr
    for plan in plans.values():
        assert plan["changes"] == [] and plan["specChanges"] == [
            "added: Ballast reconciles this existing topic from now on"], plan
    cli(kafka_stack, "apply", "-f", str(manifest), "--adopt", "--wait", "--timeout", "240")
    for topic in (orders, payments):
        status = ballast.watcher.wait_status(topic, lambda s: s.ready and s.origin == "adopted", "adopted")
        assert not status.conditions[1:], status.conditions  # Ready alone: no drift, no warning
    # A status asked for by the KafkaTopic's metadata.name (the topic's own name is another).
    shown = json.loads(cli(kafka_stack, "status", f"{name}-payments-eu", "-o", "json").stdout)
    assert shown["topic"] == payments and shown["resourceName"] == f"{name}-payments-eu"
    assert await described() == before, "something moved or changed"
    again = cli(kafka_stack, "diff", "-f", str(manifest), "--adopt", "-o", "json", check=False)
    assert again.returncode == 0, again.stdout


async def _both(described, count: int):  # noqa: ANN001, ANN202
    found = await described()
    return found if len(found) == count else None
