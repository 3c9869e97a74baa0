"""How statuses look to a person: one line per transition, and a table."""

from __future__ import annotations

from rich import box
from rich.console import RenderableType
from rich.table import Table

from events import (
    Condition,
    LoadAggregate,
    ProposalSummary,
    RebalanceRequest,
    RebalanceState,
    RebalanceStatus,
    TopicStatus,
)
from services.rebalancer import drift


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
        if condition.type != "Ready" or condition.status != "True":
            if previous is None or previous.condition(condition.type) != condition:
                note = f"[{condition.type}={condition.status}]"
                if condition.message:
                    note += f" {condition.message}"
                parts.append(note)
    return "  ".join(parts)


def condition_note(condition: Condition) -> str | None:
    """A condition as a person reads it, or None for the one that says all is well."""
    if condition.type == "Ready":
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


def status_table(statuses: list[TopicStatus], title: str = "Topics") -> Table:
    table = Table(title=title)
    for column in ("topic", "ready", "partitions", "RF", "replicas change", "notes", "generation"):
        table.add_column(column, overflow="fold")
    for s in sorted(statuses, key=lambda s: s.topic):
        message = "; ".join(status_notes(s))
        table.add_row(s.topic, "deleted" if s.deleted else ("yes" if s.ready else "no"),
                      str(s.partitions if s.partitions is not None else "-"),
                      str(s.replicas if s.replicas is not None else "-"), change_text(s), message,
                      f"{s.observed_generation}/{s.generation}")
    return table


# -- rebalances -------------------------------------------------------------------------------------------------------

def summary_text(status: RebalanceStatus) -> str:
    """The proposal shown, and the one Cruise Control executed when it computed different figures."""
    if status.summary is None:
        return "-"
    text = _proposal_text(status.summary, status.request)
    executed = status.executed_summary
    if executed is not None and drift.differs(status.summary, executed):
        text += f"; executed: {_proposal_text(executed, status.request)}"
    return text


def _proposal_text(s: ProposalSummary, request: RebalanceRequest) -> str:
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
    return (f"{p.percent_data_moved:.0f}% of {p.total_data_mb + p.total_intra_broker_data_mb:,.0f} MB moved "
            f"({', '.join(moves)}){eta}")


def _mode(request: RebalanceRequest) -> str:
    return "full (disks)" if request.rebalance_disk else str(request.mode)


def rebalance_line(status: RebalanceStatus) -> str:
    request = status.request
    parts = [f"{status.name:<28}", f"{status.state.value:<15}", _mode(request)]
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


def rebalance_table(statuses: list[RebalanceStatus], title: str = "Rebalances") -> Table:
    table = Table(title=title)
    for column in ("rebalance", "state", "mode", "brokers", "proposal", "progress / message"):
        table.add_column(column, overflow="fold")
    for s in sorted(statuses, key=lambda s: s.name):
        notes = [n for n in (progress_text(s), s.message) if n]
        notes += [c.message or c.type for c in s.conditions if c.message != s.message]
        table.add_row(s.name, s.state.value, _mode(s.request), ",".join(map(str, s.request.brokers)) or "-",
                      summary_text(s), "; ".join(notes))
    return table


def broker_load_table(status: RebalanceStatus) -> Table:
    table = Table(title=f"{status.name}: per-broker load before -> after")
    for column in ("broker", "replicas", "leaders", "disk MB"):
        table.add_column(column, justify="right")
    def change(before: float | None, after: float) -> str:
        return f"{after:,.0f}" if before is None else f"{before:,.0f} -> {after:,.0f}"  # None: not reported

    for row in status.broker_load:
        table.add_row(str(row.broker), change(row.replicas_before, row.replicas_after),
                      change(row.leaders_before, row.leaders_after), change(row.disk_mb_before, row.disk_mb_after))
    return table


def rebalance_details(status: RebalanceStatus) -> list[RenderableType]:
    out: list[RenderableType] = [rebalance_table([status], title=f"Rebalance {status.name}")]
    if status.broker_load:
        out.append(broker_load_table(status))
    return out


# -- load -------------------------------------------------------------------------------------------------------------

def latest_windows(aggregates: list[LoadAggregate]) -> list[LoadAggregate]:
    """The aggregates of the latest window that has ended in event time (the newest sample is past its end), one per
    entity: every entity seen over the same span, and no window still filling."""
    times = [a.last_sample_at for a in aggregates if a.last_sample_at is not None]
    if not times:
        return []
    newest = max(times)
    ended = [a.window_end for a in aggregates if a.window_end <= newest]
    if not ended:  # the first window has not ended yet: the freshest there is
        ended = [max(a.window_end for a in aggregates)]
    chosen = max(ended)
    return [a for a in aggregates if a.window_end == chosen]


def load_table(aggregates: list[LoadAggregate], kinds: tuple[str, ...] = ("domain", "broker")) -> Table:
    rows = [a for a in latest_windows(aggregates) if a.entity_kind in kinds]
    title = "Load, latest window"
    if rows:
        first, last = min(a.window_start for a in rows), max(a.window_end for a in rows)
        title += f" {first:%H:%M:%S}-{last:%H:%M:%S} UTC"
    title += " (MB/s, GB)"
    # Short headers and no vertical rules: eight columns in 80 characters, numbers never cut.
    table = Table(title=title, box=box.SIMPLE_HEAD, pad_edge=False)
    for column in ("entity", "in", "out", "disk", "grown", "replicas", "leaders", "placed"):
        table.add_column(column, justify="left" if column == "entity" else "right",
                         overflow="fold" if column == "entity" else "ellipsis", no_wrap=column != "entity")
    order = {"domain": 0, "broker": 1, "log-dir": 2}
    for a in sorted(rows, key=lambda a: (order[a.entity_kind], a.entity.zfill(6) if a.entity.isdigit() else a.entity)):
        if a.entity_kind == "domain":
            name = "  " * max(0, a.level - 1) + a.entity
        else:
            name = f"{'broker' if a.entity_kind == 'broker' else 'dir'} {a.entity}"
        table.add_row(name, f"{a.bytes_in_kb_s / 1024:,.1f}", f"{a.bytes_out_kb_s / 1024:,.1f}",
                      f"{a.disk_mb / 1024:,.1f}", f"{a.disk_growth_mb / 1024:+,.1f}", str(a.replicas), str(a.leaders),
                      str(a.placements))
    return table
