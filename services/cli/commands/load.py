"""``ballast load``: the latest ended window of the Spark load aggregates."""

from __future__ import annotations

from typing import Annotated

import typer

from events import TOPICS
from services.cli.output import JsonFlag, OutputOption, chosen, emit, fail
from services.common import busio
from services.common.settings import get_settings


def load(
    kind: Annotated[list[str], typer.Option("--kind", help="domain, broker, log-dir (repeatable)")] = ["domain",
                                                                                                    "broker"],
    output: OutputOption = None,
    as_json: JsonFlag = False,
) -> None:
    """Show the latest load aggregates (the Spark job's, per rack-tree domain, broker and log directory)."""
    from services.cli.views import latest_windows, load_table

    fmt = chosen(output, as_json)
    unknown = set(kind) - {"domain", "broker", "log-dir"}
    if unknown:
        raise fail(f"--kind: unknown {sorted(unknown)}; use domain, broker or log-dir", 2)
    aggregates = list(busio.latest(get_settings().bus, TOPICS.load_aggregates, timeout_s=10).values())
    if not aggregates:
        raise fail("no load aggregates yet: are the load collector and `ballast run spark-aggregates` running?")
    chosen_rows = [a for a in latest_windows(aggregates) if a.entity_kind in kind]  # type: ignore[arg-type]
    emit(chosen_rows, fmt, lambda: load_table(aggregates, tuple(kind)))  # type: ignore[arg-type]
