"""How statuses look to a person in a terminal: tables (the words in them are ``services.common.wording``'s)."""

from __future__ import annotations

from rich import box
from rich.console import RenderableType
from rich.table import Table

from events import LoadAggregate, RebalanceStatus, TopicStatus
from services.common.wording import change_text, mode_text, progress_text, rebalance_notes, status_notes, summary_text


def status_table(statuses: list[TopicStatus], title: str = "Topics") -> Table:
    table = Table(title=title)
    # No generation column: a generation is the spec record's bus offset + 1, which orders specs but counts nothing a
    # person would read (a topic applied once showed 3/3); the JSON output has it for scripts.
    for column in ("topic", "ready", "partitions", "RF", "replicas change", "notes"):
        table.add_column(column, overflow="fold")
    for s in sorted(statuses, key=lambda s: s.topic):
        message = "; ".join(status_notes(s))
        table.add_row(s.topic, "deleted" if s.deleted else ("yes" if s.ready else "no"),
                      str(s.partitions if s.partitions is not None else "-"),
                      str(s.replicas if s.replicas is not None else "-"), change_text(s), message)
    return table


# -- rebalances -------------------------------------------------------------------------------------------------------

def rebalance_table(statuses: list[RebalanceStatus], title: str = "Rebalances") -> Table:
    table = Table(title=title)
    for column in ("rebalance", "state", "mode", "brokers", "proposal", "progress / message"):
        table.add_column(column, overflow="fold")
    for s in sorted(statuses, key=lambda s: s.name):
        notes = [n for n in (progress_text(s), *rebalance_notes(s)) if n]
        table.add_row(s.name, s.state.value, mode_text(s.request), ",".join(map(str, s.request.brokers)) or "-",
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
