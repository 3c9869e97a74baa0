"""A proposal executed on a real cluster, phase by phase as Cruise Control's executor does it.

1. Inter-broker movements: partition reassignments (the proposal's replica list, in order, so its first replica
   becomes the preferred leader), at most ``movements_per_broker`` in flight per broker. With a replication throttle,
   ``ReplicationThrottleHelper``'s rules: before a batch, every participating broker gets
   ``leader/follower.replication.throttled.rate`` and each topic's ``leader/follower.replication.throttled.replicas``
   gain ``partition:broker`` for the old replicas and those added; as movements complete, the topics lose those
   entries and brokers with nothing left in flight lose their rates. A movement is done when Kafka no longer lists
   its reassignment and the partition has the new replicas; dead when a new replica's broker is dead (it is rolled
   back and the execution stops), or when Kafka has ended it without giving it the new replicas.
2. Intra-broker movements: AlterReplicaLogDirs, at most ``intra_concurrency`` in flight per broker; a movement is
   done when the broker reports the replica in its destination directory. Cruise Control sets no throttle for them
   (Ballast's rebalancer sets the intra-broker one around these executions), and cannot abort one started: a stop
   cancels the pending ones and waits for those in flight.
3. Leadership movements: a preferred leader election for each partition whose leader is not its first replica.

A stop drops what is pending and lets the reassignments in flight finish (STOPPING_EXECUTION until they have, as the
real one does); ``force_stop`` and a dead movement roll them back instead (``handleDeadInterBrokerReplicaTasks``),
waiting until Kafka no longer lists them. Throttles are removed however the execution ends, a stop included (the
real ``Executor.interBrokerMoveReplicas`` hands stopped moves to ``ReplicationThrottleHelper.clearThrottles`` as it
does completed ones); only a restart leaves them (``finish_orphaned``), as a killed Cruise Control does. Progress
(movements and data finished) comes only from what Kafka reports.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Protocol

from services.cluster_sim.execution import INTRA_BROKER, LEADERSHIP, STOPPING, Execution
from services.cluster_sim.model import Cluster, IntraBrokerMove, ReplicaMove
from services.adapters.admin.port import AdminError, ClusterAdmin, OperationRefused, UnknownTopic
from services.common.logging import get_logger

log = get_logger(__name__)

LEADER_RATE, FOLLOWER_RATE = "leader.replication.throttled.rate", "follower.replication.throttled.rate"
LEADER_REPLICAS, FOLLOWER_REPLICAS = "leader.replication.throttled.replicas", "follower.replication.throttled.replicas"
MISMATCH_GRACE_S = 5.0  # a finished reassignment's new replicas may take this long to reach every broker's metadata
ROLLBACK_TIMEOUT_S = 120.0
LEADER_MOVEMENT_TIMEOUT_S = 30.0
INTRA_MOVE_TIMEOUT_S = 3600.0

Key = tuple[str, int]


def _key(move: ReplicaMove) -> Key:
    return move.topic, move.partition


class RealCluster(Protocol):
    """What an execution needs of its backend (``kafka_backend.KafkaBackend``): the cluster-admin port it moves
    replicas through, and the model of the cluster it reads the outcome from, refreshed on demand."""

    admin: ClusterAdmin
    cluster: Cluster

    async def refresh(self, max_age_s: float = 0.0) -> None: ...


@dataclass
class KafkaExecution(Execution):
    backend: RealCluster | None = None
    check_interval_s: float = 0.5
    movements_per_broker: int = 5
    force_stop: bool = False
    _pending: list[ReplicaMove] = field(default_factory=list)
    _in_flight: dict[Key, ReplicaMove] = field(default_factory=dict)
    _mismatch_since: dict[Key, float] = field(default_factory=dict)
    _throttled_brokers: set[int] = field(default_factory=set)
    _throttled_replicas: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))

    @property
    def _b(self) -> RealCluster:
        assert self.backend is not None
        return self.backend

    # -- the phases --------------------------------------------------------------------------------------------

    async def run(self) -> None:
        self._pending = list(self.moves)
        try:
            await self._move_replicas()
            if self.stop_requested and not self.force_stop and self.error is None:
                await self._finish_in_flight()
                self.intra_cancelled = len(self.intra_moves)
            elif self.stop_requested or self.ended_with_error:
                await self._roll_back_in_flight()
                self.intra_cancelled = len(self.intra_moves)
            else:
                await self._move_between_dirs()
                if not (self.stop_requested or self.ended_with_error):
                    await self._move_leaders()
        except AdminError as exc:
            self.error = str(exc)
            log.warning("execution failed", task=self.task_id, error=self.error)
            await self._roll_back_in_flight()
        finally:
            try:
                await self._clear_throttles(self.moves)
            except AdminError as exc:  # the throttles stay; the execution ends all the same, with the error
                self.error = self.error or f"throttles not removed: {exc}"
                log.warning("throttles not removed", task=self.task_id, error=str(exc))

    async def _move_replicas(self) -> None:
        while (self._pending or self._in_flight) and not self.stop_requested and self.error is None:
            batch = self._next_batch()
            if batch:
                await self._set_throttles(batch)
                await self._submit(batch)
            await asyncio.sleep(self.check_interval_s)
            await self._check_progress()

    def _next_batch(self) -> list[ReplicaMove]:
        """Pending movements, in proposal order, while every broker they touch has room for one more."""
        busy: Counter[int] = Counter()
        for move in self._in_flight.values():
            busy.update(set(move.old_replicas) | set(move.new_replicas))
        batch, left = [], []
        for move in self._pending:
            brokers = set(move.old_replicas) | set(move.new_replicas)
            if all(busy[b] < self.movements_per_broker for b in brokers):
                batch.append(move)
                busy.update(brokers)
            else:
                left.append(move)
        self._pending = left
        return batch

    async def _submit(self, batch: list[ReplicaMove]) -> None:
        by_topic: dict[str, dict[int, list[int]]] = defaultdict(dict)
        for move in batch:
            self._in_flight[_key(move)] = move  # tracked before Kafka has it: a restart mid-call still knows it
            by_topic[move.topic][move.partition] = list(move.new_replicas)
        self.in_progress_moves = len(self._in_flight)
        for topic, replicas in by_topic.items():
            try:
                await self._b.admin.reassign_partitions(topic, replicas)
            except UnknownTopic:
                # Deleted since the proposal: Kafka drops the movement with the topic, which counts as done.
                for partition in replicas:
                    self._finish(self._in_flight.pop((topic, partition)), moved=False)

    async def _check_progress(self) -> None:
        if not self._in_flight:
            return
        moving = {(r.topic, r.partition) for r in await self._b.admin.list_reassignments()}
        await self._b.refresh(self.check_interval_s / 2)
        cluster = self._b.cluster
        done: list[ReplicaMove] = []
        for key, move in list(self._in_flight.items()):
            topic = cluster.topics.get(move.topic)
            if key in moving:
                if dead := [b for b in move.new_replicas if b in cluster.brokers and not cluster.brokers[b].alive]:
                    self.error = (f"movement of {move.topic}-{move.partition} is dead: broker(s) {dead} it moves to "
                                  "are down")
                    log.warning("movement dead", task=self.task_id, reason=self.error)
                continue
            if topic is None or move.partition >= len(topic.partitions):
                done.append(move)
                self._finish(self._in_flight.pop(key), moved=False)
                continue
            if set(topic.partitions[move.partition].replicas) == set(move.new_replicas):
                self._mismatch_since.pop(key, None)
                done.append(move)
                self._finish(self._in_flight.pop(key), moved=True)
                continue
            since = self._mismatch_since.setdefault(key, time.monotonic())
            if time.monotonic() - since > MISMATCH_GRACE_S:
                self.error = (f"movement of {move.topic}-{move.partition} ended without its new replicas "
                              f"{list(move.new_replicas)} (cancelled outside Cruise Control?)")
                log.warning("movement dead", task=self.task_id, reason=self.error)
                self._in_flight.pop(key)
                self.dead_moves += 1
        self.in_progress_moves = len(self._in_flight)
        if done:
            await self._clear_throttles(done)

    def _finish(self, move: ReplicaMove, *, moved: bool) -> None:
        self.finished_moves += 1
        if moved:
            self.finished_mb += move.data_to_move_mb

    async def _finish_in_flight(self) -> None:
        """A stop: the movements not started are dropped; those Kafka is moving finish (STOPPING_EXECUTION)."""
        self.phase = STOPPING
        self.cancelled_moves = len(self._pending)
        self._pending = []
        while self._in_flight and self.error is None:
            await asyncio.sleep(self.check_interval_s)
            await self._check_progress()

    async def _roll_back_in_flight(self) -> None:
        """Cancel the reassignments in flight (each partition keeps the replicas it had) and wait until Kafka has
        rolled them back. Pending movements are simply never started."""
        self.phase = STOPPING
        self.cancelled_moves = len(self._pending)
        self._pending = []
        if not self._in_flight:
            return
        by_topic: dict[str, list[int]] = defaultdict(list)
        for topic, partition in self._in_flight:
            by_topic[topic].append(partition)
        for topic, partitions in by_topic.items():
            try:
                await self._b.admin.cancel_reassignments(topic, partitions)
            except UnknownTopic:
                continue
        deadline = time.monotonic() + ROLLBACK_TIMEOUT_S
        while time.monotonic() < deadline:
            moving = {(r.topic, r.partition) for r in await self._b.admin.list_reassignments()}
            if not moving & set(self._in_flight):
                break
            await asyncio.sleep(self.check_interval_s)
        self.dead_moves += len(self._in_flight)
        self._in_flight.clear()
        self.in_progress_moves = 0

    async def _move_between_dirs(self) -> None:
        if not self.intra_moves:
            return
        self.phase = INTRA_BROKER
        pending = list(self.intra_moves)
        in_flight: list[IntraBrokerMove] = []
        deadline = time.monotonic() + INTRA_MOVE_TIMEOUT_S
        while (pending or in_flight) and self.error is None:
            if self.stop_requested and pending:
                self.intra_cancelled += len(pending)
                pending = []
            busy = Counter(m.broker for m in in_flight)
            batch = []
            for move in list(pending):
                if busy[move.broker] < self.intra_concurrency:
                    batch.append(move)
                    busy[move.broker] += 1
                    pending.remove(move)
            by_topic: dict[str, dict[tuple[int, int], str]] = defaultdict(dict)
            for move in batch:
                by_topic[move.topic][(move.partition, move.broker)] = move.destination
                in_flight.append(move)
            for topic, dirs in by_topic.items():
                try:
                    await self._b.admin.alter_replica_log_dirs(topic, dirs)
                except (UnknownTopic, OperationRefused) as gone:
                    # A topic deleted: nothing left to move. A move Kafka refuses (into a cordoned directory,
                    # KIP-1066): the real Cruise Control marks the task dead, counts it done and ends the execution
                    # Completed all the same (seen on dadba67e2).
                    if not isinstance(gone, UnknownTopic):
                        log.warning("move between log directories refused by Kafka; counted done, as Cruise Control "
                                    "does", topic=topic, error=str(gone))
                    for move in [m for m in in_flight if m.topic == topic]:
                        in_flight.remove(move)
                        self.intra_finished += 1
            self.intra_in_progress = len(in_flight)
            if not in_flight:
                continue
            await asyncio.sleep(self.check_interval_s)
            for move in await self._intra_done(in_flight):
                in_flight.remove(move)
                self.intra_finished += 1
                self.intra_finished_mb += move.size_mb
            self.intra_in_progress = len(in_flight)
            if in_flight and time.monotonic() > deadline:
                self.error = (f"{len(in_flight)} move(s) between log directories did not finish in "
                              f"{INTRA_MOVE_TIMEOUT_S:.0f} s")
                self.dead_moves += len(in_flight)

    async def _intra_done(self, in_flight: list[IntraBrokerMove]) -> list[IntraBrokerMove]:
        """The moves that have ended, read from the log directories of their brokers alone, as Cruise Control reads
        them (describeReplicaLogDirs of the replicas in flight): a whole model's refresh for each look made a drain of
        a busy shared cluster's directory (79 replicas) take minutes. A replica no longer on its broker (its topic
        deleted, or moved away) has nothing left to move; one whose broker cannot answer is looked at again later."""
        try:
            dirs = await self._b.admin.describe_log_dirs(sorted({m.broker for m in in_flight}))
        except AdminError as exc:
            log.info("log directories of the brokers moving replicas not described", error=str(exc))
            return []
        where: dict[tuple[str, int, int], str] = {}
        copying: set[tuple[str, int, int]] = set()
        for d in dirs:
            for r in d.replicas:
                if r.is_future:
                    copying.add((r.topic, r.partition, d.broker))
                else:
                    where[(r.topic, r.partition, d.broker)] = d.path
        answered = {d.broker for d in dirs}

        def ended(move: IntraBrokerMove) -> bool:
            key = (move.topic, move.partition, move.broker)
            return (move.broker in answered and key not in copying
                    and where.get(key, move.destination) == move.destination)

        return [m for m in in_flight if ended(m)]

    async def _move_leaders(self) -> None:
        await self._b.refresh()
        topics = self._b.cluster.topics

        def misled(move: ReplicaMove) -> bool:
            topic = topics.get(move.topic)
            return (topic is not None and move.partition < len(topic.partitions)
                    and topic.partitions[move.partition].leader != move.new_replicas[0])

        wanted = [m for m in self.moves if misled(m)]
        if not wanted:
            return
        self.phase = LEADERSHIP
        self.leader_moves_total = len(wanted)
        by_topic: dict[str, list[int]] = defaultdict(list)
        for move in wanted:
            by_topic[move.topic].append(move.partition)
        for topic, partitions in by_topic.items():
            try:
                await self._b.admin.elect_preferred_leaders(topic, partitions)
            except UnknownTopic:
                continue
            except AdminError as exc:  # e.g. the preferred leader is not in sync yet: Kafka elects it later
                log.info("preferred leader election refused", topic=topic, error=str(exc))
        deadline = time.monotonic() + LEADER_MOVEMENT_TIMEOUT_S
        while True:
            await self._b.refresh()
            topics = self._b.cluster.topics
            self.leader_moves_finished = sum(1 for m in wanted if not misled(m))
            if self.leader_moves_finished == len(wanted) or time.monotonic() > deadline or self.stop_requested:
                return
            await asyncio.sleep(self.check_interval_s)

    # -- throttles ---------------------------------------------------------------------------------------------

    async def _set_throttles(self, batch: list[ReplicaMove]) -> None:
        if not self.throttle_bytes_s:
            return
        rate = str(self.throttle_bytes_s)
        cluster = self._b.cluster
        for broker in sorted({b for m in batch for b in (*m.old_replicas, *m.new_replicas)} - self._throttled_brokers):
            if broker in cluster.brokers and not cluster.brokers[broker].alive:
                continue  # a dead broker cannot take configs (Cruise Control leaves it out too)
            await self._b.admin.alter_broker_configs(broker, {LEADER_RATE: rate, FOLLOWER_RATE: rate})
            self._throttled_brokers.add(broker)
        added: dict[str, set[str]] = defaultdict(set)
        for move in batch:
            for broker in (*move.old_replicas, *(b for b in move.new_replicas if b not in move.old_replicas)):
                added[move.topic].add(f"{move.partition}:{broker}")
        for topic, entries in added.items():
            current = await self._topic_throttles(topic)
            if current is None:
                continue
            self._throttled_replicas[topic] |= entries
            merged = ",".join(sorted(current | entries))
            try:
                await self._b.admin.alter_configs(topic, {LEADER_REPLICAS: merged, FOLLOWER_REPLICAS: merged})
            except UnknownTopic:
                continue

    async def _topic_throttles(self, topic: str) -> set[str] | None:
        """The topic's throttled replicas now, read from Kafka (as ReplicationThrottleHelper does: the model's copy
        of the config can be a refresh old, and writing it back would resurrect entries another execution has
        removed since), plus what this execution set; None when every replica is throttled already (``*``)."""
        try:
            described = (await self._b.admin.describe_topics([topic])).get(topic)
        except AdminError:
            described = None
        if described is not None:
            config = described.config
        else:
            config = self._b.cluster.topics[topic].config if topic in self._b.cluster.topics else {}
        value = config.get(LEADER_REPLICAS, "").strip()
        if value == "*":
            return None
        return {e for e in value.split(",") if e} | self._throttled_replicas.get(topic, set())

    async def _clear_throttles(self, finished: list[ReplicaMove]) -> None:
        """Take the throttles of these movements off: their replicas from the topics' lists, and the rates from
        brokers that no movement in flight still uses."""
        if not self._throttled_brokers and not self._throttled_replicas:
            return
        for topic in sorted({m.topic for m in finished}):
            ours = self._throttled_replicas.get(topic)
            if not ours:
                continue
            done = {f"{m.partition}:{b}" for m in finished if m.topic == topic
                    for b in (*m.old_replicas, *m.new_replicas)}
            still_moving = {f"{m.partition}:{b}" for m in self._in_flight.values() if m.topic == topic
                            for b in (*m.old_replicas, *m.new_replicas)}
            removed = (ours & done) - still_moving
            if not removed:
                continue
            current = await self._topic_throttles(topic)
            self._throttled_replicas[topic] = ours - removed
            if current is None:
                continue
            left = ",".join(sorted(current - removed))
            try:
                await self._b.admin.alter_configs(topic, {LEADER_REPLICAS: left or None, FOLLOWER_REPLICAS: left or None})
            except UnknownTopic:
                pass
        busy = {b for m in self._in_flight.values() for b in (*m.old_replicas, *m.new_replicas)}
        for broker in sorted(self._throttled_brokers - busy):
            try:
                await self._b.admin.alter_broker_configs(broker, {LEADER_RATE: None, FOLLOWER_RATE: None})
            except AdminError as exc:  # gone or down: its dynamic configs went with it or wait for it
                log.info("throttle not removed from broker", broker=broker, error=str(exc))
            self._throttled_brokers.discard(broker)

    # -- stop and restart --------------------------------------------------------------------------------------

    def request_stop(self, *, force: bool = False) -> None:
        self.stop_requested = True
        self.force_stop = self.force_stop or force
        self.phase = STOPPING

    async def finish_orphaned(self) -> None:
        """Cruise Control restarted: nothing new is submitted; what Kafka is moving keeps moving (a new execution is
        refused until it has finished). The throttles this execution set stay, as a killed Cruise Control leaves them:
        only its executor's loop takes them off, and a restarted one knows nothing of them."""
        try:
            while self._in_flight:
                moving = {(r.topic, r.partition) for r in await self._b.admin.list_reassignments()}
                for key in [k for k in self._in_flight if k not in moving]:
                    self._in_flight.pop(key)
                if self._in_flight:
                    await asyncio.sleep(self.check_interval_s)
        except AdminError as exc:
            log.warning("cannot follow the orphaned reassignments", error=str(exc))
