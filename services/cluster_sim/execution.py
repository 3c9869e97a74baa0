"""The executor's side of an execution: the movements of one proposal, their progress, and how to stop them.

Cruise Control's executor (``Executor.ProposalExecutionRunnable``) runs a proposal in phases: inter-broker replica
movements (partition reassignments, a few per broker at a time, under the request's replication throttle), then
intra-broker movements (between the log directories of a broker, ``concurrent_intra_broker_partition_movements`` per
broker, never throttled by Cruise Control), then leadership movements (preferred leader elections). A stop drops what
has not started and lets what is in flight finish (the executor says STOPPING_EXECUTION until it has; measured on the
real one: up to 84 s); ``force_stop`` rolls back what is in flight instead. The user task then ends
``CompletedWithError``. Each backend of the simulator executes differently (over
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

    def request_stop(self, *, force: bool = False) -> None:
        """Ask the execution to stop: nothing new starts; what is in flight finishes (``force``: is rolled back)."""
        raise NotImplementedError

    async def finish_orphaned(self) -> None:
        """After a Cruise Control restart: what was handed to the cluster still finishes there, unreported."""
        raise NotImplementedError

    def state(self, reason: str, *, verbose: bool = False) -> dict[str, Any]:
        """``ExecutorState`` as Cruise Control's ``/state`` reports it for the current phase (``verbose``: with the
        movements listed)."""
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
                    "averageConcurrentLeaderMovementsPerBroker": 250.0,
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
                    "averageConcurrentIntraBrokerPartitionMovementsPerBroker": float(self.intra_concurrency)}
        state = {**base,
                 "numTotalPartitionMovements": len(self.moves),
                 "numFinishedPartitionMovements": self.finished_moves,
                 "numInProgressPartitionMovements": self.in_progress_moves,
                 "numPendingPartitionMovements": 0 if self.phase == STOPPING else pending,
                 "abortingPartitions": 0,
                 "totalDataToMove": int(self.total_mb),
                 "finishedDataMovement": int(self.finished_mb),
                 "maximumConcurrentPartitionMovementsPerBroker": PER_BROKER_CONCURRENCY,
                 "minimumConcurrentPartitionMovementsPerBroker": PER_BROKER_CONCURRENCY,
                 "averageConcurrentPartitionMovementsPerBroker": float(PER_BROKER_CONCURRENCY)}
        if self.phase == STOPPING:
            state["numCancelledPartitionMovements"] = pending + self.cancelled_moves
        if verbose:
            state.update(self._movement_lists())
        return state

    def _movement_lists(self) -> dict[str, list[dict[str, Any]]]:
        """The movements by state, each as the executor lists them (verbose)."""
        lists: dict[str, list[dict[str, Any]]] = {name: [] for name in (
            "completedPartitionMovement", "inProgressPartitionMovement", "pendingPartitionMovement",
            "abortingPartitionMovement", "abortedPartitionMovement", "deadPartitionMovement")}
        done, running = self.finished_moves, self.in_progress_moves
        for execution_id, move in enumerate(self.moves):
            if execution_id < done:
                name, state = "completedPartitionMovement", "COMPLETED"
            elif execution_id < done + running:
                name, state = "inProgressPartitionMovement", "IN_PROGRESS"
            else:
                name, state = "pendingPartitionMovement", "PENDING"
            lists[name].append({
                "proposal": {"oldLeader": move.old_replicas[0] if move.old_replicas else -1,
                             "oldReplicas": list(move.old_replicas), "newReplicas": list(move.new_replicas),
                             "topicPartition": {"hash": hash((move.topic, move.partition)) & 0x7FFFFFFF,
                                                "partition": move.partition, "topic": move.topic}},
                "executionId": execution_id, "state": state, "type": "INTER_BROKER_REPLICA_ACTION"})
        return lists


@dataclass
class ClockExecution(Execution):
    """The in-memory backend's execution: movements complete in order as accelerated time passes (partition
    movements, then moves between directories), each weighing its data (each the same when nothing is copied, so a
    shrink also takes its execution time); one movement is in flight at a time, and a stop lets it finish."""

    cluster: Cluster | None = None
    duration_s: float = 0.5
    _stopped_after: int | None = None

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
        while self._done() < self._last_step() and boundaries[self._done()] <= fraction + 1e-9:
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
        if not inter_left and self.intra_moves and self.intra_finished < len(self.intra_moves) \
                and not self.stop_requested:
            self.phase = INTRA_BROKER

    async def run(self) -> None:
        boundaries = self._boundaries()
        tick = min(0.05, self.duration_s / 10) or 0.01
        while self._done() < self._last_step():
            await asyncio.sleep(tick)
            self._apply_until(self._fraction(), boundaries)
        if self.stop_requested:
            self.cancelled_moves = len(self.moves) - self.finished_moves
            self.intra_cancelled = len(self.intra_moves) - self.intra_finished
            self.in_progress_moves = self.intra_in_progress = 0

    def _last_step(self) -> int:
        """How many steps run: all of them, or after a stop those already started (the one in flight finishes)."""
        if not self.stop_requested:
            return len(self._steps())
        return self._stopped_after if self._stopped_after is not None else self._done()

    def request_stop(self, *, force: bool = False) -> None:
        if self.stop_requested:
            return
        self.stop_requested = True
        self.phase = STOPPING
        # The step in flight is the next one, unless a step boundary was just reached (nothing in flight).
        self._stopped_after = self._done() if force else min(len(self._steps()), self._done() + 1)

    async def finish_orphaned(self) -> None:
        await asyncio.sleep(max(0.0, self.duration_s - (time.monotonic() - self.started)))
        self.stop_requested, self._stopped_after = False, None  # nobody stops what Kafka was handed
        self._apply_until(1.0, self._boundaries())
