"""The real-Kafka backend's pure parts: the model built from what the cluster reports, rates from size growth, and
the executor's per-broker concurrency."""

from __future__ import annotations

from services.cluster_sim.kafka_backend import MB, snapshot
from services.cluster_sim.kafka_execution import KafkaExecution
from services.cluster_sim.load import MeasuredLoad
from services.cluster_sim.model import Cluster, ReplicaMove
from services.common.admin.port import BrokerInfo, LogDirInfo, PartitionInfo, ReplicaInfo, TopicDescription


def _topic(name: str, sizes: dict[int, int | None], isr: tuple[int, ...] = (1, 2)) -> TopicDescription:
    replicas = tuple(sizes)
    info = tuple(ReplicaInfo(broker=b, log_dir=f"/d{b}/data-0" if size is not None else None, size_bytes=size)
                 for b, size in sizes.items())
    return TopicDescription(name=name, partitions=(PartitionInfo(0, replicas, replicas[0], isr, info),),
                            config={"retention.ms": "1000"})


def test_snapshot_mirrors_the_cluster_in_place_and_keeps_what_a_dead_broker_cannot_say() -> None:
    cluster = Cluster([])
    same = cluster.brokers
    brokers = [BrokerInfo(1, "/dc1/r1", True), BrokerInfo(2, "/dc1/r2", True)]
    dirs = [LogDirInfo(1, "/d1/data-0"), LogDirInfo(1, "/d1/data-1", error="KafkaStorageError"),
            LogDirInfo(2, "/d2/data-0"), LogDirInfo(2, "/d2/data-1")]
    sizes = snapshot(cluster, brokers, {"t": _topic("t", {1: 3 * MB, 2: 2 * MB})}, dirs)
    assert cluster.brokers is same, "the HTTP handlers hold this dict"
    assert sizes == {("t", 0): 3.0}
    assert cluster.brokers[1].offline_log_dirs == ("/d1/data-1",)
    partition = cluster.topics["t"].partitions[0]
    assert (partition.replicas, partition.leader, partition.in_sync, partition.size_mb) == ([1, 2], 1, [1, 2], 3.0)
    assert partition.log_dirs == {1: "/d1/data-0", 2: "/d2/data-0"}
    assert cluster.topics["t"].config == {"retention.ms": "1000"}

    # Broker 2 dies: fenced, no log dirs described, its replica out of sync and without a size.
    snapshot(cluster, [BrokerInfo(1, "/dc1/r1", True), BrokerInfo(2, "/dc1/r2", False)],
             {"t": _topic("t", {1: None, 2: None}, isr=(1,))}, dirs[:2])
    assert not cluster.brokers[2].alive and cluster.brokers[2].log_dirs == ("/d2/data-0", "/d2/data-1")
    partition = cluster.topics["t"].partitions[0]
    assert partition.isr(cluster.alive_ids) == [1] and partition.size_mb == 3.0, "the last size known"


def test_measured_rates_come_from_size_growth_and_restart_when_a_log_shrinks() -> None:
    now = [0.0]
    cluster = Cluster([])
    load = MeasuredLoad(cluster, window_s=60, clock=lambda: now[0])
    assert load.rate_kb_s("t", 0) == 0.0
    for second, size in ((0, 10.0), (10, 11.0), (20, 12.0)):
        now[0] = second
        load.record({("t", 0): size})
    assert load.rate_kb_s("t", 0) == 2.0 * 1024 / 20
    now[0] = 30
    load.record({("t", 0): 1.0})  # retention deleted segments: no negative rate
    assert load.rate_kb_s("t", 0) == 0.0
    now[0] = 100
    load.record({("t", 0): 2.0})
    assert load.rate_kb_s("t", 0) == 0.0, "the window holds one sample: 70 s have passed"
    load.record({})
    assert load.rate_kb_s("t", 0) == 0.0, "a deleted partition is forgotten"


def test_executor_keeps_at_most_n_movements_per_broker_in_flight() -> None:
    moves = [ReplicaMove("t", i, (1, 2), (1, 3), 1.0) for i in range(4)] + [ReplicaMove("u", 0, (4, 5), (4, 6), 1.0)]
    execution = KafkaExecution(task_id="x", moves=moves, movements_per_broker=2)
    execution._pending = list(moves)
    first = execution._next_batch()
    assert [(m.topic, m.partition) for m in first] == [("t", 0), ("t", 1), ("u", 0)]
    for move in first:
        execution._in_flight[(move.topic, move.partition)] = move
    assert execution._next_batch() == [], "brokers 1, 2 and 3 are full"
    execution._in_flight.pop(("t", 0))
    assert [(m.topic, m.partition) for m in execution._next_batch()] == [("t", 2)]
