"""What Cruise Control's executions do to a rebalance (pure functions, no I/O): the execution request's task, its
progress from the executor, an execution Cruise Control forgot, and a stop."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from events import Condition, RebalanceProgress, RebalanceStatus
from events.conditions import EXECUTION_INTERRUPTED
from services.adapters.cruise_control.models import ExecutorState, OptimizationResult, TaskStatus, UserTask
from services.domain import drift
from services.rebalancer.logic import CRUISE_CONTROL_RESTARTED, IDLE_EXECUTOR, NEW_PROPOSAL_EXECUTED, nothing_left
from services.rebalancer import replication_throttle
from services.rebalancer.proposals import summary_of
from services.rebalancer.statuses import S, fresh, stopped_message, update, without


def execution_brokers(status: RebalanceStatus, existing: Iterable[int]) -> list[int]:
    """Brokers an execution names: for add / remove, only those still in the cluster (a broker removed after its
    replicas moved off must not be named again: Cruise Control would refuse the whole request)."""
    present = set(existing)
    return [b for b in status.request.brokers if b in present]


def find_execution(status: RebalanceStatus, tasks: Iterable[UserTask]) -> UserTask | None:
    """The task an execution request created, found by the reason it carried (after a crash or a timeout)."""
    if not status.execution_reason:
        return None
    # A task that failed is not adopted: the request is simply made again.
    return next((t for t in tasks if t.reason() == status.execution_reason
                 and t.status != TaskStatus.COMPLETED_WITH_ERROR), None)


def on_execution_started(status: RebalanceStatus, task_id: str, now: datetime,
                         result: OptimizationResult | None = None) -> RebalanceStatus:
    """``result``: the proposal the execution request computed, when Cruise Control answered with it (200)."""
    executed = summary_of(result) if result is not None else status.executed_summary
    started = update(status, now, session_id=task_id, execution_reason=None, attempts=0, next_attempt_at=None,
                      executed_summary=executed,
                      cruise_control_throttle=replication_throttle.recorded(status, result))
    return started.model_copy(update={"message": executing_message(started)})


def executing_message(status: RebalanceStatus) -> str:
    """Says so when the proposal executed is not the one shown, and why they differ (or that it is Cruise Control's
    new proposal after a restart)."""
    restarted = status.condition(EXECUTION_INTERRUPTED)
    if restarted is not None and restarted.reason == NEW_PROPOSAL_EXECUTED and restarted.message:
        return restarted.message
    approved, executed = status.summary, status.executed_summary
    if approved is None or executed is None or not drift.differs(approved, executed):
        return "Executing the proposal"
    return (f"Executing the proposal Cruise Control computed again at execution, not quite the approved one "
            f"({drift.comparison(approved, executed)}): {drift.why(approved, executed)}")


def executed_result_of(task: UserTask) -> OptimizationResult | None:
    """The proposal an execution task computed, from its original response (user_tasks, fetch_completed_task)."""
    original = task.original_result()
    if not original or "summary" not in original:
        return None
    try:
        return OptimizationResult.model_validate(original)
    except ValueError:
        return None


def _learnt(status: RebalanceStatus, task: UserTask) -> RebalanceStatus:
    """The executed proposal's summary and throttle, from its task, when the execution's answer did not give them
    (202: still computing)."""
    if status.executed_summary is not None:
        return status
    result = executed_result_of(task)
    if result is None:
        return status
    return status.model_copy(update={"executed_summary": summary_of(result),
                                     "cruise_control_throttle": replication_throttle.recorded(status, result)})


def progress_of(executor: ExecutorState | None, status: RebalanceStatus, now: datetime,
                task: UserTask | None = None) -> RebalanceProgress | None:
    """The execution's progress, from the executor working on this rebalance's task (None when it is not, or when
    it reports no figures: the real one's STOPPING_EXECUTION reports only what is in flight)."""
    if executor is None or executor.triggered_user_task_id != status.session_id:
        return None
    if executor.num_total_partition_movements is None and executor.num_total_intra_broker_partition_movements is None:
        return None
    total = float(executor.total_data_to_move or 0)
    finished = float(executor.finished_data_movement or 0)
    total_intra = float(executor.total_intra_broker_data_to_move or 0)
    finished_intra = float(executor.finished_intra_broker_data_movement or 0)
    # Cruise Control reports the figures of the phase in progress: between brokers, then between directories.
    all_total, all_finished = total + total_intra, finished + finished_intra
    percent = 100.0 * all_finished / all_total if all_total > 0 else 0.0
    eta = None
    started = int(task.start_ms) / 1000.0 if task is not None else None
    if started is not None and all_finished > 0 and now.timestamp() > started:
        eta = round((all_total - all_finished) / (all_finished / (now.timestamp() - started)), 1)
    elif status.progress is not None:
        eta = status.progress.estimated_seconds_to_completion
    return RebalanceProgress(
        executor_state=executor.state, finished_data_mb=finished, total_data_mb=total,
        finished_partition_movements=executor.num_finished_partition_movements or 0,
        total_partition_movements=executor.num_total_partition_movements or 0,
        in_progress_partition_movements=executor.num_in_progress_partition_movements or 0,
        percent_data_moved=round(percent, 1), estimated_seconds_to_completion=eta,
        finished_intra_broker_data_mb=finished_intra, total_intra_broker_data_mb=total_intra,
        finished_intra_broker_partition_movements=executor.num_finished_intra_broker_partition_movements or 0,
        total_intra_broker_partition_movements=executor.num_total_intra_broker_partition_movements or 0)


def executor_on(status: RebalanceStatus, executor: ExecutorState | None) -> bool:
    """Whether Cruise Control's executor is working on this rebalance's task."""
    return executor is not None and executor.state not in IDLE_EXECUTOR and bool(status.session_id) \
        and executor.triggered_user_task_id == status.session_id


def on_executing(status: RebalanceStatus, executor: ExecutorState | None, now: datetime) -> RebalanceStatus | None:
    """A look at the executor while it works on this rebalance: its progress (None when nothing changed)."""
    progress = progress_of(executor, status, now)
    if progress is None or progress == status.progress:
        return None
    return update(status, now, progress=progress)


def on_poll(status: RebalanceStatus, task: UserTask | None, executor: ExecutorState | None,
            now: datetime) -> RebalanceStatus | None:
    """The execution's task and the executor's state; None when nothing changed."""
    if status.state == S.STOPPING:
        return on_stopping(status, executor, now, task)
    if task is None:
        return _forgotten(status, executor, now)
    if task.status in (TaskStatus.ACTIVE, TaskStatus.IN_EXECUTION):
        progress = progress_of(executor, status, now, task)
        learnt = _learnt(status, task)
        message = executing_message(learnt)
        if (progress, message) == (status.progress, status.message) and learnt is status:
            return None
        return update(learnt, now, progress=progress or status.progress, message=message)
    if task.status == TaskStatus.COMPLETED:
        return nothing_left(_learnt(status, task), now, "Rebalance complete")
    error = (task.original_result() or {}).get("errorMessage") or "the execution completed with an error"
    return update(status, now, state=S.NOT_READY, session_id=None, progress=None, message=str(error))


def _forgotten(status: RebalanceStatus, executor: ExecutorState | None, now: datetime) -> RebalanceStatus | None:
    """Cruise Control no longer knows the execution's task: it restarted. If its executor still runs something,
    wait for it; otherwise ask it for a new proposal for what is left (``on_check`` decides what to do with it)."""
    lost = f"Cruise Control no longer knows task {status.session_id} (restarted?)"
    if executor is not None and executor.state not in IDLE_EXECUTOR:
        message = f"{lost}; an execution is still in progress, waiting for it"
        return None if status.message == message else update(status, now, message=message)
    condition = Condition(type=EXECUTION_INTERRUPTED, status="True", reason=CRUISE_CONTROL_RESTARTED,
                          last_transition_time=now, message=f"{lost} during the execution")
    return update(status, now, session_id=None, execution_reason=None, checking_approval=True,
                   conditions=[*without(status.conditions, EXECUTION_INTERRUPTED), condition],
                   message=f"{lost}; asking it for a new proposal for what is left")


def on_stop_sent(status: RebalanceStatus, now: datetime) -> RebalanceStatus:
    """Cruise Control took the stop: it starts no more movements and lets those in flight finish."""
    if status.session_id is None:
        return stopped(status, now)
    return update(status, now, state=S.STOPPING, next_attempt_at=None, attempts=0,
                   message="Stopping: Cruise Control starts no more movements and lets those in flight finish")


def on_stopping(status: RebalanceStatus, executor: ExecutorState | None, now: datetime,
                task: UserTask | None = None) -> RebalanceStatus | None:
    """While stopping: the executor's figures, until it no longer runs this rebalance's execution."""
    if executor_on(status, executor):
        progress = progress_of(executor, status, now, task)
        return None if progress is None or progress == status.progress else update(status, now, progress=progress)
    return stopped(status, now)


def stopped(status: RebalanceStatus, now: datetime) -> RebalanceStatus:
    """The execution has ended after a stop: Stopped with what was moved and what was left (or, for a refresh, New
    again)."""
    if status.stopping == "refresh":
        return fresh(status.pending_request or status.request, now, status)
    return update(status, now, state=S.STOPPED, stopping=None, session_id=None, execution_reason=None,
                   message=stopped_message(status.progress), next_attempt_at=None, attempts=0)


def data_moved_percent(status: RebalanceStatus) -> float | None:
    """How far a rebalance's execution is, for the metrics: its progress while Rebalancing, 100 once Ready."""
    if status.state == S.READY:
        return 100.0
    if status.state == S.REBALANCING and status.progress is not None:
        return status.progress.percent_data_moved
    return None
