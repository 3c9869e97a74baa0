"""``ballast rebalance``: act on rebalances (Strimzi's strimzi.io/rebalance annotation values) and show their status."""

from __future__ import annotations

from typing import Annotated, Optional

import typer
from rich.console import Console

from events import TOPICS, InvalidEvent, RebalanceAction, RebalanceStatus, decode, encode
from services.common import busio
from services.cli.views import rebalance_details, rebalance_line, rebalance_table
from services.common.settings import get_settings

rebalance_app = typer.Typer(help="Rebalances: approve, refresh, stop or release one; show their status. Create one with "
                                 "`ballast apply -f` (KafkaRebalance YAML or kind: Rebalance).", no_args_is_help=True)
console = Console()
err = Console(stderr=True)


def _act(name: str, action: str) -> None:
    event = RebalanceAction(name=name, action=action)  # type: ignore[arg-type]
    busio.produce(get_settings().bus, [(TOPICS.rebalance_actions.name, event.key.encode(), encode(event), None)])
    console.print(f"rebalance {name}: {action} sent")


@rebalance_app.command()
def approve(name: Annotated[str, typer.Argument(help="rebalance name")]) -> None:
    """Execute the ready proposal (valid in ProposalReady)."""
    _act(name, "approve")


@rebalance_app.command()
def refresh(name: Annotated[str, typer.Argument(help="rebalance name")]) -> None:
    """Ask for a new proposal (stops an execution in progress first)."""
    _act(name, "refresh")


@rebalance_app.command()
def stop(name: Annotated[str, typer.Argument(help="rebalance name")]) -> None:
    """Stop computing the proposal, or stop the execution (movements already made stay)."""
    _act(name, "stop")


@rebalance_app.command()
def release(name: Annotated[str, typer.Argument(help="rebalance name")]) -> None:
    """Let placement use a remove-disks rebalance's directories again (Ballast keeps them empty until then)."""
    _act(name, "release")


def latest_rebalances() -> dict[str, RebalanceStatus]:
    return busio.latest(get_settings().bus, TOPICS.rebalance_status, timeout_s=10)


@rebalance_app.command()
def status(
    name: Annotated[Optional[str], typer.Argument(help="only this rebalance, in detail")] = None,  # noqa: UP007
    as_json: Annotated[bool, typer.Option("--json", help="JSON lines instead of a table")] = False,
    watch: Annotated[bool, typer.Option("--watch", "-w", help="keep printing transitions (Ctrl-C stops)")] = False,
) -> None:
    """Show rebalances: state, proposal summary, per-broker load before / after, progress."""
    if watch:
        try:
            for record in busio.consume(get_settings().bus, [TOPICS.rebalance_status.name], follow=True):
                try:
                    event = decode(record.value, topic=TOPICS.rebalance_status).event
                except InvalidEvent:
                    continue
                assert isinstance(event, RebalanceStatus)
                if name is not None and event.name != name:
                    continue
                if as_json:
                    print(event.model_dump_json(by_alias=True, exclude_none=True), flush=True)
                else:
                    console.print(rebalance_line(event), soft_wrap=True)
        except KeyboardInterrupt:
            pass
        return
    statuses = [s for s in latest_rebalances().values() if name is None or s.name == name]
    if name is not None and not statuses:
        err.print(f"[red]error:[/red] no status for rebalance {name!r} yet")
        raise typer.Exit(1)
    if as_json:
        for s in statuses:
            print(s.model_dump_json(by_alias=True, exclude_none=True))
    elif name is not None:
        for renderable in rebalance_details(statuses[0]):
            console.print(renderable)
    else:
        console.print(rebalance_table(statuses))
