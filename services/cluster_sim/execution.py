"""The executor's side of an execution: the movements of one proposal, their progress, and how to stop them.

Cruise Control's executor (``Executor.ProposalExecutionRunnable``) runs a proposal in phases: inter-broker replica
movements (partition reassignments, a few per broker at a time, under the request's replication throttle), then
intra-broker movements (between the log directories of a broker, ``concurrent_intra_broker_partition_movements`` per
broker, never throttled by Cruise Control), then leadership movements (preferred leader elections). A stop cancels what has not started and rolls back what is in
progress; the user task then ends ``CompletedWithError``. Each backend of the simulator executes differently (over
accelerated time in memory, as real reassignments on a real cluster); this module holds what they share: the counts
``/state`` reports, in Cruise Control's ``ExecutorState`` shape.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Any

from services.cluster_sim.model import Cluster, IntraBrokerMove, ReplicaMove

INTER_BROKER = "INTER_BROKER_REPLICA_MOVEMENT_TASK_IN_PROGRESS"
INTRA_BROKER = "INTRA_BROKER_REPLICA_MOVEMENT_TASK_IN_PROGRESS"
LEADERSHIP = "LEADER_MOVEMENT_TASK_IN_PROGRESS"
STOPPING = "STOPPING_EXECUTION"
PER_BROKER_CONCURRENCY = 5  # num.concurrent.partition.movements.per.broker, Cruise Control's default
INTRA_BROKER_CONCURRENCY = 2  # num.concurrent.intra.broker.partition.movements, Cruise Control's default


@dataclass
class Execution:
    """One proposal being executed. Subclasses implement ``run`` (until done or stopped), ``request_stop`` and
    ``finish_orphaned`` (what happens to it when Cruise Control restarts and forgets it)."""

    task_id: str
    moves: list[ReplicaMove]
    throttle_bytes_s: int | None = None
    phase: str = INTER_BROKER
    started: float = field(default_factory=time.monotonic)
    finished_moves: int = 0
    in_progress_moves: int = 0
    cancelled_moves: int = 0
    dead_moves: int = 0
    finished_mb: float = 0.0
    leader_moves_total: int = 0
    leader_moves_finished: int = 0
    stop_requested: bool = False
    error: str | None = None  # why it ended early, when it did
    intra_moves: list[IntraBrokerMove] = field(default_factory=list)
    intra_finished: int = 0
    intra_in_progress: int = 0
    intra_cancelled: int = 0
    intra_finished_mb: float = 0.0
    intra_concurrency: int = INTRA_BROKER_CONCURRENCY

    @property
    def total_mb(self) -> float:
        return sum(m.data_to_move_mb for m in self.moves)

    @property
    def total_intra_mb(self) -> float:
        return sum(m.size_mb for m in self.intra_moves)

    @property
    def ended_with_error(self) -> bool:
        """Cruise Control marks a task CompletedWithError when its execution was stopped or failed."""
        return self.stop_requested or self.error is not None or self.dead_moves > 0

    async def run(self) -> None:
        raise NotImplementedError

    def request_stop(self) -> bool:
        """Ask the execution to stop; True when it has stopped already (nothing in flight to roll back)."""
        raise NotImplementedError

    async def finish_orphaned(self) -> None:
        """After a Cruise Control restart: what was handed to the cluster still finishes there, unreported."""
        raise NotImplementedError

    def state(self, reason: str) -> dict[str, Any]:
        """``ExecutorState`` as Cruise Control's ``/state`` reports it for the current phase."""
        base: dict[str, Any] = {"state": self.phase, "triggeredUserTaskId": self.task_id,
                                "triggeredSelfHealingTaskId": "", "triggeredTaskReason": reason}
        pending = max(0, len(self.moves) - self.finished_moves - self.in_progress_moves - self.cancelled_moves
                      - self.dead_moves)
        if self.phase == LEADERSHIP:
            return {**base,
                    "numTotalLeadershipMovements": self.leader_moves_total,
                    "numFinishedLeadershipMovements": self.leader_moves_finished,
                    "numPendingLeadershipMovements": self.leader_moves_total - self.leader_moves_finished,
                    "maximumConcurrentLeaderMovementsPerBroker": 250,
                    "minimumConcurrentLeaderMovementsPerBroker": 250,
                    "averageConcurrentLeaderMovementsPerBroker": 250,
                    "numTotalPartitionMovements": len(self.moves),
                    "numFinishedPartitionMovements": self.finished_moves,
                    "totalDataToMove": int(self.total_mb),
                    "finishedDataMovement": int(self.finished_mb)}
        if self.phase == INTRA_BROKER or (self.phase == STOPPING and self.intra_moves and not self.moves):
            pending = max(0, len(self.intra_moves) - self.intra_finished - self.intra_in_progress
                          - self.intra_cancelled)
            return {**base,
                    "numTotalIntraBrokerPartitionMovements": len(self.intra_moves),
                    "numFinishedIntraBrokerPartitionMovements": self.intra_finished,
                    "numInProgressIntraBrokerPartitionMovements": self.intra_in_progress,
                    "numAbortingIntraBrokerPartitionMovements": 0,
                    "numPendingIntraBrokerPartitionMovements": 0 if self.phase == STOPPING else pending,
                    "numCancelledIntraBrokerPartitionMovements": self.intra_cancelled
                    + (pending if self.phase == STOPPING else 0),
                    "totalIntraBrokerDataToMove": int(self.total_intra_mb),
                    "finishedIntraBrokerDataMovement": int(self.intra_finished_mb),
                    "maximumConcurrentIntraBrokerPartitionMovementsPerBroker": self.intra_concurrency,
                    "minimumConcurrentIntraBrokerPartitionMovementsPerBroker": self.intra_concurrency,
                    "averageConcurrentIntraBrokerPartitionMovementsPerBroker": self.intra_concurrency}
        state = {**base,
                 "numTotalPartitionMovements": len(self.moves),
                 "numFinishedPartitionMovements": self.finished_moves,
                 "numInProgressPartitionMovements": self.in_progress_moves,
                 "numPendingPartitionMovements": 0 if self.phase == STOPPING else pending,
                 "numCancelledPartitionMovements": pending if self.phase == STOPPING else self.cancelled_moves,
                 "abortingPartitions": 0,
                 "totalDataToMove": int(self.total_mb),
                 "finishedDataMovement": int(self.finished_mb),
                 "maximumConcurrentPartitionMovementsPerBroker": PER_BROKER_CONCURRENCY,
                 "minimumConcurrentPartitionMovementsPerBroker": PER_BROKER_CONCURRENCY,
                 "averageConcurrentPartitionMovementsPerBroker": PER_BROKER_CONCURRENCY}
        return state


@dataclass
class ClockExecution(Execution):
    """The in-memory backend's execution: movements complete in order as accelerated time passes (partition
    movements, then moves between directories), each weighing its data (each the same when nothing is copied, so a
    shrink also takes its execution time); a stop takes effect at once, since nothing real is in flight."""

    cluster: Cluster | None = None
    duration_s: float = 0.5

    def _steps(self) -> list[ReplicaMove | IntraBrokerMove]:
        return [*self.moves, *self.intra_moves]

    def _boundaries(self) -> list[float]:
        steps = self._steps()
        weights = [m.data_to_move_mb if isinstance(m, ReplicaMove) else m.size_mb for m in steps]
        if sum(weights) <= 0:
            weights = [1.0] * len(steps)
        whole = sum(weights) or 1.0
        cumulative, boundaries = 0.0, []
        for weight in weights:
            cumulative += weight / whole
            boundaries.append(cumulative)
        return boundaries

    def _fraction(self) -> float:
        return min(1.0, (time.monotonic() - self.started) / self.duration_s) if self.duration_s > 0 else 1.0

    def _done(self) -> int:
        return self.finished_moves + self.intra_finished

    def _apply_until(self, fraction: float, boundaries: list[float]) -> None:
        assert self.cluster is not None
        steps = self._steps()
        while self._done() < len(steps) and boundaries[self._done()] <= fraction + 1e-9:
            step = steps[self._done()]
            if isinstance(step, ReplicaMove):
                self.cluster.apply(step)
                self.finished_moves += 1
            else:
                self.cluster.apply_intra(step)
                self.intra_finished += 1
        # Data moves smoothly within each phase, as bytes copied do.
        inter_share = boundaries[len(self.moves) - 1] if self.moves else 0.0
        self.finished_mb = self.total_mb * (min(1.0, fraction / inter_share) if inter_share > 0 else 1.0)
        intra_part = (fraction - inter_share) / (1.0 - inter_share) if inter_share < 1.0 else 1.0
        self.intra_finished_mb = self.total_intra_mb * max(0.0, min(1.0, intra_part))
        inter_left = self.finished_moves < len(self.moves)
        self.in_progress_moves = 1 if inter_left else 0
        self.intra_in_progress = 1 if not inter_left and self.intra_finished < len(self.intra_moves) else 0
        if not inter_left and self.intra_moves and self.intra_finished < len(self.intra_moves):
            self.phase = INTRA_BROKER

    async def run(self) -> None:
        boundaries = self._boundaries()
        tick = min(0.05, self.duration_s / 10) or 0.01
        while self._done() < len(self._steps()) and not self.stop_requested:
            await asyncio.sleep(tick)
            if not self.stop_requested:
                self._apply_until(self._fraction(), boundaries)

    def request_stop(self) -> bool:
        self.stop_requested = True
        self.cancelled_moves = len(self.moves) - self.finished_moves
        self.intra_cancelled = len(self.intra_moves) - self.intra_finished
        self.in_progress_moves = self.intra_in_progress = 0
        return True

    async def finish_orphaned(self) -> None:
        await asyncio.sleep(max(0.0, self.duration_s - (time.monotonic() - self.started)))
        self._apply_until(1.0, self._boundaries())
