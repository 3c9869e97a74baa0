"""``ballast demo`` / ``make demo``: the whole system on one machine, start to finish, in about a minute."""

from __future__ import annotations

import os
import tempfile
import time
from importlib import resources
from pathlib import Path

import httpx
from rich.console import Console

from events import TOPICS, InvalidEvent, TopicSpec, TopicStatus, decode, encode
from services.cli import busio
from services.cli.manifests import load_specs
from services.cli.views import status_table, transition_line
from services.common.settings import BusSettings
from services.local.stack import LocalStack

# Slow enough to watch a change go pending -> ongoing -> completed; fast enough for a demo.
DEMO_ENV = {"BALLAST_SIMULATOR__MIN_EXECUTION_S": "2.0", "BALLAST_SIMULATOR__TIME_SCALE": "120"}


def _scenario(name: str) -> list[TopicSpec]:
    text = resources.files("services.local").joinpath("scenarios", name).read_text()
    return load_specs(text, name)


def _apply(bus: BusSettings, specs: list[TopicSpec]) -> None:
    busio.produce(bus, [(TOPICS.specs.name, s.key.encode(), encode(s), None) for s in specs])


def _settled(latest: dict[str, TopicStatus], specs: list[TopicSpec]) -> bool:
    for spec in specs:
        status = latest.get(spec.name)
        if status is None or not status.ready or status.replicas != spec.replicas:
            return False
        if status.replicas_change is not None and status.replicas_change.state != "completed":
            return False
    return True


def _follow(console: Console, bus: BusSettings, specs: list[TopicSpec], latest: dict[str, TopicStatus],
            deadline: float) -> bool:
    """Print status transitions as they happen until every spec is reflected; False on timeout."""
    for record in busio.consume(bus, [TOPICS.status.name], follow=True, deadline=deadline):
        try:
            status = decode(record.value, expect=(TopicStatus,)).event
        except InvalidEvent:
            continue
        assert isinstance(status, TopicStatus)
        previous = latest.get(status.topic)
        if previous is not None and previous.model_dump(exclude={"conditions"}) == status.model_dump(exclude={"conditions"}) \
                and [c.type for c in previous.conditions] == [c.type for c in status.conditions]:
            latest[status.topic] = status
            continue
        latest[status.topic] = status
        console.print(f"[dim]{time.strftime('%H:%M:%S')}[/dim]  {transition_line(status, previous)}", soft_wrap=True)
        if _settled(latest, specs):
            return True
    return _settled(latest, specs)


def run_demo(console: Console, *, timeout_s: float) -> int:
    run_dir = Path(tempfile.mkdtemp(prefix="ballast-demo-"))
    started = time.monotonic()
    deadline = started + timeout_s
    console.rule("[bold]Ballast demo")
    with LocalStack(run_dir, env={**DEMO_ENV, **{k: v for k, v in os.environ.items() if k.startswith("BALLAST_SIM")}}) as stack:
        stack.start(progress=lambda m: console.print(f"[dim]- {m}[/dim]"))
        bus = stack.settings().bus
        latest: dict[str, TopicStatus] = {}

        create = _scenario("demo-create.yaml")
        console.rule(f"1. create {len(create)} topics")
        _apply(bus, create)
        if not _follow(console, bus, create, latest, deadline):
            console.print(f"[red]timed out waiting for the topics; logs in {stack.logs}[/red]")
            return 1

        change = _scenario("demo-change.yaml")
        console.rule("2. change replication factors: one raised, one lowered, a batch of three, one below min ISR")
        before = httpx.get(f"{stack.sim_url}/faults/stats").json()["requestsServed"]
        change_started = time.monotonic()
        _apply(bus, change)
        desired = {s.name: s for s in create} | {s.name: s for s in change}
        if not _follow(console, bus, list(desired.values()), latest, deadline):
            console.print(f"[red]timed out waiting for the changes; logs in {stack.logs}[/red]")
            return 1
        served = httpx.get(f"{stack.sim_url}/faults/stats").json()["requestsServed"] - before

        console.rule("final state")
        console.print(status_table(list(latest.values()), title="Topic status (from the status topic)"))
        console.print(f"{len(change)} replication-factor changes completed in {time.monotonic() - change_started:.1f} s "
                      f"with {served} Cruise Control requests (submissions and polls); "
                      f"total demo time {time.monotonic() - started:.1f} s.")
        console.print("[dim]stopping the stack ...[/dim]")
    console.print("[green]demo finished[/green]")
    return 0
