"""The simulator's real-Kafka backend: Cruise Control's model refreshed from a real cluster through the cluster-admin
port (the same adapter the services use), executions as real reassignments (``kafka_execution.py``).

Like Cruise Control's load monitor, it sees the cluster through periodic metadata and size samples: brokers (fenced
ones as dead), racks, every topic (``__consumer_offsets`` included: Cruise Control moves it too), replicas, leaders,
in-sync replicas, each replica's log directory and size, online and offline log directories.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Iterable, Mapping

from services.cluster_sim.execution import Execution
from services.cluster_sim.kafka_execution import KafkaExecution
from services.cluster_sim.load import MeasuredLoad
from services.cluster_sim.model import Broker, Cluster, IntraBrokerMove, Partition, ReplicaMove, Topic
from services.adapters.admin.port import AdminError, BrokerInfo, ClusterAdmin, LogDirInfo, TopicDescription
from services.common.logging import get_logger
from services.common.retry import backoff

log = get_logger(__name__)

MB = 1024 * 1024


def snapshot(cluster: Cluster, brokers: Iterable[BrokerInfo], topics: Mapping[str, TopicDescription],
             log_dirs: Iterable[LogDirInfo]) -> dict[tuple[str, int], float]:
    """Replace the model's brokers and topics with what the cluster reported, in place (the HTTP handlers hold the
    same ``Cluster``). A broker that cannot describe its log dirs (it is down) keeps the ones it had; a partition
    whose replicas report no size keeps its last one. Returns each partition's size in MB (its largest replica,
    which is the leader's log once in sync) for the load's rate samples."""
    dirs: dict[int, list[str]] = {}
    offline: dict[int, list[str]] = {}
    capacity: dict[int, dict[str, float]] = {}
    for d in log_dirs:
        dirs.setdefault(d.broker, []).append(d.path)
        if d.total_bytes:
            capacity.setdefault(d.broker, {})[d.path] = d.total_bytes / MB
        if not d.online:
            offline.setdefault(d.broker, []).append(d.path)
    previous_brokers, previous_topics = dict(cluster.brokers), dict(cluster.topics)
    cluster.brokers.clear()
    for b in brokers:
        known = previous_brokers.get(b.id)
        cluster.brokers[b.id] = Broker(
            id=b.id, rack=b.rack, alive=b.alive,
            log_dirs=tuple(sorted(dirs[b.id])) if b.id in dirs else (known.log_dirs if known else ()),
            offline_log_dirs=tuple(sorted(offline.get(b.id, ()))) if b.id in dirs
            else (known.offline_log_dirs if known else ()),
            dir_capacity_mb=capacity.get(b.id) or (known.dir_capacity_mb if known else {}))
    sizes: dict[tuple[str, int], float] = {}
    cluster.topics.clear()
    for name, described in topics.items():
        before = previous_topics.get(name)
        partitions = []
        for p in described.partitions:
            reported = [r.size_bytes for r in p.replica_info if r.size_bytes is not None]
            if reported:
                size_mb = max(reported) / MB
            elif before is not None and p.id < len(before.partitions):
                size_mb = before.partitions[p.id].size_mb
            else:
                size_mb = 0.0
            sizes[(name, p.id)] = size_mb
            partitions.append(Partition(index=p.id, replicas=list(p.replicas), leader=p.leader, size_mb=size_mb,
                                        log_dirs={r.broker: r.log_dir for r in p.replica_info if r.log_dir},
                                        in_sync=list(p.isr), failed=set(p.offline)))
        cluster.topics[name] = Topic(name=name, partitions=partitions, config=dict(described.config))
    return sizes


class KafkaBackend:
    real = True

    def __init__(self, admin: ClusterAdmin, *, sync_interval_s: float = 2.0, first_wait_s: float = 0.5,
                 longest_wait_s: float = 10.0) -> None:
        self.admin = admin
        self.cluster = Cluster([], default_partition_mb=0.0)
        self.load = MeasuredLoad(self.cluster)
        self.sync_interval_s = sync_interval_s
        self._waits = {"initial_s": first_wait_s, "max_s": longest_wait_s}
        self.synced_at = float("-inf")
        self._lock = asyncio.Lock()
        self._loop: asyncio.Task[None] | None = None

    async def start(self) -> None:
        """First view of the cluster, then a refresh every ``sync_interval_s``, which also samples the sizes the
        load's rates come from. A cluster still starting is waited for as long as it takes, as the services wait
        for the bus: a deadline only made the simulator exit when the brokers were slow (seen in CI, containerised
        brokers on a crowded machine), for its supervisor to start it again. A permanent refusal raises."""
        attempts = 0
        while True:
            try:
                await self.refresh()
                break
            except AdminError as exc:
                if not exc.temporary:
                    raise
                attempts += 1
                wait = backoff(attempts, **self._waits).total_seconds()
                log.info("waiting for the Kafka cluster", error=str(exc), attempts=attempts, next_try_s=wait)
                await asyncio.sleep(wait)
        self._loop = asyncio.get_running_loop().create_task(self._refresh_forever())
        log.info("Kafka backend ready", brokers=len(self.cluster.brokers), topics=len(self.cluster.topics))

    async def _refresh_forever(self) -> None:
        while True:
            await asyncio.sleep(self.sync_interval_s)
            try:
                await self.refresh(self.sync_interval_s / 2)
            except AdminError as exc:
                log.warning("cannot refresh the cluster model; keeping the last one", error=str(exc))

    async def refresh(self, max_age_s: float = 0.0) -> None:
        if time.monotonic() - self.synced_at <= max_age_s:
            return
        async with self._lock:
            if time.monotonic() - self.synced_at <= max_age_s:
                return  # refreshed by another caller while this one waited
            started = time.monotonic()
            brokers = await self.admin.brokers()
            topics = await self.admin.list_topics(include_internal=True)
            try:
                log_dirs = await self.admin.describe_log_dirs([b.id for b in brokers if b.alive])
            except AdminError as exc:  # a broker died since: its directories stay as they were
                log.info("log dirs not described", error=str(exc))
                log_dirs = []
            self.load.record(snapshot(self.cluster, brokers, topics, log_dirs))
            self.synced_at = started

    def execution(self, task_id: str, moves: list[ReplicaMove], throttle_bytes_s: int | None, *,
                  time_scale: float, bandwidth_mb_s: float, min_execution_s: float, check_interval_s: float,
                  movements_per_broker: int, intra_moves: list[IntraBrokerMove] | None = None,
                  intra_per_broker: int = 2) -> Execution:
        return KafkaExecution(task_id=task_id, moves=moves, throttle_bytes_s=throttle_bytes_s, backend=self,
                              check_interval_s=check_interval_s, movements_per_broker=movements_per_broker,
                              intra_moves=intra_moves or [], intra_concurrency=intra_per_broker)

    async def reassignments_in_progress(self) -> bool:
        """Cruise Control's ``sanityCheckOngoingMovement``: a reassignment anyone started blocks a new execution."""
        try:
            return bool(await self.admin.list_reassignments())
        except AdminError as exc:
            log.warning("cannot list reassignments", error=str(exc))
            return True  # unknown: do not start moving replicas on top of something else

    async def close(self) -> None:
        if self._loop is not None:
            self._loop.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._loop
        await self.admin.aclose()
