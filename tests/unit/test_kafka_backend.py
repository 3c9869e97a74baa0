"""The real-Kafka backend's pure parts: the model built from what the cluster reports, rates from size growth, and
the executor's per-broker concurrency; and its start, against a cluster that is not up yet."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

import pytest

from services.cluster_sim.executor import Executor
from services.cluster_sim.kafka_backend import MB, KafkaBackend, snapshot
from services.cluster_sim.kafka_execution import KafkaExecution
from services.cluster_sim.load import MeasuredLoad
from services.cluster_sim.model import Cluster, IntraBrokerMove, Proposal, ReplicaMove
from services.cluster_sim.tuning import SimTuning
from services.cluster_sim.user_tasks import UserTaskManager
from services.adapters.admin.port import (AdminError, BrokerInfo, ClusterUnavailable, LogDirInfo, LogDirReplica,
                                        OperationRefused, PartitionInfo, Reassignment, ReplicaInfo, TopicDescription)


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


class _MovingCluster:
    """Kafka as a killed Cruise Control left it: one reassignment still listed, then none."""

    def __init__(self) -> None:
        self.listed = 0
        self.altered: list[object] = []

    async def list_reassignments(self, names: list[str] | None = None) -> list[Reassignment]:
        self.listed += 1
        return [Reassignment("t", 0, (1, 2, 3), adding=(3,), removing=(2,))] if self.listed == 1 else []

    async def describe_topics(self, names: list[str]) -> dict[str, TopicDescription]:
        return {"t": TopicDescription(name="t", partitions=(),
                                      config={"leader.replication.throttled.replicas": "0:1,0:2,0:3"})}

    async def alter_broker_configs(self, broker: int, config: dict[str, str | None]) -> None:
        self.altered.append((broker, config))

    async def alter_configs(self, name: str, config: dict[str, str | None]) -> None:
        self.altered.append((name, config))


async def test_a_restart_leaves_the_throttles_of_the_execution_it_forgot() -> None:
    """The real Cruise Control clears throttles only in its executor's loop (``clearThrottles``): one that restarts
    forgets them, so the simulator's orphaned execution follows Kafka's reassignments and changes no config."""
    cluster = _MovingCluster()
    backend = KafkaBackend(cluster)  # type: ignore[arg-type]
    execution = KafkaExecution(task_id="x", moves=[ReplicaMove("t", 0, (1, 2), (1, 3), 1.0)], throttle_bytes_s=1000,
                               backend=backend, check_interval_s=0.001)
    execution._in_flight[("t", 0)] = execution.moves[0]
    execution._throttled_brokers.update({1, 2, 3})
    execution._throttled_replicas["t"] |= {"0:1", "0:2", "0:3"}
    await execution.finish_orphaned()
    assert cluster.listed == 2 and not execution._in_flight
    assert cluster.altered == [], "no throttle taken off: Cruise Control forgot it"


class _StartingCluster:
    """A cluster that is not up for its first ``down_for`` questions, then holds one broker and no topic."""

    def __init__(self, down_for: int, error: AdminError) -> None:
        self.down_for, self.error, self.asked = down_for, error, 0

    async def brokers(self) -> list[BrokerInfo]:
        self.asked += 1
        if self.asked <= self.down_for:
            raise self.error
        return [BrokerInfo(1, "/dc1/r1", True)]

    async def list_topics(self, include_internal: bool = False) -> dict[str, TopicDescription]:
        return {}

    async def describe_log_dirs(self, brokers: list[int] | None = None, *, replicas: bool = True) -> list[LogDirInfo]:
        return [LogDirInfo(1, "/d1/data-0")]

    async def aclose(self) -> None:
        pass


async def _started(cluster: _StartingCluster) -> KafkaBackend:
    backend = KafkaBackend(cluster,  # type: ignore[arg-type]
                           sync_interval_s=3600, first_wait_s=0.001, longest_wait_s=0.002)
    await backend.start()
    await backend.close()
    return backend


async def test_a_cluster_still_starting_is_waited_for_however_many_times_it_does_not_answer() -> None:
    cluster = _StartingCluster(down_for=50, error=ClusterUnavailable("no broker answered"))
    backend = await _started(cluster)
    assert cluster.asked == 51 and list(backend.cluster.brokers) == [1]


async def test_a_permanent_refusal_as_it_starts_is_raised_at_once() -> None:
    cluster = _StartingCluster(down_for=1, error=OperationRefused("not authorized"))
    with pytest.raises(OperationRefused):
        await _started(cluster)
    assert cluster.asked == 1


class _SlowCluster(_StartingCluster):
    """Up, then slow: once ``slow`` is set, a look at the brokers waits until ``answer`` is set."""

    def __init__(self) -> None:
        super().__init__(down_for=0, error=ClusterUnavailable("unused"))
        self.slow, self.answer = False, asyncio.Event()

    async def brokers(self) -> list[BrokerInfo]:
        if self.slow:
            await self.answer.wait()
            return [BrokerInfo(1, "/dc1/r1", True), BrokerInfo(2, "/dc1/r2", True)]
        return await super().brokers()


async def test_the_state_is_answered_from_the_last_model_while_kafka_is_slow_and_the_model_catches_up_after() -> None:
    """Cruise Control answers its state from the metadata it has; a fresh clone's run saw the compose stack's doctor
    find the simulator silent for 10 s while it waited on Kafka."""
    from services.cluster_sim.cruise_control import SimCruiseControl

    cluster = _SlowCluster()
    backend = KafkaBackend(cluster, sync_interval_s=3600)  # type: ignore[arg-type]
    await backend.start()
    try:
        cc = SimCruiseControl(backend)
        cluster.slow = True
        await asyncio.wait_for(cc.refresh_model(0.0, within_s=0.05), 5)
        assert list(backend.cluster.brokers) == [1], "answered from the last model"
        cluster.answer.set()
        await asyncio.wait_for(cc.refresh_model(0.0), 5)
        assert list(backend.cluster.brokers) == [1, 2]
    finally:
        cluster.answer.set()
        await backend.close()


class _FailingCluster(_MovingCluster):
    """Kafka that stops answering once a movement is handed to it (the rollback's own calls fail too), until it is
    ``back``."""

    back = False

    async def reassign_partitions(self, name: str, replicas: dict[int, list[int]]) -> None:
        pass

    async def list_reassignments(self, names: list[str] | None = None) -> list[Reassignment]:
        if self.back:
            return []
        raise ClusterUnavailable("no answer")

    async def cancel_reassignments(self, name: str, partitions: list[int]) -> None:
        raise ClusterUnavailable("no answer")

    async def brokers(self) -> list[BrokerInfo]:
        raise ClusterUnavailable("no answer")


async def test_an_execution_that_fails_on_its_way_out_ends_its_task_and_frees_the_executor() -> None:
    """Kafka stopped answering in the middle of an execution, and its rollback could not be asked either: the
    execution ends with the error (its task CompletedWithError), and the executor takes the next one. An error that
    escaped the execution kept the executor busy for good: its task InExecution for ever and every later execution
    refused as ongoing (what two fresh clones' runs showed: a drain, then an automatic rebalance, that never moved
    anything)."""
    tasks = UserTaskManager(SimpleNamespace(max_active_user_tasks=5, task_scanner_period_s=0.01, session_expiry_s=60))
    spawned: list[asyncio.Task[None]] = []

    def spawn(coro: Any) -> asyncio.Task[None]:
        spawned.append(asyncio.ensure_future(coro))
        return spawned[-1]

    cluster = _FailingCluster()
    executor = Executor(KafkaBackend(cluster),  # type: ignore[arg-type]
                        tuning=lambda: SimTuning(execution_check_s=0.001), tasks=lambda: tasks, spawn=spawn)
    task = tasks.create("rebalance", ("POST", frozenset()), "/rebalance", "test", "s", asynchronous=True)
    executor.start(task, Proposal(moves=[ReplicaMove("t", 0, (1, 2), (1, 3), 1.0)]), throttle_bytes_s=None,
                   concurrency=None, intra_concurrency=None, leaving=[])
    await asyncio.wait_for(spawned[0], 5)
    assert task.status == "CompletedWithError"
    assert executor.state() == {"state": "NO_TASK_IN_PROGRESS"}
    cluster.back = True
    await executor.refuse_while_busy("rebalance", method="POST")  # raises while another execution runs


class _DirsCluster:
    """Broker 1's directories in the middle of a drain of /a; broker 2 does not answer."""

    def __init__(self) -> None:
        self.asked: list[list[int]] = []

    async def describe_log_dirs(self, brokers: list[int]) -> list[LogDirInfo]:
        self.asked.append(list(brokers))
        return [LogDirInfo(broker=1, path="/a", replicas=(LogDirReplica("copying", 0, 10),)),
                LogDirInfo(broker=1, path="/b", replicas=(LogDirReplica("copying", 0, 4, is_future=True),
                                                          LogDirReplica("moved", 0, 10)))]


async def test_moves_between_directories_are_followed_through_their_brokers_directories_alone() -> None:
    """As Cruise Control reads them (describeReplicaLogDirs of the replicas in flight): no model refresh per look."""
    cluster = _DirsCluster()
    execution = KafkaExecution(task_id="x", moves=[], backend=SimpleNamespace(admin=cluster))  # type: ignore[arg-type]
    moves = {name: IntraBrokerMove(name, 0, broker, "/a", "/b", 1.0)
             for name, broker in (("copying", 1), ("moved", 1), ("deleted", 1), ("unanswered", 2))}
    done = await execution._intra_done(list(moves.values()))
    assert cluster.asked == [[1, 2]]
    assert {m.topic for m in done} == {"moved", "deleted"}
