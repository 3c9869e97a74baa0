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

This module has the requests, the actions and the step a rebalance takes next; ``proposals`` what Cruise Control's
proposals do to it, ``execution`` what its executions and stops do. The rules beside the state machine have modules
of their own: ``statuses`` (a status changed), ``scale_down``
(whether removed brokers are safe to remove), ``scaling`` (automatic rebalances when brokers join or leave),
``disks`` (remove-disks, drained directories, the intra-broker throttle, automatic disk rebalances) and
``failed_disks`` (a broker's log-directory status, fix-offline-replicas).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from events import Condition, RebalanceAction, RebalanceMode, RebalanceRequest, RebalanceState, RebalanceStatus
from events.conditions import CORDONS_CROSSED, DISKS_EMPTY, INVALID_ACTION, PROPOSAL_CHANGED, REQUEST_CHANGED
from services.adapters.cruise_control.errors import (
    ClusterModelNotReady,
    ConnectionFailed,
    CruiseControlError,
    MalformedAnswer,
)
from services.common.retry import backoff
from services.rebalancer import cordon_check
from services.rebalancer.statuses import TERMINAL, S, fresh, new_reason, update, without


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

def valid_actions(status: RebalanceStatus) -> frozenset[str]:
    """What the rebalance accepts now: its state's actions (none while a stop or refresh is under way), ``release``
    only where there are emptied directories to release (a remove-disks rebalance, not released yet)."""
    if status.stopping is not None:
        return frozenset()
    valid = VALID_ACTIONS[status.state]
    if why_not_release(status) is not None:
        valid -= {"release"}
    return valid


def why_not_release(status: RebalanceStatus) -> str | None:
    """Why the rebalance has nothing to release (None: it has, state permitting)."""
    if status.released:
        return "its directories are released already"
    if status.request.mode != RebalanceMode.REMOVE_DISKS or not status.removed_log_dirs:
        return "only a remove-disks rebalance that has emptied its directories has any to release"
    return None


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
        return fresh(request, now, current)
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
    return fresh(request, now, current)


def on_action(status: RebalanceStatus, action: RebalanceAction, now: datetime, *,
              max_drift_percent: float | None = None) -> RebalanceStatus:
    """``max_drift_percent``: an approval waits for the proposal to be asked again and stands only within this
    drift of the approved one (None: executes at once)."""
    valid = valid_actions(status)
    if action.action not in valid:
        allowed = ", ".join(sorted(valid)) or "none"
        why = why_not_release(status) if action.action == "release" else None
        warning = Condition(type=INVALID_ACTION, status="True", reason=INVALID_ACTION, last_transition_time=now,
                            message=f"Action {action.action!r} is not valid in state {status.state} "
                                    f"(valid: {allowed}){f': {why}' if why else ''}; ignored.")
        return update(status, now, conditions=[*without(status.conditions, INVALID_ACTION), warning])
    conditions = without(status.conditions, INVALID_ACTION)
    if action.action == "release":
        return release(update(status, now, conditions=conditions), now)
    if action.action == "refresh" and status.state != S.REBALANCING:
        return fresh(status.pending_request or status.request, now, status)
    if action.action == "approve" and cordon_check.held(status) and not action.accept_cordoned:
        crossed = status.condition(CORDONS_CROSSED)
        warning = Condition(type=INVALID_ACTION, status="True", reason="CordonsNotAccepted", last_transition_time=now,
                            message=f"Not approved: {crossed.message if crossed else 'the proposal crosses cordons'}")
        return update(status, now, conditions=[*conditions, warning])
    if action.action == "approve":
        # Accepted only for a proposal shown crossing cordons (an acceptance of nothing carries to no later one).
        accepted = status.cordons_accepted or (action.accept_cordoned and cordon_check.held(status))
        return approve(update(status, now, conditions=conditions, cordons_accepted=accepted), now,
                       check=max_drift_percent is not None)
    if status.state == S.PENDING_PROPOSAL:  # stop: a proposal being computed is simply abandoned
        return update(status, now, state=S.STOPPED, session_id=None, conditions=conditions, message=None,
                       next_attempt_at=None, attempts=0)
    # stop or refresh while executing: stop the execution first (Step.STOP), then Stopped or New
    return update(status, now, stopping=action.action, conditions=conditions, next_attempt_at=None)


def release(status: RebalanceStatus, now: datetime) -> RebalanceStatus:
    """A remove-disks rebalance's directories may take replicas again (``valid_actions`` says when)."""
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
    if cordon_check.held(status):  # auto-approval is never knowing: the operator approves it, or not
        return None
    if blocker := blocked_by(status, others):
        return hold(status, blocker, now)
    return approve(status, now)


# -- failures and refusals ---------------------------------------------------------------------------------------------

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


def refused(status: RebalanceStatus, message: str, now: datetime) -> RebalanceStatus:
    """A request that cannot be carried out as it stands (say, a volume the broker does not have): NotReady until it
    changes or is refreshed."""
    return update(status, now, state=S.NOT_READY, session_id=None, execution_reason=None, message=message,
                   next_attempt_at=None, progress=None)


def nothing_left(status: RebalanceStatus, now: datetime, message: str) -> RebalanceStatus:
    return update(status, now, state=S.READY, session_id=None, execution_reason=None, progress=None,
                   message=message, attempts=0, next_attempt_at=None)
