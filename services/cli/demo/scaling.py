"""Steps 4 and 5 of the demo (seed 001): a scale-up rebalanced onto the new brokers by hand (proposal, approval,
progress, Ready), then a safe scale-down (brokers announced for removal, emptied, reported safe, removed)."""

from __future__ import annotations

import time
from collections.abc import Callable
from importlib import resources

import httpx
from rich.console import Console

from events import conditions
from events import (
    TOPICS,
    BrokerForgotten,
    BrokerRemovalRequested,
    RebalanceAction,
    RebalanceRequest,
    RebalanceState,
    RebalanceStatus,
)
from services.common import busio
from services.cli.demo.patience import Patience
from services.cli.manifests import load_manifests
from services.cli.output import section
from services.cli.views import broker_load_table
from services.common.wording import rebalance_line
from services.common.settings import BusSettings
from services.local.stack import LocalStack

NEW_BROKERS = {7: "/dc1/r3", 8: "/dc2/r3", 9: "/dc3/r3"}
LEAVING = 9


def holds(status: RebalanceStatus, condition: str) -> bool:
    """The rebalance has this condition, True."""
    return (found := status.condition(condition)) is not None and found.status == "True"


class RebalanceFollower:
    """Prints each rebalance's transitions (progress at most once a second) until a condition holds."""

    def __init__(self, console: Console, bus: BusSettings, only: set[str] | None = None) -> None:
        self.console, self.bus = console, bus
        self.only = only  # print only these rebalances' transitions (None: every one)
        self.offset = -1
        self.latest: dict[str, RebalanceStatus] = {}
        self._printed_at = 0.0

    def until(self, name: str, done: Callable[[RebalanceStatus], bool], patience: Patience) -> RebalanceStatus | None:
        """The named rebalance's status once ``done`` holds; None when no rebalance status changed for the patience's
        while."""
        for record, status in busio.records_with_events(self.bus, TOPICS.rebalance_status, follow=True,
                                                        deadline=patience.deadline):
            if record.offset <= self.offset:
                continue
            self.offset = record.offset
            previous = self.latest.get(status.name)
            self.latest[status.name] = status
            if previous is None or (previous.state, previous.message, previous.progress) != (
                    status.state, status.message, status.progress):
                patience.moved()
            if status.name == name and done(status):
                self._print(status)
                return status
            if (self.only is None or status.name in self.only) and self._worth_printing(status, previous):
                self._print(status)
        return None

    def _worth_printing(self, status: RebalanceStatus, previous: RebalanceStatus | None) -> bool:
        if previous is None or (previous.state, previous.message) != (status.state, status.message):
            return True
        return status.progress is not None and time.monotonic() - self._printed_at >= 1.0

    def _print(self, status: RebalanceStatus) -> None:
        self._printed_at = time.monotonic()
        self.console.print(f"[dim]{time.strftime('%H:%M:%S')}[/dim]  {rebalance_line(status)}", soft_wrap=True)


def scale_up_and_down(console: Console, stack: LocalStack, bus: BusSettings, patience: Patience) -> bool:
    rebalances = RebalanceFollower(console, bus)
    sim = httpx.Client(base_url=stack.sim_url, timeout=10)

    section(console, f"4. scale-up: brokers {', '.join(map(str, NEW_BROKERS))} join; an add-brokers rebalance "
                     "moves replicas onto them only")
    for broker, rack in NEW_BROKERS.items():
        sim.post("/admin/brokers", json={"id": broker, "rack": rack}).raise_for_status()
    text = resources.files("services.local").joinpath("scenarios", "demo-scale-up.yaml").read_text()
    (request,) = load_manifests(text, "demo-scale-up.yaml")
    assert isinstance(request, RebalanceRequest)
    busio.publish(bus, TOPICS.rebalance_requests, [request])
    if not shown_and_approved(console, bus, rebalances, request.name, patience, "scale-up"):
        return False
    if rebalances.until(request.name, lambda s: s.state == RebalanceState.READY, patience) is None:
        return patience.give_up(console, "the scale-up execution")

    section(console, f"5. safe scale-down: broker {LEAVING} announced for removal, emptied, reported safe, removed")
    if not emptied_for_removal(console, bus, rebalances, LEAVING, patience):
        return False
    sim.delete(f"/admin/brokers/{LEAVING}").raise_for_status()
    brokers = [b["id"] for b in sim.get("/admin/brokers").json()["brokers"]]
    console.print(f"broker {LEAVING} removed from the cluster; brokers now: {brokers}")
    forget(console, bus, LEAVING)
    sim.close()
    return True


def shown_and_approved(console: Console, bus: BusSettings, rebalances: RebalanceFollower, name: str,
                       patience: Patience, what: str) -> bool:
    """A rebalance's proposal shown with the per-broker load before and after, then approved until it executes
    (False, said, when nothing moved for the patience's while)."""
    proposal = rebalances.until(name, lambda s: s.state == RebalanceState.PROPOSAL_READY, patience)
    if proposal is None:
        return patience.give_up(console, f"the {what} proposal")
    console.print(broker_load_table(proposal))
    if not approve_until_executing(console, bus, rebalances, name, patience):
        return patience.give_up(console, f"the {what} execution")
    return True


def emptied_for_removal(console: Console, bus: BusSettings, rebalances: RebalanceFollower, broker: int,
                        patience: Patience) -> bool:
    """``ballast brokers remove``: the remove-brokers rebalance it makes is approved and executed, until the broker
    is reported safe to remove (False, said, when nothing moved for the patience's while)."""
    console.print(f"[bold]ballast brokers remove {broker}[/bold]")
    busio.publish(bus, TOPICS.scaling, [BrokerRemovalRequested(brokers=[broker])])
    name = f"auto-remove-brokers-{broker}"
    if rebalances.until(name, lambda s: s.state == RebalanceState.PROPOSAL_READY, patience) is None:
        return patience.give_up(console, "the scale-down proposal")
    if not approve_until_executing(console, bus, rebalances, name, patience):
        return patience.give_up(console, "the scale-down execution")
    if rebalances.until(name, lambda s: holds(s, conditions.BROKERS_REMOVABLE), patience) is None:
        return patience.give_up(console, f"broker {broker} to be reported safe to remove")
    return True


def forget(console: Console, bus: BusSettings, broker: int) -> None:
    """Decommissioned for good: placement stops keeping room for it (seed 002's registry would otherwise wait)."""
    console.print(f"[bold]ballast brokers forget {broker}[/bold]")
    busio.publish(bus, TOPICS.observed_brokers, [BrokerForgotten(id=broker)])


def approve_until_executing(console: Console, bus: BusSettings, rebalances: RebalanceFollower, name: str,
                            patience: Patience) -> bool:
    """Approves until the execution starts: an approval is refused when the proposal Cruise Control computes again
    for the execution drifted from the one shown (the simulator's partitions grow a simulated minute a second)."""
    for _ in range(3):
        console.print(f"approving: [bold]ballast rebalance approve {name}[/bold]")
        busio.publish(bus, TOPICS.rebalance_actions, [RebalanceAction(name=name, action="approve")])
        checked = rebalances.until(name, lambda s: s.state != RebalanceState.PROPOSAL_READY or (
            not s.checking_approval and s.condition(conditions.PROPOSAL_CHANGED) is not None), patience)
        if checked is None or checked.state != RebalanceState.PROPOSAL_READY:
            return checked is not None
    return False
