"""``ballast rebalance``: act on rebalances (Strimzi's strimzi.io/rebalance annotation values) and show their status."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from events import TOPICS, RebalanceAction, RebalanceStatus
from events.conditions import CORDONS_CROSSED
from services.common import busio
from services.common.busio import BusUnavailable
from services.cli.output import JsonFlag, Output, OutputOption, chosen, console, emit, emit_one, fail
from services.cli.views import rebalance_details, rebalance_table
from services.common.wording import rebalance_line
from services.common.settings import get_settings

rebalance_app = typer.Typer(help="Rebalances: approve, refresh, stop or release one; show their status. Create one with "
                                 "`ballast apply -f` (KafkaRebalance YAML or kind: Rebalance).", no_args_is_help=True)


def _act(name: str, action: str, *, accept_cordoned: bool = False) -> None:
    """Send an action the rebalance accepts now; refuse, before sending, one it would ignore (Strimzi's table)."""
    from services.rebalancer.cordon_check import held
    from services.rebalancer.logic import valid_actions, why_not_release

    try:
        statuses = latest_rebalances()
    except BusUnavailable as exc:
        raise fail(str(exc)) from None
    status = statuses.get(name)
    if status is None or status.deleted:
        known = sorted(n for n, s in statuses.items() if not s.deleted)
        raise fail(f"no rebalance named {name!r}" + (f" (there are: {', '.join(known)})" if known else
                                                      " (there are none)"))
    valid = valid_actions(status)
    if action not in valid:
        if status.stopping:
            why = f"a {status.stopping} is under way"
        elif action == "release" and (nothing := why_not_release(status)):
            why = nothing
        else:
            why = f"it is {status.state.value}"
        raise fail(f"rebalance {name}: cannot {action} now, {why} (possible now: "
                    f"{', '.join(sorted(valid)) or 'nothing'})")
    if action == "approve" and held(status) and not accept_cordoned:
        crossed = status.condition(CORDONS_CROSSED)
        raise fail(f"rebalance {name}: not approved: {crossed.message if crossed else 'it crosses cordons'}")
    event = RebalanceAction(name=name, action=action, accept_cordoned=accept_cordoned)  # type: ignore[arg-type]
    busio.publish(get_settings().bus, TOPICS.rebalance_actions, [event])
    console.print(f"rebalance {name}: {action} sent")


@rebalance_app.command()
def approve(name: Annotated[str, typer.Argument(help="rebalance name")],
            accept_cordoned: Annotated[bool, typer.Option(
                "--accept-cordoned", help="execute it even though it moves replicas onto cordoned brokers or "
                                          "directories (condition CordonsCrossed): Cruise Control knows no cordons")
            ] = False) -> None:
    """Execute the ready proposal (valid in ProposalReady)."""
    _act(name, "approve", accept_cordoned=accept_cordoned)


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
    output: OutputOption = None,
    as_json: JsonFlag = False,
    watch: Annotated[bool, typer.Option("--watch", "-w", help="keep printing transitions (Ctrl-C stops)")] = False,
) -> None:
    """Show rebalances: state, proposal summary, per-broker load before / after, progress."""
    fmt = chosen(output, as_json)
    if watch:
        try:
            for event in busio.events(get_settings().bus, TOPICS.rebalance_status, follow=True):
                if name is not None and event.name != name:
                    continue
                if fmt is Output.table:
                    console.print(rebalance_line(event), soft_wrap=True)
                else:
                    emit_one(event, fmt)
        except BusUnavailable as exc:
            raise fail(f"stopped watching: {exc}") from None
        except KeyboardInterrupt:
            pass
        return
    statuses = [s for s in latest_rebalances().values() if name is None or s.name == name]
    if name is not None and not statuses:
        raise fail(f"no status for rebalance {name!r} yet")
    if name is not None and fmt is Output.table:
        for renderable in rebalance_details(statuses[0]):
            console.print(renderable)
        return
    emit(statuses, fmt, lambda: rebalance_table(statuses))
