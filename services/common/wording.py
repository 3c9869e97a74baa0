"""How statuses are said in words: the texts the CLI and the dashboard both show (a line per transition, the notes
that say why a topic is not ready, a proposal's figures, an execution's progress)."""

from __future__ import annotations

from events import conditions
from events import (BrokerStatus, Condition, ProposalSummary, RebalanceRequest, RebalanceState, RebalanceStatus,
                    TopicStatus)
from services.domain import drift


def change_text(status: TopicStatus) -> str:
    change = status.replicas_change
    if change is None:
        return "-"
    text = f"{change.state} -> RF {change.target_replicas}"
    if change.session_id:
        text += f" (session {change.session_id[:8]})"
    return text


def transition_line(status: TopicStatus, previous: TopicStatus | None) -> str:
    parts = [f"{status.topic:<24}"]
    if status.deleted:
        parts.append("deleted")
    else:
        parts.append("ready" if status.ready else "not ready")
        parts.append(f"RF {status.replicas if status.replicas is not None else '?'}")
        parts.append(f"partitions {status.partitions if status.partitions is not None else '?'}")
    if status.replicas_change is not None:
        parts.append(f"replicasChange {change_text(status)}")
        if status.replicas_change.message:
            parts.append(f"message: {status.replicas_change.message}")
    for condition in status.conditions:
        if condition.type != conditions.READY or condition.status != "True":
            if previous is None or previous.condition(condition.type) != condition:
                note = f"[{condition.type}={condition.status}]"
                if condition.message:
                    note += f" {condition.message}"
                parts.append(note)
    return "  ".join(parts)


# Conditions whose coming and going is a step of a topic's history, as (when set, when cleared).
_STEPS = {conditions.RECONCILIATION_PAUSED: ("paused", "resumed"),
          conditions.UNMANAGED: ("let go of (managed: false)", "managed again"),
          conditions.POLICY_VIOLATION: ("refused by the policy", "the policy is met"),
          conditions.REPLICAS_CHANGE_BLOCKED: ("RF change held: too few brokers take replicas", "RF change no longer held")}


def history_steps(previous: TopicStatus | None, status: TopicStatus) -> list[str]:
    """What changed for a topic from one status to the next, as steps of its history: created, partitions added,
    each state of a replication-factor change, drift corrected or reported, paused, let go of, refused."""
    if status.deleted:
        return ["deleted"]
    steps = []
    if status.partitions is not None and (previous is None or previous.partitions is None):
        steps.append(f"created ({status.partitions} partitions, RF {status.replicas})")
    elif previous is not None and status.partitions is not None and previous.partitions != status.partitions:
        steps.append(f"partitions {previous.partitions} -> {status.partitions}")
    change, before = status.replicas_change, previous.replicas_change if previous is not None else None
    if change is not None and (before is None or (before.state, before.target_replicas) != (
            change.state, change.target_replicas)):
        steps.append(f"{change.state} (RF {change.target_replicas})")
    drift = status.condition(conditions.DRIFT)
    if drift is not None and (previous is None or previous.condition(conditions.DRIFT) != drift):
        steps.append(f"drift {(drift.reason or 'found').lower()}")
    for kind, (was_set, cleared) in _STEPS.items():
        now, then = status.condition(kind), previous.condition(kind) if previous is not None else None
        if now is not None and then is None:
            steps.append(was_set)
        elif now is None and then is not None:
            steps.append(cleared)
    return steps


def condition_note(condition: Condition) -> str | None:
    """A condition as a person reads it, or None for the one that says all is well."""
    if condition.type == conditions.READY:
        if condition.status == "True":
            return None
        head = f"not ready ({condition.reason})" if condition.reason else "not ready"
    elif condition.status == "True":
        head = condition.type
    else:
        head = f"{condition.type}={condition.status}"
    return f"{head}: {condition.message}" if condition.message else head


def status_notes(status: TopicStatus) -> list[str]:
    """Why a topic is as it is: the replicas change's message, then every condition but Ready=True."""
    notes = [status.replicas_change.message] if status.replicas_change and status.replicas_change.message else []
    return notes + [n for c in status.conditions if (n := condition_note(c)) is not None]


def summary_text(status: RebalanceStatus) -> str:
    """The proposal shown, and the one Cruise Control executed when it computed different figures."""
    if status.summary is None:
        return "-"
    text = proposal_text(status.summary, status.request)
    executed = status.executed_summary
    if executed is not None and drift.differs(status.summary, executed):
        text += f"; executed: {proposal_text(executed, status.request)}"
    return text


def proposal_text(s: ProposalSummary, request: RebalanceRequest) -> str:
    text = (f"{s.num_replica_movements} replica / {s.num_leader_movements} leader movements, "
            f"{s.data_to_move_mb:,.0f} MB")
    if s.num_intra_broker_replica_movements or request.rebalance_disk or request.mode == "remove-disks":
        text += (f", {s.num_intra_broker_replica_movements} between directories "
                 f"({s.intra_broker_data_to_move_mb:,.0f} MB)")
    if s.on_demand_balancedness_score_before is not None and s.on_demand_balancedness_score_after is not None:
        text += (f", balancedness {s.on_demand_balancedness_score_before:.1f} -> "
                 f"{s.on_demand_balancedness_score_after:.1f}")
    return text


def progress_text(status: RebalanceStatus) -> str:
    p = status.progress
    if p is None:
        return ""
    eta = f", about {p.estimated_seconds_to_completion:.0f} s left" if p.estimated_seconds_to_completion is not None \
        else ""
    moves = []
    if p.total_partition_movements or not p.total_intra_broker_partition_movements:
        moves.append(f"{p.finished_partition_movements}/{p.total_partition_movements} partitions")
    if p.total_intra_broker_partition_movements:
        moves.append(f"{p.finished_intra_broker_partition_movements}/{p.total_intra_broker_partition_movements} "
                     "between directories")
    total_mb = p.total_data_mb + p.total_intra_broker_data_mb
    if not total_mb:
        if not p.total_partition_movements and not p.total_intra_broker_partition_movements:
            return ""  # the executor has not said what it moves yet
        return f"{', '.join(moves)} moved (no data to copy){eta}"  # replicas that hold no data
    return f"{p.percent_data_moved:.0f}% of {total_mb:,.0f} MB moved ({', '.join(moves)}){eta}"


def rebalance_notes(status: RebalanceStatus) -> list[str]:
    """What a rebalance's status says beyond its state and progress: its message, then each condition's (a finished
    drain is "Rebalance complete" and also "Not safe to remove: ..." while replicas landed on its brokers)."""
    notes = [status.message] if status.message else []
    return notes + [c.message or c.type for c in status.conditions if c.message != status.message]


def mode_text(request: RebalanceRequest) -> str:
    return "full (disks)" if request.rebalance_disk else str(request.mode)


def rebalance_line(status: RebalanceStatus) -> str:
    request = status.request
    parts = [f"{status.name:<28}", f"{status.state.value:<15}", mode_text(request)]
    if request.brokers:
        parts.append(f"brokers {','.join(map(str, request.brokers))}")
    if status.state == RebalanceState.PROPOSAL_READY and status.summary:
        parts.append(f"proposal: {summary_text(status)}")
    if progress := progress_text(status):
        parts.append(progress)
    if status.message:
        parts.append(status.message)
    for condition in status.conditions:
        if condition.message != status.message:
            parts.append(f"[{condition.type}={condition.status}] {condition.message or ''}".rstrip())
    return "  ".join(parts)


def log_dirs_text(status: BrokerStatus) -> str:
    """A broker's log directories that are not simply in service, in words (empty when all are): cordoned (KIP-1066:
    no new replica; all of them: the broker takes none), offline (a failed disk), kept empty by a remove-disks
    rebalance."""
    dirs = status.log_dirs
    cordoned = [d.path for d in dirs if d.cordoned]
    parts = []
    if cordoned and len(cordoned) == len(dirs):
        parts.append("cordoned (every directory): takes no new replica")
    elif cordoned:
        parts.append(f"cordoned: {', '.join(cordoned)}")
    if offline := [d.path for d in dirs if not d.online]:
        parts.append(f"offline: {', '.join(offline)}")
    if drained := [d.path for d in dirs if d.drained_by]:
        parts.append(f"kept empty: {', '.join(drained)}")
    return "; ".join(parts)
