"""``ballast brokers``: the observed-broker registry placement keeps room for, and announced scale-downs."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from events import TOPICS
from services.adapters.admin.port import CORDONED_LOG_DIRS
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
    from services.cli.output import confirm

    current, after, _ = _cordon_plan(broker, dirs, cordon=cordon)
    if after == current:
        console.print(f"broker {broker}: {CORDONED_LOG_DIRS} unchanged ({current or 'none'})")
        return
    console.print(f"broker {broker}: {CORDONED_LOG_DIRS}: {current or 'none'} -> {after or 'none'}")
    confirm(yes, "nothing changed")
    _apply_cordons(broker, after)
    console.print(f"broker {broker}: {'cordoned' if cordon else 'uncordoned'}")


def _cordon_plan(broker: int, dirs: list[str], *, cordon: bool) -> tuple[str | None, str | None, int]:
    """The broker's cordoned.log.dirs now and after the change, and how many replicas it hosts."""
    from services.adapters.admin import AdminError, ClusterAdmin
    from services.adapters.admin.factory import ask_cluster
    from services.cli.output import fail
    from services.domain.cordons import cordon_value

    async def read(admin: ClusterAdmin) -> tuple[str | None, list[str], int]:
        described = await admin.describe_log_dirs([broker], replicas=False)
        hosted = sum(broker in replicas for parts in (await admin.assignments()).values() for replicas in parts)
        return (await admin.broker_configs(broker)).get(CORDONED_LOG_DIRS), [d.path for d in described], hosted

    try:
        current, broker_dirs, hosted = ask_cluster(get_settings().cluster_admin, read)
        if not broker_dirs:
            raise fail(f"broker {broker} described no log directory: is it alive?")
        return current, cordon_value(current, broker_dirs, dirs, cordon=cordon), hosted
    except ValueError as exc:
        raise fail(f"broker {broker}: {exc}", 2) from None
    except AdminError as exc:
        raise fail(f"broker {broker}: {exc}") from None


def _apply_cordons(broker: int, after: str | None) -> None:
    from services.adapters.admin import AdminError, ClusterAdmin
    from services.adapters.admin.factory import ask_cluster
    from services.cli.output import fail

    async def change(admin: ClusterAdmin) -> None:
        await admin.alter_broker_configs(broker, {CORDONED_LOG_DIRS: after})

    try:
        ask_cluster(get_settings().cluster_admin, change)
    except AdminError as exc:
        raise fail(f"broker {broker}: {exc}") from None


@app.command()
def decommission(
        broker: Annotated[int, typer.Argument(help="the broker's id")],
        yes: Annotated[bool, typer.Option("--yes", "-y", help="do not ask for confirmation")] = False,
        wait: Annotated[bool, typer.Option("--wait", help="follow the drain here; exit 0 once the broker is safe to "
                                                          "remove, 1 if the drain stops short")] = False,
        timeout_s: Annotated[float, typer.Option("--timeout", help="with --wait: give up after this many seconds "
                                                                   "(the drain goes on)")] = 3600.0,
) -> None:
    """Take a broker out of service: cordon it, drain it, say when it is safe to remove.

    Cordons every log directory of the broker (cordoned.log.dirs=*: no new replica goes there, from Kafka or from
    Ballast), then asks for an auto-approved remove-brokers rebalance, decommission-<id>, that moves its replicas
    onto brokers that are not cordoned. Its progress is that rebalance's status (`ballast rebalance status
    decommission-<id>`); its condition BrokersRemovable says when the broker hosts no replica."""
    from events import RebalanceAction, RebalanceMode, RebalanceRequest
    from services.cli.commands.rebalance import latest_rebalances
    from services.cli.output import confirm, fail
    from services.domain.cordons import decommission_name
    from services.rebalancer.statuses import TERMINAL

    current, after, hosted = _cordon_plan(broker, [], cordon=True)
    name = decommission_name(broker)
    cordoning = f"{CORDONED_LOG_DIRS}: {current or 'none'} -> {after}" if after != current \
        else f"{CORDONED_LOG_DIRS} already {current}"
    console.print(f"broker {broker}: decommission\n  1. cordon: {cordoning}\n  2. drain: rebalance {name} "
                  f"(remove-brokers, auto-approved) moves its {hosted} replica(s) onto uncordoned brokers")
    confirm(yes, "nothing changed")
    if after != current:
        _apply_cordons(broker, after)
        console.print(f"broker {broker}: cordoned")
    request = RebalanceRequest(name=name, mode=RebalanceMode.REMOVE_BROKERS, brokers=[broker], auto_approve=True)
    earlier = latest_rebalances().get(name)
    if earlier is not None and not earlier.deleted and earlier.request == request and earlier.state not in TERMINAL:
        console.print(f"rebalance {name}: already under way ({earlier.state.value})")
    elif earlier is not None and not earlier.deleted and earlier.request == request:
        # The same request again would change nothing: a refresh starts it over from New.
        busio.publish(get_settings().bus, TOPICS.rebalance_actions, [RebalanceAction(name=name, action="refresh")])
        console.print(f"rebalance {name}: started again (it was {earlier.state.value})")
    else:
        busio.publish(get_settings().bus, TOPICS.rebalance_requests, [request])
        console.print(f"rebalance {name}: requested")
    console.print(f"follow it with `ballast rebalance status {name} --watch`")
    if wait:
        safe, said = _follow_decommission(name, timeout_s)
        if not safe:
            raise fail(f"broker {broker}: not safe to remove yet: {said}")
        console.print(f"broker {broker}: safe to remove: it hosts no replica. Stop it, then `ballast brokers "
                      f"forget {broker}` (placement stops keeping room for it). Its cordon stays with its id in "
                      f"Kafka's metadata: a broker that joins later as {broker} starts cordoned (`ballast brokers "
                      f"uncordon {broker}` then)")


def _follow_decommission(name: str, timeout_s: float) -> tuple[bool, str]:
    """The decommission's rebalance followed, its transitions printed, until it says whether the broker may go."""
    import time

    from events import RebalanceStatus
    from services.common.wording import rebalance_line
    from services.domain.cordons import decommission_outcome

    deadline = time.monotonic() + timeout_s
    began = time.time()
    for event in busio.events(get_settings().bus, TOPICS.rebalance_status, follow=True, deadline=deadline):
        if not isinstance(event, RebalanceStatus) or event.name != name or event.updated_at.timestamp() < began - 1:
            continue  # another rebalance, or an earlier decommission of the same broker
        console.print(rebalance_line(event), soft_wrap=True)
        if (outcome := decommission_outcome(event)) is not None:
            return outcome
    return False, f"no outcome within {timeout_s:g} s; the drain goes on (ballast rebalance status {name})"
