"""What Cruise Control's proposals do to a rebalance (pure functions, no I/O): the dry run's answer, the proposal
asked again after an approval and how far it may drift, and Cruise Control's new proposal after it forgot an
execution."""

from __future__ import annotations

from datetime import datetime

from events import BrokerLoadChange, Condition, ProposalSummary, RebalanceStatus
from events.conditions import CORDONS_CROSSED, EXECUTION_INTERRUPTED, PROPOSAL_CHANGED
from services.adapters.cruise_control.models import BrokerLoads, OptimizationResult
from services.domain import drift
from services.rebalancer import cordon_check
from services.rebalancer.logic import CRUISE_CONTROL_RESTARTED, NEW_PROPOSAL_EXECUTED, approve, nothing_left
from services.rebalancer.statuses import S, update, without


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
                now: datetime, crossed: list[str] | None = None) -> RebalanceStatus:
    """Cruise Control's answer to the dry run: still computing (``result`` None, the 202), or the proposal, with
    where it crosses cordons said (``crossed``: ``cordon_check.crossings``)."""
    if result is None:
        return update(status, now, state=S.PENDING_PROPOSAL, session_id=task_id,
                       message="Cruise Control is computing the proposal")
    summary = summary_of(result)
    # A new proposal shown: an acceptance of cordons crossed was for the one before.
    fields: dict[str, object] = dict(session_id=None, summary=summary, broker_load=broker_load_of(result),
                                     attempts=0, next_attempt_at=None, progress=None, cordons_accepted=False)
    if _nothing_to_move(summary):
        return update(status, now, state=S.READY, message="Nothing to move: the cluster already meets the goals",
                       conditions=without(status.conditions, CORDONS_CROSSED), **fields)
    return cordon_check.judged(update(status, now, state=S.PROPOSAL_READY, message=None, **fields), crossed or [], now)


def on_check(status: RebalanceStatus, task_id: str, result: OptimizationResult | None, now: datetime, *,
             max_drift_percent: float, crossed: list[str] | None = None) -> RebalanceStatus:
    """The proposal asked again after an approval: still computing; nothing left to move (Ready); within the
    limit of the approved one (to execution); or drifted past it (back to ProposalReady with the new proposal and a
    ``ProposalChanged`` condition: the operator approves again, or not). After Cruise Control forgot an execution
    (``ExecutionInterrupted``), the new proposal is held to what was left of the one executing."""
    if result is None:
        return update(status, now, session_id=task_id,
                       message="Cruise Control is computing the proposal again before executing it")
    fresh = summary_of(result)
    if crossed and not status.cordons_accepted and not _nothing_to_move(fresh):
        # Asked again just before executing, it crosses cordons the approved one did not (or was not approved for).
        shown = cordon_check.judged(status, crossed, now)
        return update(shown, now, state=S.PROPOSAL_READY, checking_approval=False, session_id=None, summary=fresh,
                       broker_load=broker_load_of(result), progress=None, executed_summary=None,
                       message=f"Approval refused: {shown.conditions[-1].message}")
    # What the proposal asked again crosses, said as it is now (a cordon lifted since: the condition goes).
    status = cordon_check.judged(status, crossed or [], now)
    interrupted = status.condition(EXECUTION_INTERRUPTED)
    if interrupted is not None and interrupted.reason == CRUISE_CONTROL_RESTARTED:
        return _after_interruption(status, result, fresh, now, max_drift_percent)
    if status.summary is None or _nothing_to_move(fresh):
        return on_proposal(update(status, now, checking_approval=False), task_id, result, now, crossed)
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
                   cordons_accepted=False,
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
