"""Pure logic of rebalances: Strimzi's KafkaRebalance state machine, as functions from a status (and what Cruise
Control or the cluster said) to the next status. No I/O.

    New -> PendingProposal -> ProposalReady -> Rebalancing -> Ready
                 |  (stop)          | (auto-approval, or approve and the proposal asked again has not drifted)
                 v                  v
              Stopped            NotReady (Cruise Control refused: bad goals, unknown broker, failed execution)

    Rebalancing -> Stopping (a stop: Cruise Control lets the movements in flight finish) -> Stopped

What Strimzi's users asked for (reference/strimzi.md), and this logic does:
- a Cruise Control restart never leaves a rebalance stuck: a forgotten proposal task is asked for again; a forgotten
  execution is judged from ``/state``: Cruise Control is asked for a new proposal for what is left, which is executed
  (or shown for approval again when it drifted past the limit), for brokers that still exist;
- connection errors, a Cruise Control warming up and a full servlet keep the state and retry.

The rules beside the state machine have modules of their own: ``statuses`` (a status changed), ``scale_down``
(whether removed brokers are safe to remove), ``scaling`` (automatic rebalances when brokers join or leave),
``disks`` (remove-disks, drained directories, the intra-broker throttle, automatic disk rebalances) and
``failed_disks`` (a broker's log-directory status, fix-offline-replicas).
"""

from __future__ import annotations

from dataclasses import dataclass
from collections.abc import Iterable
from datetime import datetime
from enum import StrEnum

from events import (
    BrokerLoadChange,
    Condition,
    ProposalSummary,
    RebalanceAction,
    RebalanceMode,
    RebalanceProgress,
    RebalanceRequest,
    RebalanceState,
    RebalanceStatus,
)
from services.common.cruise_control.errors import (
    ClusterModelNotReady,
    ConnectionFailed,
    CruiseControlError,
    MalformedAnswer,
)
from services.common.cruise_control.models import BrokerLoads, ExecutorState, OptimizationResult, TaskStatus, UserTask
from services.common.retry import backoff
from services.domain import drift
from services.rebalancer.statuses import TERMINAL, S, fresh, new_reason, update, without
from events.conditions import (
    DISKS_EMPTY,
    EXECUTION_INTERRUPTED,
    INVALID_ACTION,
    PROPOSAL_CHANGED,
    REQUEST_CHANGED,
)


# Strimzi's table: which action each state accepts. Anything else leaves the state as it is, with a warning.
VALID_ACTIONS: dict[RebalanceState, frozenset[str]] = {
    S.NEW: frozenset(),
    S.PENDING_PROPOSAL: frozenset({"stop", "refresh"}),
    S.PROPOSAL_READY: frozenset({"approve", "refresh"}),
    S.REBALANCING: frozenset({"stop", "refresh"}),
    S.STOPPING: frozenset(),
    S.READY: frozenset({"refresh", "release"}),
    S.NOT_READY: frozenset({"refresh", "release"}),
    S.STOPPED: frozenset({"refresh", "release"}),
}

# The reasons of ExecutionInterrupted (events.conditions): the new proposal checked, then executed.
CRUISE_CONTROL_RESTARTED = "CruiseControlRestarted"
NEW_PROPOSAL_EXECUTED = "NewProposalExecuted"
# Executor states in which Cruise Control runs no execution.
IDLE_EXECUTOR = frozenset({"NO_TASK_IN_PROGRESS", ""})


class Step(StrEnum):
    """What a rebalance needs from Cruise Control next."""

    PROPOSE = "propose"  # the mode's endpoint with dryrun=true (again with the task id while it computes)
    CHECK = "check"  # an approved proposal asked again (dryrun=true) to see whether it drifted (also after a restart)
    EXECUTE = "execute"  # the mode's endpoint with dryrun=false
    POLL = "poll"  # /state (and user_tasks when the executor is not on it) for the execution, or the stop
    STOP = "stop"  # stop_proposal_execution


# -- requests and actions -------------------------------------------------------------------------------------------

def on_request(current: RebalanceStatus | None, request: RebalanceRequest, now: datetime) -> RebalanceStatus | None:
    """A new or changed request starts over from New; the same request again changes nothing. While executing, the
    execution goes on: the new request waits for a refresh (a warning says so)."""
    if current is None or current.deleted:
        return fresh(request, now)
    if current.state == S.REBALANCING:
        if request == current.request:
            if current.pending_request is None:
                return None
            return update(current, now, pending_request=None, conditions=without(current.conditions, REQUEST_CHANGED))
        if request == current.pending_request:
            return None
        warning = Condition(type=REQUEST_CHANGED, status="True", reason=REQUEST_CHANGED, last_transition_time=now,
                            message="The request changed while rebalancing; the execution goes on with the previous "
                                    "request. Refresh to start over with the new one (this stops the execution).")
        return update(current, now, pending_request=request,
                       conditions=[*without(current.conditions, REQUEST_CHANGED), warning])
    if request == current.request:
        return None
    return fresh(request, now)


def on_action(status: RebalanceStatus, action: RebalanceAction, now: datetime, *,
              max_drift_percent: float | None = None) -> RebalanceStatus:
    """``max_drift_percent``: an approval waits for the proposal to be asked again and stands only within this
    drift of the approved one (None: executes at once)."""
    valid = VALID_ACTIONS[status.state]
    if status.stopping is not None:
        valid = frozenset()  # a stop or refresh is already under way
    if action.action not in valid:
        allowed = ", ".join(sorted(valid)) or "none"
        warning = Condition(type=INVALID_ACTION, status="True", reason=INVALID_ACTION, last_transition_time=now,
                            message=f"Action {action.action!r} is not valid in state {status.state} "
                                    f"(valid: {allowed}); ignored.")
        return update(status, now, conditions=[*without(status.conditions, INVALID_ACTION), warning])
    conditions = without(status.conditions, INVALID_ACTION)
    if action.action == "release":
        return release(update(status, now, conditions=conditions), now)
    if action.action == "refresh" and status.state != S.REBALANCING:
        return fresh(status.pending_request or status.request, now)
    if action.action == "approve":
        return approve(update(status, now, conditions=conditions), now, check=max_drift_percent is not None)
    if status.state == S.PENDING_PROPOSAL:  # stop: a proposal being computed is simply abandoned
        return update(status, now, state=S.STOPPED, session_id=None, conditions=conditions, message=None,
                       next_attempt_at=None, attempts=0)
    # stop or refresh while executing: stop the execution first (Step.STOP), then Stopped or New
    return update(status, now, stopping=action.action, conditions=conditions, next_attempt_at=None)


def release(status: RebalanceStatus, now: datetime) -> RebalanceStatus:
    """A remove-disks rebalance's directories may take replicas again."""
    if status.request.mode != RebalanceMode.REMOVE_DISKS or not status.removed_log_dirs:
        warning = Condition(type=INVALID_ACTION, status="True", reason=INVALID_ACTION, last_transition_time=now,
                            message="Action 'release' is only for a remove-disks rebalance that has emptied its "
                                    "directories; ignored.")
        return update(status, now, conditions=[*status.conditions, warning])
    if status.released:
        return status
    dirs = "; ".join(f"broker {d.broker}: {', '.join(d.log_dirs)}" for d in status.removed_log_dirs)
    return update(status, now, released=True, conditions=without(status.conditions, DISKS_EMPTY),
                   message=f"Directories released ({dirs}); placement may use them again")


def drift_limit(request: RebalanceRequest, default: float | None) -> float | None:
    """How far the proposal may drift between an approval and the execution: the request's own limit, else the
    rebalancer's; None: not checked."""
    return request.approval_max_drift_percent if request.approval_max_drift_percent is not None else default


def approve(status: RebalanceStatus, now: datetime, *, check: bool = False,
            message: str = "Approved; starting the execution") -> RebalanceStatus:
    """To execution; with ``check``, first to Cruise Control again for the proposal it would execute now."""
    conditions = without(status.conditions, PROPOSAL_CHANGED)
    if check:
        return update(status, now, checking_approval=True, session_id=None, attempts=0, next_attempt_at=None,
                       conditions=conditions,
                       message="Approved; asking Cruise Control for the proposal again before executing it")
    return update(status, now, state=S.REBALANCING, checking_approval=False, session_id=None,
                   execution_reason=new_reason(), progress=None, executed_summary=None, attempts=0,
                   next_attempt_at=None, conditions=conditions, message=message)


def blocked_by(status: RebalanceStatus, others: Iterable[RebalanceStatus]) -> str | None:
    """Scale-down first: an automatic scale-up rebalance waits while an automatic scale-down one is unfinished."""
    if status.request.scaling != "up":
        return None
    for other in others:
        if other.request.scaling == "down" and other.state not in TERMINAL and not other.deleted:
            return other.name
    return None


def next_step(status: RebalanceStatus, others: Iterable[RebalanceStatus], now: datetime) -> Step | None:
    if status.deleted or (status.next_attempt_at is not None and status.next_attempt_at > now):
        return None
    if status.state in (S.NEW, S.PENDING_PROPOSAL):
        return None if status.state == S.NEW and blocked_by(status, others) else Step.PROPOSE
    if status.state == S.PROPOSAL_READY and status.checking_approval:
        return Step.CHECK
    if status.state == S.REBALANCING:
        if status.stopping is not None:
            return Step.STOP
        if status.checking_approval:
            return Step.CHECK
        return Step.EXECUTE if status.session_id is None else Step.POLL
    if status.state == S.STOPPING:
        return Step.POLL
    return None


@dataclass(frozen=True)
class Move:
    """What a rebalance does at a tick: a request to Cruise Control (``step``), or only a new status (``status``,
    None when nothing changes)."""
    step: Step | None = None
    status: RebalanceStatus | None = None


def next_move(status: RebalanceStatus, others: Iterable[RebalanceStatus], now: datetime) -> Move:
    """A ready proposal of an auto-approved request goes to execution, a new request waiting for a scale-down says so;
    everything else is ``next_step``'s."""
    others = list(others)
    if status.state == S.PROPOSAL_READY and not status.checking_approval:
        return Move(status=auto_approved(status, others, now))
    if status.state == S.NEW and (blocker := blocked_by(status, others)):
        return Move(status=hold(status, blocker, now))
    return Move(step=next_step(status, others, now))


def hold(status: RebalanceStatus, blocker: str, now: datetime) -> RebalanceStatus | None:
    message = f"Waiting for the scale-down rebalance {blocker!r} to finish first"
    return None if status.message == message else update(status, now, message=message)


def auto_approved(status: RebalanceStatus, others: Iterable[RebalanceStatus], now: datetime) -> RebalanceStatus | None:
    """A ready proposal of an auto-approved request goes straight to execution (scale-down ones first)."""
    if status.state != S.PROPOSAL_READY or not status.request.auto_approve:
        return None
    if blocker := blocked_by(status, others):
        return hold(status, blocker, now)
    return approve(status, now)


# -- proposals ------------------------------------------------------------------------------------------------------

def begin_proposal(status: RebalanceStatus, now: datetime) -> RebalanceStatus | None:
    if status.state == S.NEW:
        return update(status, now, state=S.PENDING_PROPOSAL, message="Asking Cruise Control for a proposal")
    return None


def summary_of(result: OptimizationResult) -> ProposalSummary:
    s = result.summary
    return ProposalSummary(
        num_replica_movements=s.num_replica_movements, num_leader_movements=s.num_leader_movements,
        data_to_move_mb=s.data_to_move_mb, num_intra_broker_replica_movements=s.num_intra_broker_replica_movements,
        intra_broker_data_to_move_mb=s.intra_broker_data_to_move_mb,
        on_demand_balancedness_score_before=s.balancedness_before,
        on_demand_balancedness_score_after=s.balancedness_after, recent_windows=s.recent_windows,
        monitored_partitions_percentage=s.monitored_partitions_percentage, excluded_topics=s.excluded_topics,
        provision_status=s.provision_status)


def broker_load_of(result: OptimizationResult) -> list[BrokerLoadChange]:
    """Per broker, before and after (``loadBeforeOptimization`` comes with verbose=true)."""
    empty = BrokerLoads()
    before = (result.load_before_optimization or empty).by_broker()
    after = (result.load_after_optimization or empty).by_broker()
    known = result.load_before_optimization is not None
    changes = []
    for broker in sorted(set(before) | set(after)):
        b, a = before.get(broker), after.get(broker)
        changes.append(BrokerLoadChange(
            broker=broker, replicas_after=a.replicas if a else 0, leaders_after=a.leaders if a else 0,
            disk_mb_after=a.disk_mb if a else 0.0,
            replicas_before=(b.replicas if b else 0) if known else None,
            leaders_before=(b.leaders if b else 0) if known else None,
            disk_mb_before=(b.disk_mb if b else 0.0) if known else None))
    return changes


def on_proposal(status: RebalanceStatus, task_id: str, result: OptimizationResult | None,
                now: datetime) -> RebalanceStatus:
    """Cruise Control's answer to the dry run: still computing (``result`` None, the 202), or the proposal."""
    if result is None:
        return update(status, now, state=S.PENDING_PROPOSAL, session_id=task_id,
                       message="Cruise Control is computing the proposal")
    summary = summary_of(result)
    fields: dict[str, object] = dict(session_id=None, summary=summary, broker_load=broker_load_of(result),
                                     attempts=0, next_attempt_at=None, progress=None)
    if _nothing_to_move(summary):
        return update(status, now, state=S.READY, message="Nothing to move: the cluster already meets the goals",
                       **fields)
    return update(status, now, state=S.PROPOSAL_READY, message=None, **fields)


def on_check(status: RebalanceStatus, task_id: str, result: OptimizationResult | None, now: datetime, *,
             max_drift_percent: float) -> RebalanceStatus:
    """The proposal asked again after an approval: still computing; nothing left to move (Ready); within the
    limit of the approved one (to execution); or drifted past it (back to ProposalReady with the new proposal and a
    ``ProposalChanged`` condition: the operator approves again, or not). After Cruise Control forgot an execution
    (``ExecutionInterrupted``), the new proposal is held to what was left of the one executing."""
    if result is None:
        return update(status, now, session_id=task_id,
                       message="Cruise Control is computing the proposal again before executing it")
    fresh = summary_of(result)
    interrupted = status.condition(EXECUTION_INTERRUPTED)
    if interrupted is not None and interrupted.reason == CRUISE_CONTROL_RESTARTED:
        return _after_interruption(status, result, fresh, now, max_drift_percent)
    if status.summary is None or _nothing_to_move(fresh):
        return on_proposal(update(status, now, checking_approval=False), task_id, result, now)
    compared = drift.comparison(status.summary, fresh)
    if drift.drift_percent(status.summary, fresh) <= max_drift_percent:
        return approve(status, now, message=f"Approved; the proposal asked again just before executing is within "
                                            f"{max_drift_percent:g}% of the approved one ({compared})")
    message = (f"Approval refused: the proposal drifted more than {max_drift_percent:g}% from the approved one "
               f"({compared}): {drift.why(status.summary, fresh)}. The new proposal is shown; approve it, or "
               "refresh later.")
    return _drifted(status, result, fresh, message, now)


def _drifted(status: RebalanceStatus, result: OptimizationResult, fresh: ProposalSummary, message: str,
             now: datetime) -> RebalanceStatus:
    condition = Condition(type=PROPOSAL_CHANGED, status="True", reason="ProposalDrifted", last_transition_time=now,
                          message=message)
    return update(status, now, state=S.PROPOSAL_READY, checking_approval=False, session_id=None, summary=fresh,
                   broker_load=broker_load_of(result), message=message, progress=None, executed_summary=None,
                   conditions=[*without(status.conditions, PROPOSAL_CHANGED, EXECUTION_INTERRUPTED), condition])


def _after_interruption(status: RebalanceStatus, result: OptimizationResult, fresh: ProposalSummary,
                        now: datetime, max_drift_percent: float) -> RebalanceStatus:
    """Cruise Control's new proposal after it forgot the execution: a proposal of its own, computed on the cluster
    as the interrupted execution left it, not "the remaining movements". Said with its figures; executed when it is
    within the limit of what was left (or auto-approved), shown for approval again otherwise."""
    conditions = without(status.conditions, EXECUTION_INTERRUPTED)
    if _nothing_to_move(fresh):
        return nothing_left(update(status, now, conditions=conditions, checking_approval=False), now,
                            "Rebalance complete: Cruise Control restarted during the execution, and its new "
                            "proposal moves nothing more")
    left = drift.left_after(status.executed_summary or status.summary, status.progress)
    figures = drift.describe(fresh)
    if left is None or status.request.auto_approve or drift.drift_percent(left, fresh) <= max_drift_percent:
        replaced = f"what was left of the interrupted one ({drift.describe(left)})" if left is not None \
            else "the interrupted one"
        message = f"Cruise Control restarted during the execution; its new proposal ({figures}) replaced {replaced}"
        # Said for as long as it executes, and kept once done (so worded for both): what ran is not what was approved.
        restarted = Condition(type=EXECUTION_INTERRUPTED, status="False", reason=NEW_PROPOSAL_EXECUTED,
                              last_transition_time=now, message=message)
        approved = approve(update(status, now, conditions=[*conditions, restarted]), now, message=message)
        return approved.model_copy(update={"summary": fresh, "broker_load": broker_load_of(result)})
    message = (f"Cruise Control restarted during the execution; its new proposal ({figures}) differs by more than "
               f"{max_drift_percent:g}% from what was left of the interrupted one ({drift.describe(left)}). The new "
               "proposal is shown; approve it to go on, or refresh later.")
    return _drifted(update(status, now, conditions=conditions), result, fresh, message, now)


def _nothing_to_move(summary: ProposalSummary) -> bool:
    return summary.num_replica_movements == 0 and summary.num_leader_movements == 0 \
        and summary.num_intra_broker_replica_movements == 0


def on_failure(status: RebalanceStatus, error: CruiseControlError, now: datetime, *, initial_s: float,
               max_s: float) -> RebalanceStatus:
    """A request to Cruise Control failed. A refusal of the request itself (bad goals, unknown broker) is
    permanent: NotReady until the request changes or is refreshed. Everything else (unreachable, warming up, servlet
    full, another execution running) keeps the state and retries: with backoff, or at a steady pace while Cruise
    Control warms up (it is ready again within a minute or two)."""
    # An execution request answered in a way that cannot be read may have been taken: retried, its reason finds it.
    in_doubt = isinstance(error, MalformedAnswer) and status.execution_reason is not None
    if not error.temporary and not in_doubt:
        return update(status, now, state=S.NOT_READY, session_id=None, execution_reason=None, message=error.message,
                       next_attempt_at=None, progress=None, checking_approval=False)
    warming = isinstance(error, ClusterModelNotReady)
    attempts = status.attempts if warming else status.attempts + 1
    delay = backoff(1 if warming else attempts, initial_s=initial_s, max_s=max_s)
    # A proposal task Cruise Control may have forgotten is asked for anew.
    session = None if status.state in (S.PENDING_PROPOSAL, S.PROPOSAL_READY) or status.checking_approval \
        else status.session_id
    reason = status.execution_reason
    if reason is not None and not isinstance(error, (ConnectionFailed, MalformedAnswer)):
        # Cruise Control answered, so that request is settled (failed): the next one gets a reason of its own. After
        # a connection failure, or an answer that could not be read, the request may have arrived: the reason finds it.
        reason = new_reason()
    message = f"{error.message}; waiting for it" if warming else \
        f"{error.message}; retrying in {delay.total_seconds():.0f} s"
    return update(status, now, message=message, attempts=attempts, next_attempt_at=now + delay, session_id=session,
                   execution_reason=reason)


def quiet(status: RebalanceStatus, error: CruiseControlError) -> bool:
    """A failure retried without a word: a full servlet says nothing about the rebalance; a warm-up already said."""
    return error.quiet or (isinstance(error, ClusterModelNotReady) and (status.message or "").startswith(
        error.message.split(" (")[0]))


# -- execution ------------------------------------------------------------------------------------------------------

def refused(status: RebalanceStatus, message: str, now: datetime) -> RebalanceStatus:
    """A request that cannot be carried out as it stands (say, a volume the broker does not have): NotReady until it
    changes or is refreshed."""
    return update(status, now, state=S.NOT_READY, session_id=None, execution_reason=None, message=message,
                   next_attempt_at=None, progress=None)


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
                      executed_summary=executed)
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


def executed_summary_of(task: UserTask) -> ProposalSummary | None:
    """The proposal an execution task computed, from its original response (user_tasks, fetch_completed_task)."""
    original = task.original_result()
    if not original or "summary" not in original:
        return None
    try:
        return summary_of(OptimizationResult.model_validate(original))
    except ValueError:
        return None


def nothing_left(status: RebalanceStatus, now: datetime, message: str) -> RebalanceStatus:
    return update(status, now, state=S.READY, session_id=None, execution_reason=None, progress=None,
                   message=message, attempts=0, next_attempt_at=None)


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
        executed = status.executed_summary or executed_summary_of(task)
        message = executing_message(status.model_copy(update={"executed_summary": executed}))
        if (progress, message, executed) == (status.progress, status.message, status.executed_summary):
            return None
        return update(status, now, progress=progress or status.progress, message=message, executed_summary=executed)
    if task.status == TaskStatus.COMPLETED:
        executed = status.executed_summary or executed_summary_of(task)
        return nothing_left(status.model_copy(update={"executed_summary": executed}), now, "Rebalance complete")
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
        return fresh(status.pending_request or status.request, now)
    return update(status, now, state=S.STOPPED, stopping=None, session_id=None, execution_reason=None,
                   message=f"Stopped; by Cruise Control's last report, {drift.moved_and_left(status.progress)}",
                   next_attempt_at=None, attempts=0)


def data_moved_percent(status: RebalanceStatus) -> float | None:
    """How far a rebalance's execution is, for the metrics: its progress while Rebalancing, 100 once Ready."""
    if status.state == S.READY:
        return 100.0
    if status.state == S.REBALANCING and status.progress is not None:
        return status.progress.percent_data_moved
    return None
