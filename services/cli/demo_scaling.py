"""Steps 4 and 5 of the demo (seed 001): a scale-up rebalanced onto the new brokers by hand (proposal, approval,
progress, Ready), then a safe scale-down (brokers announced for removal, emptied, reported safe, removed)."""

from __future__ import annotations

import time
from collections.abc import Callable
from importlib import resources

import httpx
from rich.console import Console

from events import (
    TOPICS,
    BrokerForgotten,
    BrokerRemovalRequested,
    InvalidEvent,
    RebalanceAction,
    RebalanceRequest,
    RebalanceState,
    RebalanceStatus,
    decode,
    encode,
)
from services.common import busio
from services.cli.manifests import load_manifests
from services.cli.views import broker_load_table, rebalance_line
from services.common.settings import BusSettings
from services.local.stack import LocalStack

NEW_BROKERS = {7: "/dc1/r3", 8: "/dc2/r3", 9: "/dc3/r3"}
LEAVING = 9


class RebalanceFollower:
    """Prints each rebalance's transitions (progress at most once a second) until a condition holds."""

    def __init__(self, console: Console, bus: BusSettings, only: set[str] | None = None) -> None:
        self.console, self.bus = console, bus
        self.only = only  # print only these rebalances' transitions (None: every one)
        self.offset = -1
        self.latest: dict[str, RebalanceStatus] = {}
        self._printed_at = 0.0

    def until(self, name: str, done: Callable[[RebalanceStatus], bool], deadline: float) -> RebalanceStatus | None:
        for record in busio.consume(self.bus, [TOPICS.rebalance_status.name], follow=True, deadline=deadline):
            if record.offset <= self.offset:
                continue
            self.offset = record.offset
            try:
                status = decode(record.value, topic=TOPICS.rebalance_status).event
            except InvalidEvent:
                continue
            assert isinstance(status, RebalanceStatus)
            previous = self.latest.get(status.name)
            self.latest[status.name] = status
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


def _produce(bus: BusSettings, topic: str, event: RebalanceRequest | RebalanceAction | BrokerRemovalRequested
             ) -> None:
    busio.produce(bus, [(topic, event.key.encode(), encode(event), None)])


def scale_up_and_down(console: Console, stack: LocalStack, bus: BusSettings, deadline: float) -> bool:
    follow = RebalanceFollower(console, bus)
    sim = httpx.Client(base_url=stack.sim_url, timeout=10)

    console.rule(f"4. scale-up: brokers {', '.join(map(str, NEW_BROKERS))} join; an add-brokers rebalance moves "
                 "replicas onto them only")
    for broker, rack in NEW_BROKERS.items():
        sim.post("/admin/brokers", json={"id": broker, "rack": rack}).raise_for_status()
    text = resources.files("services.local").joinpath("scenarios", "demo-scale-up.yaml").read_text()
    (request,) = load_manifests(text, "demo-scale-up.yaml")
    assert isinstance(request, RebalanceRequest)
    _produce(bus, TOPICS.rebalance_requests.name, request)
    proposal = follow.until(request.name, lambda s: s.state == RebalanceState.PROPOSAL_READY, deadline)
    if proposal is None:
        return _timed_out(console, stack, "the scale-up proposal")
    console.print(broker_load_table(proposal))
    if not approve_until_executing(console, bus, follow, request.name, deadline):
        return _timed_out(console, stack, "the scale-up execution")
    if follow.until(request.name, lambda s: s.state == RebalanceState.READY, deadline) is None:
        return _timed_out(console, stack, "the scale-up execution")

    console.rule(f"5. safe scale-down: broker {LEAVING} announced for removal, emptied, reported safe, removed")
    console.print(f"[bold]ballast brokers remove {LEAVING}[/bold]")
    removal = BrokerRemovalRequested(brokers=[LEAVING])
    _produce(bus, TOPICS.scaling.name, removal)
    name = f"auto-remove-brokers-{LEAVING}"
    if follow.until(name, lambda s: s.state == RebalanceState.PROPOSAL_READY, deadline) is None:
        return _timed_out(console, stack, "the scale-down proposal")
    if not approve_until_executing(console, bus, follow, name, deadline):
        return _timed_out(console, stack, "the scale-down execution")
    safe = follow.until(name, lambda s: (c := s.condition("BrokersRemovable")) is not None and c.status == "True",
                        deadline)
    if safe is None:
        return _timed_out(console, stack, "the brokers to be reported safe to remove")
    sim.delete(f"/admin/brokers/{LEAVING}").raise_for_status()
    brokers = [b["id"] for b in sim.get("/admin/brokers").json()["brokers"]]
    console.print(f"broker {LEAVING} removed from the cluster; brokers now: {brokers}")
    # Decommissioned for good: placement stops keeping room for it (seed 002's registry would otherwise wait).
    console.print(f"[bold]ballast brokers forget {LEAVING}[/bold]")
    forgotten = BrokerForgotten(id=LEAVING)
    busio.produce(bus, [(TOPICS.observed_brokers.name, forgotten.key.encode(), encode(forgotten), None)])
    sim.close()
    return True


def approve_until_executing(console: Console, bus: BusSettings, follow: RebalanceFollower, name: str, deadline: float) -> bool:
    """Approves until the execution starts: an approval is refused when the proposal Cruise Control computes again
    for the execution drifted from the one shown (the simulator's partitions grow a simulated minute a second)."""
    for _ in range(3):
        console.print(f"approving: [bold]ballast rebalance approve {name}[/bold]")
        _produce(bus, TOPICS.rebalance_actions.name, RebalanceAction(name=name, action="approve"))
        checked = follow.until(name, lambda s: s.state != RebalanceState.PROPOSAL_READY
                               or (not s.checking_approval and s.condition("ProposalChanged") is not None), deadline)
        if checked is None or checked.state != RebalanceState.PROPOSAL_READY:
            return checked is not None
    return False


def _timed_out(console: Console, stack: LocalStack, what: str) -> bool:
    console.print(f"[red]timed out waiting for {what}; logs in {stack.logs}[/red]")
    return False
