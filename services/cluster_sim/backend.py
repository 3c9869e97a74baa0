"""What Cruise Control's semantics run on: a cluster backend. Cruise Control reads a model of the cluster (brokers,
racks, partitions, sizes, load) and hands executions to the cluster; the simulator keeps one code path for the
former (``cruise_control.py``, ``endpoints.py``, ``executor.py``) and two backends for the latter:

- ``MemoryBackend`` (the default): the model *is* the cluster; executions move numbers over accelerated time and the
  load is a deterministic model. Fast, and scales to 1,000 brokers.
- ``KafkaBackend`` (``kafka_backend.py``): the model is refreshed from a real cluster through the cluster-admin port,
  and executions are real partition reassignments, throttles, leader elections (``kafka_execution.py``).
"""

from __future__ import annotations

from typing import Protocol

from services.cluster_sim.execution import ClockExecution, Execution
from services.cluster_sim.load import LoadModel
from services.cluster_sim.model import Cluster, IntraBrokerMove, ReplicaMove


class Backend(Protocol):
    cluster: Cluster
    load: LoadModel
    real: bool  # the model mirrors a real cluster (changes go through Kafka, not the simulator's admin API)

    async def start(self) -> None: ...

    async def refresh(self, max_age_s: float = 0.0) -> None:
        """Bring the model up to date unless it is younger than ``max_age_s``."""
        ...

    def execution(self, task_id: str, moves: list[ReplicaMove], throttle_bytes_s: int | None, *,
                  time_scale: float, bandwidth_mb_s: float, min_execution_s: float, check_interval_s: float,
                  movements_per_broker: int, intra_moves: list[IntraBrokerMove] | None = None,
                  intra_per_broker: int = 2) -> Execution: ...

    async def reassignments_in_progress(self) -> bool:
        """Whether the cluster is moving replicas that no execution of this Cruise Control tracks."""
        ...

    async def close(self) -> None: ...


class MemoryBackend:
    real = False

    def __init__(self, cluster: Cluster, *, time_scale: float) -> None:
        self.cluster = cluster
        self.load = LoadModel(cluster, time_scale=time_scale)

    async def start(self) -> None:
        pass

    async def refresh(self, max_age_s: float = 0.0) -> None:
        self.load.advance()

    def execution(self, task_id: str, moves: list[ReplicaMove], throttle_bytes_s: int | None, *,
                  time_scale: float, bandwidth_mb_s: float, min_execution_s: float, check_interval_s: float,
                  movements_per_broker: int, intra_moves: list[IntraBrokerMove] | None = None,
                  intra_per_broker: int = 2) -> Execution:
        """Data copies at the request's replication throttle, or the simulated bandwidth without one, in
        simulated seconds (``time_scale`` of them per real second); moves between directories at the bandwidth
        (the replication throttle does not apply to them)."""
        intra_moves = intra_moves or []
        total_mb = sum(m.data_to_move_mb for m in moves)
        throttle_mb_s = throttle_bytes_s / 1_000_000 if throttle_bytes_s else bandwidth_mb_s
        simulated_s = total_mb / min(bandwidth_mb_s, throttle_mb_s) + sum(m.size_mb for m in intra_moves) / bandwidth_mb_s
        return ClockExecution(task_id=task_id, moves=moves, throttle_bytes_s=throttle_bytes_s, cluster=self.cluster,
                              duration_s=max(min_execution_s, simulated_s / time_scale), intra_moves=intra_moves,
                              intra_concurrency=intra_per_broker)

    async def reassignments_in_progress(self) -> bool:
        return False  # the simulator's own orphaned executions are counted by its executor

    async def close(self) -> None:
        pass
