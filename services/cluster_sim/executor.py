"""The simulated Cruise Control's executor: which execution runs, when one may start, and what becomes of it.

As the real one's ``Executor``: one execution at a time (a new one is refused while another runs, in this Cruise
Control or, after a restart, still in Kafka); its task ``InExecution`` from its start to its end, then Completed or
CompletedWithError; a stop answered at once; the brokers a remove_broker execution emptied kept out of later
proposals for ``removal.history.retention.time.ms``; after a restart nothing reported, though what was handed to Kafka
still finishes there. How an execution moves replicas is the backend's (``execution.py``, ``kafka_execution.py``).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Coroutine
from typing import Any

from services.cluster_sim import responses
from services.cluster_sim.backend import Backend
from services.cluster_sim.execution import INTRA_BROKER_CONCURRENCY, Execution
from services.cluster_sim.model import Proposal
from services.cluster_sim.proposals import CruiseControlFailure
from services.cluster_sim.tuning import SimTuning
from services.cluster_sim.user_tasks import SimTask, UserTaskManager
from services.common.logging import get_logger

log = get_logger(__name__)

ONGOING = ("Cannot start a new execution while there is an ongoing execution. Please use stop_ongoing_execution=true "
           "to stop ongoing execution and start a new one.")
REMOVAL_HISTORY_S = 14 * 24 * 3600.0  # removal.history.retention.time.ms

# Runs a coroutine in the background, holding on to its task until it ends.
Spawn = Callable[[Coroutine[Any, Any, None]], asyncio.Task[None]]


class Executor:
    def __init__(self, backend: Backend, *, tuning: Callable[[], SimTuning], tasks: Callable[[], UserTaskManager],
                 spawn: Spawn) -> None:
        """``tuning`` and ``tasks``: the owner's current ones, read at each use (a test replaces the tuning, a
        restart the task manager)."""
        self.backend = backend
        self._tuning = tuning
        self._tasks = tasks
        self._spawn = spawn
        self.execution: Execution | None = None
        self._execution_task: SimTask | None = None
        self._runner: asyncio.Task[None] | None = None
        # Executions a restart orphaned: their reassignments are still running in Kafka.
        self.orphaned = 0
        # Brokers a remove_broker execution emptied, and when (kept out of later proposals for the retention).
        self.removed_brokers: dict[int, float] = {}

    async def refuse_while_busy(self, endpoint: str, *, method: str) -> None:
        """A new execution is refused while one runs: this executor's, a restart's orphan, or reassignments Kafka
        reports that no execution of this Cruise Control tracks."""
        if self.execution is not None or self.orphaned or await self.backend.reassignments_in_progress():
            raise CruiseControlFailure(500, responses.error_body(method, endpoint, ONGOING,
                                                                 "java.lang.IllegalStateException"))

    def start(self, task: SimTask, proposal: Proposal, *, throttle_bytes_s: int | None, concurrency: int | None,
              intra_concurrency: int | None, leaving: list[int]) -> None:
        """The proposal executed; its task, already answered, is InExecution until the execution ends."""
        self._tasks().began_execution(task)
        t = self._tuning()
        execution = self.backend.execution(
            task.id, proposal.moves, throttle_bytes_s, time_scale=t.time_scale,
            bandwidth_mb_s=t.replica_bandwidth_mb_s, min_execution_s=t.min_execution_s,
            check_interval_s=t.execution_check_s, movements_per_broker=concurrency or t.movements_per_broker,
            intra_moves=proposal.intra, intra_per_broker=intra_concurrency or INTRA_BROKER_CONCURRENCY)
        self.execution, self._execution_task = execution, task
        self._runner = self._spawn(self._execute(execution, task, leaving))

    async def _execute(self, execution: Execution, task: SimTask, leaving: list[int]) -> None:
        try:
            await execution.run()  # cancelled by a restart, which forgets the task
        except Exception as exc:  # noqa: BLE001 - as the real executor: whatever ends an execution ends its task
            # Left to escape, it kept the executor busy for good: this task InExecution for ever and every later
            # execution refused as ongoing.
            execution.error = f"{type(exc).__name__}: {exc}"
            log.warning("execution failed", task=task.id, error=execution.error)
        if self.execution is execution:
            self.execution = self._execution_task = None
        if not execution.ended_with_error:
            now = time.monotonic()
            self.removed_brokers.update({b: now for b in leaving})
        self._tasks().finished_execution(task, with_error=execution.ended_with_error)

    def stop(self, *, force: bool = False) -> dict[str, Any]:
        """stop_proposal_execution: answered at once. Movements not started are dropped; those in flight finish
        (the executor is STOPPING_EXECUTION until they have), and the task then ends CompletedWithError."""
        if self.execution is not None:
            self.execution.request_stop(force=force)
        return {"message": "Proposal execution stopped.", "version": 1}

    def state(self, verbose: bool = False) -> dict[str, Any]:
        """``ExecutorState``, as ``/state`` reports it."""
        ex, task = self.execution, self._execution_task
        if ex is None or task is None:
            return {"state": "NO_TASK_IN_PROGRESS"}
        return ex.state(task.execution_reason(), verbose=verbose)

    def recently_removed(self, exclude: list[int] | None = None) -> set[int]:
        """The brokers removed within the retention (but those of ``exclude``, which a request names again)."""
        now = time.monotonic()
        return {b for b, at in self.removed_brokers.items()
                if now - at < REMOVAL_HISTORY_S and b not in (exclude or [])}

    def forget(self) -> None:
        """A restart: the removal history and the execution forgotten. Reassignments already handed to Kafka still
        finish in the cluster; until they have, a new execution is refused."""
        self.removed_brokers.clear()
        if self.execution is not None:
            orphan = self.execution
            self.execution = self._execution_task = None
            if self._runner is not None:
                self._runner.cancel()
            self._spawn(self._finish_orphan(orphan))

    async def _finish_orphan(self, orphan: Execution) -> None:
        self.orphaned += 1
        try:
            await orphan.finish_orphaned()
        finally:
            self.orphaned -= 1
