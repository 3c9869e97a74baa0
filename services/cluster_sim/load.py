"""The simulator's load model: produce rates per partition, skewed between topics and drifting over simulated time,
partitions that grow at their rate, and replicas spread over each broker's log directories. It feeds Cruise
Control's ``load`` (with ``populate_disk_info``) and ``partition_load`` so the numbers move as on a real cluster.

Deterministic: a topic's base rate and a replica's log directory come from a hash of their names, and the drift is a
function of simulated time, so the same cluster at the same simulated second gives the same numbers.
"""

from __future__ import annotations

import math
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass

from services.cluster_sim.model import Cluster, Partition

FANOUT = 2.0  # bytes out per byte in: two consumer groups read every topic
MESSAGE_KB = 1.0
DRIFT_PERIOD_S = 3600.0  # simulated seconds of one rate cycle
CPU_PCT_PER_MB_S = 0.5  # a broker's CPU load per MB/s it takes in and sends out
# Simulated seconds of data a partition keeps (retention.ms): a log stops growing at its rate times this. Four hours
# keep the default cluster's brokers near a quarter of their disks however long the simulator runs; before, they
# grew without end and a long or slow run (a demo on a busy machine) found its disks too full to drain one.
RETENTION_S = 4 * 3600.0


def _unit(*parts: object) -> float:
    """A stable number in [0, 1) for these names."""
    return zlib.crc32("/".join(map(str, parts)).encode()) / 2**32


@dataclass(frozen=True)
class PartitionLoad:
    topic: str
    partition: int
    leader: int | None
    followers: list[int]
    bytes_in_kb_s: float
    bytes_out_kb_s: float
    disk_mb: float
    msg_in_s: float


class LoadModel:
    # Bytes out per byte in (consumers); the measured load knows only replication out.
    fanout = FANOUT

    def __init__(self, cluster: Cluster, *, time_scale: float, base_rate_kb_s: float = 200.0,
                 retention_s: float = RETENTION_S, clock: Callable[[], float] = time.monotonic) -> None:
        self.cluster = cluster
        self.time_scale = time_scale
        self.retention_s = retention_s
        self.base_rate_kb_s = base_rate_kb_s
        self._clock = clock
        self._started = clock()
        self._last = self._started

    def simulated_s(self) -> float:
        return (self._clock() - self._started) * self.time_scale

    def rate_kb_s(self, topic: str, partition: int) -> float:
        """Skew: a few hot topics (the cube of a uniform number spreads base rates over 1x-20x), a little per
        partition, and a slow drift over simulated time that keeps aggregates moving."""
        heat = 1.0 + 19.0 * _unit(topic) ** 3
        jitter = 0.8 + 0.4 * _unit(topic, partition)
        drift = 1.0 + 0.3 * math.sin(2 * math.pi * (self.simulated_s() / DRIFT_PERIOD_S + _unit(topic, "phase")))
        return self.base_rate_kb_s * heat * jitter * drift

    def advance(self) -> None:
        """Grow every partition by what was produced to it since the last call (in simulated time), up to what its
        retention keeps (a log created larger keeps its size)."""
        now = self._clock()
        elapsed = (now - self._last) * self.time_scale
        self._last = now
        if elapsed <= 0:
            return
        for topic in self.cluster.topics.values():
            for p in topic.partitions:
                rate_mb_s = self.rate_kb_s(topic.name, p.index) / 1024.0
                p.size_mb = min(p.size_mb + rate_mb_s * elapsed, max(p.size_mb, rate_mb_s * self.retention_s))

    def log_dir(self, topic: str, partition: Partition, broker: int) -> str:
        """The directory chosen for the replica (AlterReplicaLogDirs), else a stable one of the broker's."""
        dirs = self.cluster.brokers[broker].log_dirs if broker in self.cluster.brokers else ("",)
        chosen = partition.log_dirs.get(broker)
        return chosen if chosen in dirs else dirs[int(_unit(topic, partition.index, broker) * len(dirs))]

    def _fanout(self, partition: Partition) -> float:
        return self.fanout

    def partitions(self) -> list[PartitionLoad]:
        loads = []
        for topic in self.cluster.topics.values():
            for p in topic.partitions:
                rate = self.rate_kb_s(topic.name, p.index)
                loads.append(PartitionLoad(
                    topic=topic.name, partition=p.index, leader=p.leader,
                    followers=[b for b in p.replicas if b != p.leader], bytes_in_kb_s=rate,
                    bytes_out_kb_s=rate * self._fanout(p), disk_mb=p.size_mb, msg_in_s=rate / MESSAGE_KB))
        return loads

    def brokers(self) -> dict[int, dict[str, object]]:
        """Per broker: leader / follower bytes in, bytes out, CPU, and per log directory disk and replica counts."""
        stats: dict[int, dict[str, object]] = {
            b.id: {"leader_in": 0.0, "follower_in": 0.0, "out": 0.0,
                   "dirs": {d: {"disk_mb": 0.0, "replicas": 0, "leaders": 0} for d in b.log_dirs}}
            for b in self.cluster.brokers.values()}
        for topic in self.cluster.topics.values():
            for p in topic.partitions:
                rate = self.rate_kb_s(topic.name, p.index)
                for broker in p.replicas:
                    if broker not in stats:
                        continue
                    row = stats[broker]
                    leads = broker == p.leader
                    row["leader_in" if leads else "follower_in"] += rate  # type: ignore[operator]
                    if leads:
                        row["out"] += rate * self._fanout(p)  # type: ignore[operator]
                    directory = row["dirs"].setdefault(  # type: ignore[attr-defined]
                        self.log_dir(topic.name, p, broker), {"disk_mb": 0.0, "replicas": 0, "leaders": 0})
                    directory["disk_mb"] += p.size_mb
                    directory["replicas"] += 1
                    directory["leaders"] += int(leads)
        for row in stats.values():
            mb_s = (row["leader_in"] + row["follower_in"] + row["out"]) / 1024.0  # type: ignore[operator]
            row["cpu_pct"] = min(100.0, CPU_PCT_PER_MB_S * mb_s)
        return stats


class MeasuredLoad(LoadModel):
    """The load of a real cluster, from what its brokers report: each partition's size (its leader's log, from
    DescribeLogDirs) as the disk figure, and its bytes-in rate as the growth of that size over the last
    ``window_s`` seconds. A shrinking log (retention, compaction) starts its window again. Bytes out count what the
    leader sends its followers, the one outbound flow the sizes show; consumers' fetches are not measured."""

    def __init__(self, cluster: Cluster, *, window_s: float = 60.0, clock: Callable[[], float] = time.monotonic
                 ) -> None:
        super().__init__(cluster, time_scale=1.0, clock=clock)
        self.window_s = window_s
        self._samples: dict[tuple[str, int], list[tuple[float, float]]] = {}

    def record(self, sizes_mb: dict[tuple[str, int], float]) -> None:
        """One observation of every partition's size (MB) now; partitions not named are forgotten."""
        now = self._clock()
        samples = {}
        for key, size in sizes_mb.items():
            history = self._samples.get(key, [])
            if history and size < history[-1][1]:
                history = []
            history = [s for s in history if now - s[0] <= self.window_s] + [(now, size)]
            samples[key] = history
        self._samples = samples

    def advance(self) -> None:
        """Sizes come from the cluster's own reports (``record``), not from a model of time."""

    def rate_kb_s(self, topic: str, partition: int) -> float:
        history = self._samples.get((topic, partition), [])
        if len(history) < 2 or history[-1][0] <= history[0][0]:
            return 0.0
        (t0, s0), (t1, s1) = history[0], history[-1]
        return max(0.0, (s1 - s0) * 1024.0 / (t1 - t0))

    def log_dir(self, topic: str, partition: Partition, broker: int) -> str:
        dirs = self.cluster.brokers[broker].log_dirs if broker in self.cluster.brokers else ()
        chosen = partition.log_dirs.get(broker)
        return chosen if chosen in dirs else (dirs[0] if dirs else "")

    def _fanout(self, partition: Partition) -> float:
        return float(max(0, len(partition.replicas) - 1))
