"""``ballast throttle``: what the throttle controller (``ballast run throttle``) has set on the managed cluster while
replicas move, and why (``ballast.throttle.status``), and every change of a rate (``ballast.throttle.changes``).

The texts are ``services.common.throttle_wording``'s, which the dashboard shows too."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Annotated

import typer
from rich.console import Group, RenderableType
from rich.markup import escape
from rich.table import Table

from events import TOPICS, ThrottleRateChanged, ThrottleStatus
from events.envelope import utcnow
from services.cli.output import JsonFlag, Output, OutputOption, chosen, console, emit, emit_one, fail
from services.common import busio
from services.common.busio import BusUnavailable
from services.common.settings import get_settings
from services.common.throttle_wording import (back_off_text, broker_rows, change_line, change_row, lagging_text,
                                              log_dir_rows, moves_text, rate_text, status_lines, traffic_text)

throttle_app = typer.Typer(
    help="Throttles: the rates the throttle controller (`ballast run throttle`) sets on each broker while replicas "
         "move, between brokers and between a broker's log directories, and why.", no_args_is_help=True)

BROKER_COLUMNS = ("broker", "kind", "rate", "owner", "reason", "capacity", "live", "headroom")
LOG_DIR_COLUMNS = ("broker", "log dir", "capacity", "live", "headroom")
CHANGE_COLUMNS = ("time (UTC)", "broker", "kind", "from -> to", "reason", "detail")
NOT_YET = ("no throttle status yet: the throttle controller (`ballast run throttle`) has not published one; is it "
           "running against this bus?")


def _table(title: str, columns: Iterable[str], rows: list[tuple[str, ...]], right: set[str]) -> Table:
    table = Table(title=title, title_justify="left")
    for column in columns:
        table.add_column(column, justify="right" if column in right else "left", overflow="fold")
    for row in rows:
        table.add_row(*(escape(cell) for cell in row))
    return table


def status_renderables(status: ThrottleStatus, now: datetime) -> list[RenderableType]:
    """The brokers' table, the directories' (when any take part), then the rest of the status."""
    rates = {"rate", "capacity", "live", "headroom"}
    out: list[RenderableType] = []
    rows = broker_rows(status)
    brokers = _table("Throttles per broker", BROKER_COLUMNS, rows, rates | {"broker"})
    if not rows:
        brokers.caption = "no broker takes part in a move"
    out.append(brokers)
    if status.log_dirs:
        out.append(_table("Log directories taking part", LOG_DIR_COLUMNS, log_dir_rows(status), rates | {"broker"}))
    summary = Table.grid(padding=(0, 2))
    summary.add_column(style="bold")
    summary.add_column(overflow="fold")
    for label, text in status_lines(status, now):
        summary.add_row(label, escape(text))
    out.append(summary)
    return out


def changes_table(changes: list[ThrottleRateChanged]) -> Table:
    table = _table("Throttle rate changes", CHANGE_COLUMNS, [change_row(c) for c in changes], {"broker"})
    if not changes:
        table.caption = "no rate changed yet"
    return table


# -- commands -------------------------------------------------------------------------------------------------------

@throttle_app.command()
def status(
    output: OutputOption = None,
    as_json: JsonFlag = False,
) -> None:
    """Show the throttle controller's latest status: the rate on each broker taking part in a move, and why.

    Per broker and kind (inter-broker: between brokers; intra-broker: between its log directories) the rate in force,
    whose it is (ballast, other, none) and why, with the capacity, live traffic and headroom it came from; the log
    directories taking part; the traffic source and the age of its figures; the back-off, if any; the controller's
    message. Tables show rates in B/s, kB/s, MB/s; -o json prints the status event as it is on the bus (bytes per
    second). Exit 1 while the controller has not published a status."""
    fmt = chosen(output, as_json)
    found = list(busio.latest(get_settings().bus, TOPICS.throttle_status, timeout_s=10).values())
    if not found:
        raise fail(NOT_YET)
    current = found[0]
    emit([current], fmt, lambda: Group(*status_renderables(current, utcnow())))


@throttle_app.command()
def changes(
    follow: Annotated[bool, typer.Option("--follow", help="after the changes so far, keep printing new ones as "
                                         "they come (Ctrl-C stops)")] = False,
    output: OutputOption = None,
    as_json: JsonFlag = False,
) -> None:
    """Show every change of a throttle rate, oldest first: time, broker, kind, old -> new rate, reason.

    The reasons: headroom (capacity less live traffic, times the safety share), isr-back-off and latency-back-off
    (the floor), fixed (someone else's rate, kept), moves-ended and leftover (Ballast's rate removed), no-capacity.
    -o json prints one change a line, rates in bytes per second (no fromBytesPerS or toBytesPerS: no rate)."""
    fmt = chosen(output, as_json)
    bus = get_settings().bus
    if not follow:
        found = list(busio.events(bus, TOPICS.throttle_changes, follow=False))
        found.sort(key=lambda c: c.at)  # keyed by broker and kind: partitions are read in no set order
        emit(found, fmt, lambda: changes_table(found))
        return
    try:
        for change in busio.events(bus, TOPICS.throttle_changes, follow=True):
            if fmt is Output.table:
                console.print(escape(change_line(change)), soft_wrap=True)
            else:
                emit_one(change, fmt)
    except BusUnavailable as exc:
        raise fail(f"stopped following: {exc}") from None
    except KeyboardInterrupt:
        pass
