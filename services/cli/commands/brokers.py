"""``ballast brokers``: the observed-broker registry placement keeps room for, and announced scale-downs."""

from __future__ import annotations

from typing import Annotated, Optional

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


DirsOption = Annotated[Optional[list[str]], typer.Option("--dir", "-d", help="only this log directory (repeatable); "  # noqa: UP007
                                                         "none: every directory of the broker")]


@app.command()
def cordon(broker: Annotated[int, typer.Argument(help="the broker's id")], dirs: DirsOption = None,
           yes: Annotated[bool, typer.Option("--yes", "-y", help="do not ask for confirmation")] = False) -> None:
    """Cordon a broker's log directories: they take no new replica.

    Kafka 4.3's cordons (KIP-1066): neither Kafka's placer nor Ballast's puts a new replica in a cordoned directory,
    and a broker whose every directory is cordoned gets none. Sets the broker config cordoned.log.dirs (all: *),
    showing the change and asking first."""
    _set_cordons(broker, dirs or [], cordon=True, yes=yes)


@app.command()
def uncordon(broker: Annotated[int, typer.Argument(help="the broker's id")], dirs: DirsOption = None,
             yes: Annotated[bool, typer.Option("--yes", "-y", help="do not ask for confirmation")] = False) -> None:
    """Let a broker's cordoned log directories take new replicas again (all of them, or those named)."""
    _set_cordons(broker, dirs or [], cordon=False, yes=yes)


def _set_cordons(broker: int, dirs: list[str], *, cordon: bool, yes: bool) -> None:
    from services.cli.output import confirm, fail
    from services.adapters.admin import CORDONED_LOG_DIRS, AdminError, ClusterAdmin
    from services.adapters.admin.factory import ask_cluster
    from services.domain.cordons import cordon_value

    settings = get_settings()

    async def read(admin: ClusterAdmin) -> tuple[str | None, list[str]]:
        described = await admin.describe_log_dirs([broker], replicas=False)
        return (await admin.broker_configs(broker)).get(CORDONED_LOG_DIRS), [d.path for d in described]

    try:
        current, broker_dirs = ask_cluster(settings.cluster_admin, read)
        if not broker_dirs:
            raise fail(f"broker {broker} described no log directory: is it alive?")
        after = cordon_value(current, broker_dirs, dirs, cordon=cordon)
    except ValueError as exc:
        raise fail(f"broker {broker}: {exc}", 2) from None
    except AdminError as exc:
        raise fail(f"broker {broker}: {exc}") from None
    if after == current:
        console.print(f"broker {broker}: {CORDONED_LOG_DIRS} unchanged ({current or 'none'})")
        return
    console.print(f"broker {broker}: {CORDONED_LOG_DIRS}: {current or 'none'} -> {after or 'none'}")
    confirm(yes, "nothing changed")

    async def change(admin: ClusterAdmin) -> None:
        await admin.alter_broker_configs(broker, {CORDONED_LOG_DIRS: after})

    try:
        ask_cluster(settings.cluster_admin, change)
    except AdminError as exc:
        raise fail(f"broker {broker}: {exc}") from None
    console.print(f"broker {broker}: {'cordoned' if cordon else 'uncordoned'}")
