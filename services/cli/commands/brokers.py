"""``ballast brokers``: the observed-broker registry placement keeps room for, and announced scale-downs."""

from __future__ import annotations

from typing import Annotated

import typer

from events import TOPICS
from services.cli.output import Output, OutputOption, console, emit
from services.common import busio
from services.common.settings import get_settings


app = typer.Typer(help="Brokers placement keeps room for: every broker the cluster has had, alive or not.",
                  no_args_is_help=True)


@app.command("list")
def list_brokers(output: OutputOption = None) -> None:
    """Brokers placement keeps room for, alive or not, with their racks."""
    from rich.table import Table

    from events import ObservedBroker

    registry: dict[str, ObservedBroker | None] = {}
    for event in busio.events(get_settings().bus, TOPICS.observed_brokers, follow=False, idle_s=0.7):
        registry[event.key] = event if isinstance(event, ObservedBroker) else None
    entries = sorted((e for e in registry.values() if e is not None), key=lambda e: e.id)

    def table() -> Table:
        shown = Table(title="Observed brokers")
        for column in ("id", "rack", "first seen"):
            shown.add_column(column)
        for entry in entries:
            shown.add_row(str(entry.id), entry.rack or "-", entry.first_seen.strftime("%Y-%m-%d %H:%M:%S"))
        return shown

    emit(entries, output or Output.table, table)

@app.command()
def forget(broker_ids: Annotated[list[int], typer.Argument(help="ids of decommissioned brokers")]) -> None:
    """Drop decommissioned brokers from the registry.

    Placement stops keeping room for them; a broker still in the cluster is observed again at the next look."""
    from events import BrokerForgotten

    events = [BrokerForgotten(id=broker) for broker in broker_ids]
    busio.publish(get_settings().bus, TOPICS.observed_brokers, events)
    for broker in broker_ids:
        console.print(f"broker {broker}: forgotten")

@app.command()
def remove(broker_ids: Annotated[list[int], typer.Argument(help="ids of the brokers to take away")]) -> None:
    """Announce a scale-down: Ballast moves every replica off these brokers first.

    The rebalancer makes a remove-brokers rebalance named auto-remove-brokers-<ids> (auto-approved when
    BALLAST_REBALANCER__AUTO__ENABLED is true; otherwise approve it with `ballast rebalance approve`). Its status says
    when the brokers are safe to remove."""
    from events import BrokerRemovalRequested

    event = BrokerRemovalRequested(brokers=broker_ids)
    busio.publish(get_settings().bus, TOPICS.scaling, [event])
    console.print(f"brokers {', '.join(map(str, event.brokers))}: removal announced; follow it with "
                  f"`ballast rebalance status auto-remove-brokers-{'-'.join(map(str, event.brokers))}`")
