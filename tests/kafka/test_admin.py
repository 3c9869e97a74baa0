"""Every method of the cluster-admin port on real Kafka brokers (kafka-python's KafkaAdminClient underneath)."""

from __future__ import annotations

from pathlib import Path

import pytest
from confluent_kafka import Producer
from kafka import errors as kafka_errors
from kafka.admin import KafkaAdminClient

from services.adapters.admin import (AdminError, NewTopic, OperationRefused, TopicAlreadyExists, TopicDefaults,
                                   UnknownTopic)
from services.adapters.admin import kafka as kafka_admin
from services.adapters.admin.kafka import KafkaClusterAdmin
from services.local.kafka_cluster import DEFAULT_RACKS, LocalKafka, class_archive
from tests.integration.harness import Ballast
from tests.kafka.conftest import decommission, eventually, kill_when_quiet

RACKS = dict(zip(range(1, 5), DEFAULT_RACKS, strict=True))


def produce(kafka: LocalKafka, topic: str, partitions: int, records: int, size: int = 1024) -> None:
    producer = Producer({"bootstrap.servers": kafka.bootstrap_servers, "linger.ms": 20, "log_level": 0})
    for i in range(records):
        producer.produce(topic, value=b"x" * size, partition=i % partitions)
        if i % 1000 == 0:
            producer.poll(0)
    assert producer.flush(60) == 0


def test_every_node_maps_the_archive_of_kafkas_classes(kafka: LocalKafka) -> None:
    """`make kafka` archives Kafka's classes (services.local.kafka_classes) and every node maps the archive as it
    starts. An archive the JVM refuses (another JDK, other jars, another class path) is ignored without a word, so
    only this shows it."""
    archive = class_archive(kafka.lib)
    assert archive.is_file(), f"no {archive}: `make kafka` makes it"
    nodes = [node for node in (kafka.controller, *kafka.brokers.values()) if node.running]
    assert nodes
    for node in nodes:
        assert node.process is not None
        mapped = Path(f"/proc/{node.process.pid}/maps").read_text()
        assert str(archive) in mapped, f"Kafka node {node.id} did not map {archive}"


async def test_brokers_have_their_racks_and_fenced_ones_are_not_alive(admin: KafkaClusterAdmin,
                                                                     kafka: LocalKafka) -> None:
    brokers = await admin.brokers()
    assert {b.id: b.rack for b in brokers} == RACKS
    assert all(b.alive for b in brokers)

    kafka.stop_broker(3)
    stopped = await eventually(lambda: _broker(admin, 3, alive=False), "broker 3 fenced")
    assert stopped.rack == "/dc2/r1"  # a stopped broker stays registered, with its rack
    kafka.start_broker(3)
    await eventually(lambda: _broker(admin, 3, alive=True), "broker 3 back")


async def _broker(admin: KafkaClusterAdmin, broker: int, *, alive: bool):  # noqa: ANN202
    found = [b for b in await admin.brokers() if b.id == broker and b.alive == alive]
    return found[0] if found else None


async def test_create_with_an_assignment_and_describe_replicas_racks_and_log_dirs(admin: KafkaClusterAdmin,
                                                                                kafka: LocalKafka, name: str) -> None:
    await admin.create_topic(name, 3, 2, {"retention.ms": "3600000"}, assignment=[[1, 3], [4, 2], [2, 1]])
    produce(kafka, name, 3, 300)
    described = await eventually(lambda: _sized(admin, name), "sizes of the new topic's replicas")

    assert [p.replicas for p in described.partitions] == [(1, 3), (4, 2), (2, 1)]
    assignments = await admin.assignments()  # what placement counts: the same, from the metadata alone
    assert assignments[name] == [[1, 3], [4, 2], [2, 1]] and not any(t.startswith("__") for t in assignments)
    assert [p.leader for p in described.partitions] == [1, 4, 2]  # the first replica leads
    assert [set(p.isr) for p in described.partitions] == [{1, 3}, {4, 2}, {2, 1}]
    assert described.config["retention.ms"] == "3600000"
    for partition in described.partitions:
        for replica in partition.replica_info:
            assert replica.rack == RACKS[replica.broker]
            # Each replica lives in one of its own broker's two data directories.
            assert Path(replica.log_dir) in kafka.log_dirs(replica.broker)
            assert replica.size_bytes > 100 * 1024


async def _sized(admin: KafkaClusterAdmin, name: str):  # noqa: ANN202
    described = (await admin.describe_topics([name]))[name]
    if described and all(r.size_bytes for p in described.partitions for r in p.replica_info):
        return described
    return None


async def test_the_topic_defaults_are_the_brokers_settings(admin: KafkaClusterAdmin) -> None:
    """What a KafkaTopic without partitions or replicas is created with (the cluster's num.partitions is 2 here,
    tests/kafka/conftest.py; its default.replication.factor Kafka's own)."""
    assert await admin.topic_defaults() == TopicDefaults(partitions=2, replication_factor=1)


async def test_add_partitions_with_an_assignment(admin: KafkaClusterAdmin, name: str) -> None:
    await admin.create_topic(name, 2, 2, assignment=[[1, 2], [3, 4]])
    await admin.create_partitions(name, 4, assignment=[[4, 1], [2, 3]])
    described = await eventually(lambda: _partitions(admin, name, 4), "4 partitions")
    assert [p.replicas for p in described.partitions] == [(1, 2), (3, 4), (4, 1), (2, 3)]


async def _partitions(admin: KafkaClusterAdmin, name: str, count: int):  # noqa: ANN202
    described = (await admin.describe_topics([name]))[name]
    return described if described and described.partition_count == count else None


async def test_configs_set_deleted_and_refused_as_kafka_refuses_them(admin: KafkaClusterAdmin, name: str) -> None:
    await admin.create_topic(name, 1, 3, {"retention.ms": "3600000"})
    await admin.alter_configs(name, {"retention.ms": None, "cleanup.policy": "compact"})

    async def altered() -> dict[str, str] | None:
        # The broker that answers DescribeConfigs may apply the change a moment after the controller took it.
        config = (await admin.describe_topics([name]))[name].config
        return config if config.get("cleanup.policy") == "compact" else None

    config = await eventually(altered, "the altered configs described")
    assert "retention.ms" not in config  # back to the default, so no longer listed

    with pytest.raises(AdminError, match="Invalid value forever for configuration retention.ms"):
        await admin.alter_configs(name, {"retention.ms": "forever"})
    with pytest.raises(AdminError, match="Unknown topic config name: no.such.key"):
        await admin.alter_configs(name, {"no.such.key": "1"})


async def test_delete_and_the_errors_for_missing_and_existing_topics(admin: KafkaClusterAdmin, name: str) -> None:
    await admin.create_topic(name, 1, 1)
    with pytest.raises(TopicAlreadyExists, match="already exists"):
        await admin.create_topic(name, 1, 1)
    await admin.delete_topic(name)
    await eventually(lambda: _gone(admin, name), "the topic gone")
    with pytest.raises(UnknownTopic):
        await admin.delete_topic(name)
    assert name not in await admin.list_topics()


async def _gone(admin: KafkaClusterAdmin, name: str) -> bool:
    return (await admin.describe_topics([name]))[name] is None


async def test_reassignment_listed_while_throttled_then_cancelled_then_completed(
        admin: KafkaClusterAdmin, kafka: LocalKafka, name: str) -> None:
    await admin.create_topic(name, 1, 2, assignment=[[1, 2]])
    produce(kafka, name, 1, 4000)  # about 4 MB to copy
    # 10 kB/s: the copy to the new replicas cannot finish while the test looks at it.
    throttle = {"leader.replication.throttled.rate": "10000", "follower.replication.throttled.rate": "10000"}
    for broker in RACKS:
        await admin.alter_broker_configs(broker, throttle)
    await admin.alter_configs(name, {"leader.replication.throttled.replicas": "0:1,0:2",
                                     "follower.replication.throttled.replicas": "0:3,0:4"})
    try:
        await eventually(lambda: _broker_config(admin, 1, throttle), "the throttle on broker 1")
        await admin.reassign_partitions(name, {0: [3, 4]})
        moving = await admin.list_reassignments([name])
        assert [(m.partition, set(m.adding), set(m.removing)) for m in moving] == [(0, {3, 4}, {1, 2})]
        assert set(moving[0].replicas) == {1, 2, 3, 4}  # old and new replicas while it copies

        await admin.cancel_reassignments(name, [0])
        await eventually(lambda: _no_reassignment(admin, name), "the reassignment cancelled")
        await eventually(lambda: _replicas(admin, name, (1, 2)), "the replicas it had before")
    finally:
        for broker in RACKS:
            await admin.alter_broker_configs(broker, dict.fromkeys(throttle))
        await admin.alter_configs(name, {"leader.replication.throttled.replicas": None,
                                         "follower.replication.throttled.replicas": None})
    assert await eventually(lambda: _broker_config(admin, 1, {}), "the throttle cleared") == {}
    # The controller commits a config change before it answers; the broker a describe reaches applies it moments
    # later (seen on a loaded machine: the old throttled-replica lists described just after their removal).
    await eventually(lambda: _topic_throttles(admin, name, {}), "the throttled-replica lists cleared")

    await admin.reassign_partitions(name, {0: [3, 4]})
    await eventually(lambda: _no_reassignment(admin, name), "the reassignment done", timeout_s=90)
    # The brokers' metadata follows the controller's within moments.
    moved = await eventually(lambda: _replicas(admin, name, (3, 4)), "replicas 3 and 4 described")
    assert set(moved.isr) == {3, 4}


async def _broker_config(admin: KafkaClusterAdmin, broker: int, wanted: dict[str, str]):  # noqa: ANN202
    configs = await admin.broker_configs(broker)
    throttles = {k: v for k, v in configs.items() if "throttled" in k}
    return throttles if throttles == wanted else None


async def _topic_throttles(admin: KafkaClusterAdmin, name: str, wanted: dict[str, str]) -> bool:
    config = (await admin.describe_topics([name]))[name].config
    return {k: v for k, v in config.items() if "throttled" in k} == wanted


async def _no_reassignment(admin: KafkaClusterAdmin, name: str) -> bool:
    return not await admin.list_reassignments([name])


async def test_preferred_leader_election_after_a_reorder(admin: KafkaClusterAdmin, name: str) -> None:
    await admin.create_topic(name, 1, 2, assignment=[[1, 2]])
    await admin.reassign_partitions(name, {0: [2, 1]})  # the same replicas, broker 2 preferred now
    reordered = await eventually(lambda: _replicas(admin, name, (2, 1)), "the reorder")
    assert reordered.leader == 1  # a reassignment keeps a leader that stays among the replicas
    await admin.elect_preferred_leaders(name)
    elected = await eventually(lambda: _replicas(admin, name, (2, 1), leader=2), "broker 2 leading")
    assert elected.leader == 2


async def _replicas(admin: KafkaClusterAdmin, name: str, replicas: tuple[int, ...], leader: int | None = None):  # noqa: ANN202
    partition = (await admin.describe_topics([name]))[name].partitions[0]
    if partition.replicas == replicas and (leader is None or partition.leader == leader):
        return partition
    return None


async def test_replica_moved_between_log_dirs_and_log_dirs_described(admin: KafkaClusterAdmin, kafka: LocalKafka,
                                                                     name: str) -> None:
    await admin.create_topic(name, 1, 1, assignment=[[2]])
    produce(kafka, name, 1, 500)
    before = (await eventually(lambda: _sized(admin, name), "the replica's size")).partitions[0].replica_info[0]
    other = next(str(d) for d in kafka.log_dirs(2) if str(d) != before.log_dir)

    await admin.alter_replica_log_dirs(name, {(0, 2): other})
    after = await eventually(lambda: _in_dir(admin, name, other), "the replica in the other directory")
    assert after.size_bytes == before.size_bytes and after.future_log_dir is None

    dirs = await admin.describe_log_dirs([2])
    assert sorted(d.path for d in dirs) == sorted(str(d) for d in kafka.log_dirs(2))
    assert all(d.online and d.total_bytes and d.usable_bytes for d in dirs)
    holding = [d for d in dirs if any(r.topic == name for r in d.replicas)]
    assert [d.path for d in holding] == [other]
    assert holding[0].size_bytes >= after.size_bytes


async def test_topics_created_together_with_their_replicas_in_the_directories_chosen(
        admin: KafkaClusterAdmin, kafka: LocalKafka, name: str) -> None:
    """Issue 52: one CreateTopics for many topics, each replica created in the directory chosen for it (sent ahead
    with AlterReplicaLogDirs, which a broker records for a replica it does not host yet), so nothing moves between
    directories after; each topic's own error beside the others' success."""
    second = {b: str(kafka.log_dirs(b)[1]) for b in (1, 2, 3)}
    first = {b: str(kafka.log_dirs(b)[0]) for b in (1, 2, 3)}
    await admin.create_topic(f"{name}-taken", 1, 1)
    outcome = await admin.create_topics([
        NewTopic(f"{name}-a", ((1, 2), (2, 3)), {"retention.ms": "60000"},
                 {(0, 1): second[1], (0, 2): second[2], (1, 2): first[2], (1, 3): second[3]}),
        NewTopic(f"{name}-b", ((3, 1),), {}, {(0, 3): first[3], (0, 1): second[1]}),
        NewTopic(f"{name}-taken", ((1,),)),
        NewTopic(f"{name}-bad", ((1,),), {"retention.ms": "forever"}),
    ])
    assert outcome[f"{name}-a"] is None and outcome[f"{name}-b"] is None
    assert isinstance(outcome[f"{name}-taken"], TopicAlreadyExists)
    assert type(outcome[f"{name}-bad"]) is OperationRefused and "retention.ms" in str(outcome[f"{name}-bad"])

    async def placed() -> dict | None:
        found = await admin.describe_topics([f"{name}-a", f"{name}-b"])
        dirs = {(t, p.id, r.broker): (r.log_dir, r.future_log_dir) for t, d in found.items() if d is not None
                for p in d.partitions for r in p.replica_info}
        return dirs if len(dirs) == 6 and all(d for d, _ in dirs.values()) else None

    assert await eventually(placed, "every replica's directory described") == {
        (f"{name}-a", 0, 1): (second[1], None), (f"{name}-a", 0, 2): (second[2], None),
        (f"{name}-a", 1, 2): (first[2], None), (f"{name}-a", 1, 3): (second[3], None),
        (f"{name}-b", 0, 3): (first[3], None), (f"{name}-b", 0, 1): (second[1], None)}
    assert (await admin.describe_topics([f"{name}-a"]))[f"{name}-a"].own_config == {"retention.ms": "60000"}


async def test_the_read_after_a_creation_takes_the_configs_createtopics_answered(
        admin: KafkaClusterAdmin, kafka: LocalKafka, name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 52: the describe right after a creation takes the topics' configs from the CreateTopics answer (v5+)
    instead of a DescribeConfigs of thousands of topics, and they read exactly as a DescribeConfigs says them: the
    configs that differ from Kafka's defaults, and which of them are set on the topic."""
    asked: list[str] = []
    describe_configs = KafkaAdminClient.describe_configs

    def counted(client: KafkaAdminClient, resources, *args, **kwargs):  # noqa: ANN001, ANN202
        asked.extend(r.name for r in resources)
        return describe_configs(client, resources, *args, **kwargs)

    monkeypatch.setattr(KafkaAdminClient, "describe_configs", counted)
    # However late a broker shows them on a crowded machine: how long the answer stands is not what is tested here.
    monkeypatch.setattr(kafka_admin, "CREATED_CONFIGS_FRESH_S", 600.0)
    topics = {f"{name}-compact": {"cleanup.policy": "compact", "min.compaction.lag.ms": "1000"},
              f"{name}-plain": {}, f"{name}-retained": {"retention.ms": "60000"}}
    outcome = await admin.create_topics([NewTopic(n, ((1, 2), (2, 3)), config) for n, config in topics.items()])
    assert outcome == dict.fromkeys(topics)

    async def shown(client: KafkaClusterAdmin) -> dict | None:
        """Each read asks the least loaded broker, which may show a topic created a moment ago as absent: a topic
        takes the configs answered on the first read that shows it."""
        found = await client.describe_topics(sorted(topics), replica_dirs=False)
        return found if all(found.values()) else None

    just_created = await eventually(lambda: shown(admin), "the topics just created shown")
    assert asked == []

    fresh = KafkaClusterAdmin({"bootstrap_servers": kafka.bootstrap_servers}, timeout_s=15)
    try:
        described = await eventually(lambda: shown(fresh), "the topics shown to a fresh client")
    finally:
        await fresh.aclose()
    assert sorted(set(asked)) == sorted(topics)
    for topic in topics:
        assert (just_created[topic].config, just_created[topic].overrides) == (
            described[topic].config, described[topic].overrides)
        assert just_created[topic].own_config == topics[topic]
    # Read once: the next describe asks the cluster, where the configs may have changed since.
    await admin.alter_configs(f"{name}-plain", {"retention.ms": "120000"})
    asked.clear()

    async def altered() -> bool:
        again = (await admin.describe_topics([f"{name}-plain"], replica_dirs=False))[f"{name}-plain"]
        return again is not None and again.own_config == {"retention.ms": "120000"}

    await eventually(altered, "the altered config read from the cluster")
    assert asked and set(asked) == {f"{name}-plain"}


async def test_a_broker_that_answers_the_directories_late_is_asked_again_before_the_creation(
        admin: KafkaClusterAdmin, kafka: LocalKafka, name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 52: a broker creating thousands of logs answers AlterReplicaLogDirs only once it is done, which took more
    than the request's timeout on a busy machine (the benchmark's 3,000 topics). Its answer timing out is asked again,
    and the topics are created only once it has recorded the directories: each replica is where it was chosen."""
    client = admin._admin()
    real = client.alter_replica_log_dirs
    asked: list[int] = []

    def late_once(wanted, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN202
        broker = next(iter(wanted)).broker_id
        asked.append(broker)
        if broker == 1 and asked.count(1) == 1:
            raise kafka_errors.RequestTimedOutError("Request timed out after 15000 ms")  # as kafka-python says it
        return real(wanted, *args, **kwargs)

    monkeypatch.setattr(client, "alter_replica_log_dirs", late_once)
    second = {b: str(kafka.log_dirs(b)[1]) for b in (1, 2)}
    outcome = await admin.create_topics([NewTopic(name, ((1, 2),), {}, {(0, 1): second[1], (0, 2): second[2]})])
    assert outcome == {name: None}
    assert sorted(asked) == [1, 1, 2]

    async def placed() -> dict | None:
        found = (await admin.describe_topics([name]))[name]
        dirs = {r.broker: r.log_dir for r in found.partitions[0].replica_info} if found is not None else {}
        return dirs if len(dirs) == 2 and all(dirs.values()) else None

    assert await eventually(placed, "both replicas' directories described") == second


async def test_a_description_without_the_replicas_directories_asks_no_broker_for_them(
        admin: KafkaClusterAdmin, kafka: LocalKafka, name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 52: the topic reconciler's descriptions (every look, every read after a creation) leave out where each
    replica is, which its statuses never show: no DescribeLogDirs, which makes every broker go through all its logs;
    with them, only the described topics' partitions are asked for."""
    await admin.create_topic(name, 2, 2, config={"retention.ms": "60000"})
    client = admin._admin()
    real = client.describe_log_dirs
    asked: list[object] = []

    def counted(topic_partitions=None, brokers=None):  # noqa: ANN001, ANN202
        asked.append(topic_partitions)
        return real(topic_partitions, brokers=brokers)

    monkeypatch.setattr(client, "describe_log_dirs", counted)

    async def bare():  # noqa: ANN202 -- once the broker answering shows the new topic's config
        found = await admin.describe_topics([name, f"{name}-none"], replica_dirs=False)
        return found if found[name] is not None and found[name].own_config else None

    found = await eventually(bare, "the topic described with its config")
    assert found[f"{name}-none"] is None and not asked
    described = found[name]
    assert described.partition_count == 2 and described.own_config == {"retention.ms": "60000"}
    assert all(len(p.replicas) == 2 and p.leader is not None for p in described.partitions)
    assert all(r.log_dir is None and r.rack is not None for p in described.partitions for r in p.replica_info)

    async def with_dirs():  # noqa: ANN202
        found = (await admin.describe_topics([name]))[name]
        return found if all(r.log_dir for p in found.partitions for r in p.replica_info) else None

    assert await eventually(with_dirs, "every replica's directory described")
    assert asked and all({t: sorted(ps) for t, ps in request.items()} == {name: [0, 1]} for request in asked)


async def _in_dir(admin: KafkaClusterAdmin, name: str, path: str):  # noqa: ANN202
    replica = (await admin.describe_topics([name]))[name].partitions[0].replica_info[0]
    return replica if replica.log_dir == path and replica.future_log_dir is None else None


async def test_an_added_broker_with_a_failed_log_dir_then_decommissioned(admin: KafkaClusterAdmin,
                                                                         kafka: LocalKafka, ballast: Ballast,
                                                                         name: str) -> None:
    """Kafka keeps a broker with a failed disk serving from its other one (KIP-112); describe says which failed. The
    adapter's client read the cluster before the broker joined, as a service's long-lived one has: its metadata does
    not name the new broker, and what is sent to that broker still goes. (A load-50 run failed with
    'UnknownBrokerIdError: 5' the same way, most likely with a client that read its metadata from a broker that had
    not learnt of the new one yet.)"""
    await admin.brokers()  # the client reads the cluster now
    broker = kafka.add_broker("/dc1/r1")
    try:
        # Every broker learns of the new one from the metadata log, each at its own pace: the one that answers here
        # need not be the one add_broker asked.
        assert (await eventually(lambda: _broker(admin, broker, alive=True), "the new broker alive")).rack == "/dc1/r1"
        first, second = kafka.log_dirs(broker)
        await admin.create_topic(name, 2, 2, assignment=[[broker, 1], [broker, 2]])
        await admin.alter_replica_log_dirs(name, {(0, broker): str(first), (1, broker): str(second)})
        await eventually(lambda: _in_dir_of(admin, name, 0, broker, str(first)), "partition 0 on the first disk")
        await eventually(lambda: _in_dir_of(admin, name, 1, broker, str(second)), "partition 1 on the second disk")

        kafka.fail_log_dir(broker, 0)
        dirs = {d.path: d for d in await admin.describe_log_dirs([broker])}
        assert not dirs[str(first)].online and dirs[str(first)].error == "KafkaStorageError"
        assert dirs[str(second)].online
        # The replica on the failed disk leaves the ISR; the one on the healthy disk stays in sync. The broker tells
        # the controller a replica's new directory after the move (AssignReplicasToDirs, asynchronously): a disk that
        # fails before the controller has heard takes that replica out of the ISR too (seen once, on a loaded
        # machine), and the leader takes it back in once the controller has heard (its next ISR expansion).
        await eventually(lambda: _isr_without(admin, name, 0, broker), "the failed replica out of sync")
        assert await eventually(lambda: _isr_with(admin, name, 1, broker), "the replica on the healthy disk in sync")
    finally:
        await admin.delete_topic(name)
        decommission(kafka, ballast.settings.bus, broker)
    assert await eventually(lambda: _unregistered(admin, broker), "the broker unregistered")


async def _in_dir_of(admin: KafkaClusterAdmin, name: str, partition: int, broker: int, path: str) -> bool:
    info = (await admin.describe_topics([name]))[name].partitions[partition].replica_info
    return any(r.broker == broker and r.log_dir == path and r.future_log_dir is None for r in info)


async def _isr_without(admin: KafkaClusterAdmin, name: str, partition: int, broker: int):  # noqa: ANN202
    partitions = (await admin.describe_topics([name]))[name].partitions
    return partitions if broker not in partitions[partition].isr else None


async def _isr_with(admin: KafkaClusterAdmin, name: str, partition: int, broker: int):  # noqa: ANN202
    partitions = (await admin.describe_topics([name]))[name].partitions
    return partitions if broker in partitions[partition].isr else None


async def _unregistered(admin: KafkaClusterAdmin, broker: int) -> bool:
    return broker not in {b.id for b in await admin.brokers()}


async def test_the_adapter_survives_a_broker_it_talks_to_being_killed(admin: KafkaClusterAdmin,
                                                                      kafka: LocalKafka) -> None:
    assert len(await admin.brokers()) == 4
    await kill_when_quiet(kafka, admin, 1)
    # The client reconnects to the other bootstrap servers.
    await eventually(lambda: _broker(admin, 1, alive=False), "broker 1 fenced")
    kafka.start_broker(1)
    await eventually(lambda: _broker(admin, 1, alive=True), "broker 1 back")
