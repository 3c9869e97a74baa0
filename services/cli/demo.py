"""``ballast demo`` / ``make demo``: the whole system on one machine, start to finish, in about a minute."""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Callable
from importlib import resources
from pathlib import Path

import httpx
from rich.console import Console

from events import TOPICS, InvalidEvent, TopicSpec, TopicStatus, decode, encode
from services.common import busio
from services.cli.demo_disks import disks_step
from services.cli.demo_load import load_step
from services.cli.demo_scaling import scale_up_and_down
from services.cli.manifests import load_specs
from services.cli.views import status_table, transition_line
from services.common.settings import BusSettings
from services.local.stack import LocalStack

# Slow enough to watch a change go pending -> ongoing -> completed; fast enough for a demo.
DEMO_ENV = {"BALLAST_SIMULATOR__MIN_EXECUTION_S": "2.0", "BALLAST_SIMULATOR__TIME_SCALE": "120",
            # Step 3 creates a topic while a data centre is down (seed 002).
            "BALLAST_PLACEMENT__UNDER_REPLICATED": "enabled_prefer_observed",
            "BALLAST_PLACEMENT__OBSERVE_INTERVAL_S": "1",
            # Step 6: load sampled every 2 s, aggregated by Spark every 2 s.
            "BALLAST_LOAD_COLLECTOR__INTERVAL_S": "2", "BALLAST_SPARK__TRIGGER_S": "2",
            # Step 7: drained directories reported (and kept empty) within a second.
            "BALLAST_REBALANCER__OBSERVE_INTERVAL_S": "1"}
DOWN_DC = (5, 6)  # the simulator's /dc3 brokers


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


def _under_replicated(latest: dict[str, TopicStatus], specs: list[TopicSpec]) -> bool:
    return all((s := latest.get(spec.name)) is not None and s.condition("UnderReplicated") is not None
               for spec in specs)


# Partition -> last offset printed, so a later step does not print the earlier steps' transitions again.
_Seen = dict[int, int]


def _follow(console: Console, bus: BusSettings, specs: list[TopicSpec], latest: dict[str, TopicStatus],
            deadline: float, until: Callable[[dict[str, TopicStatus], list[TopicSpec]], bool] = _settled,
            seen: _Seen | None = None) -> bool:
    """Print status transitions as they happen until ``until`` holds (default: every spec is reflected); False on
    timeout."""
    seen = seen if seen is not None else {}
    for record in busio.consume(bus, [TOPICS.status.name], follow=True, deadline=deadline):
        if record.offset <= seen.get(record.partition, -1):
            continue
        seen[record.partition] = record.offset
        try:
            status = decode(record.value, topic=TOPICS.status).event
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
        if until(latest, specs):
            return True
    return until(latest, specs)


def run_demo(console: Console, *, timeout_s: float) -> int:
    run_dir = Path(tempfile.mkdtemp(prefix="ballast-demo-"))
    started = time.monotonic()
    deadline = started + timeout_s
    console.rule("[bold]Ballast demo")
    with LocalStack(run_dir, env={**DEMO_ENV, **{k: v for k, v in os.environ.items() if k.startswith("BALLAST_SIM")}}) as stack:
        stack.start(progress=lambda m: console.print(f"[dim]- {m}[/dim]"))
        console.print("[dim]- starting the Spark load-aggregates job (local[2]); it warms up during steps 1-5[/dim]")
        stack.start_spark_job()
        bus = stack.settings().bus
        latest: dict[str, TopicStatus] = {}
        seen: _Seen = {}

        create = _scenario("demo-create.yaml")
        console.rule(f"1. create {len(create)} topics")
        _apply(bus, create)
        if not _follow(console, bus, create, latest, deadline, seen=seen):
            console.print(f"[red]timed out waiting for the topics; logs in {stack.logs}[/red]")
            return 1

        change = _scenario("demo-change.yaml")
        console.rule("2. change replication factors: one raised, one lowered, a batch of three, one below min ISR")
        before = httpx.get(f"{stack.sim_url}/faults/stats").json()["requestsServed"]
        change_started = time.monotonic()
        _apply(bus, change)
        desired = {s.name: s for s in create} | {s.name: s for s in change}
        if not _follow(console, bus, list(desired.values()), latest, deadline, seen=seen):
            console.print(f"[red]timed out waiting for the changes; logs in {stack.logs}[/red]")
            return 1
        served = httpx.get(f"{stack.sim_url}/faults/stats").json()["requestsServed"] - before
        change_s = time.monotonic() - change_started

        if not _data_centre_down(console, stack, bus, latest, deadline, seen):
            return 1
        if not scale_up_and_down(console, stack, bus, deadline):
            return 1
        if not load_step(console, stack, bus, deadline):
            return 1
        if not disks_step(console, stack, bus, deadline, number=7, skewed=1, drained=2):
            return 1

        console.rule("final state")
        console.print(status_table(list(latest.values()), title="Topic status (from the status topic)"))
        console.print(f"{len(change)} replication-factor changes completed in {change_s:.1f} s "
                      f"with {served} Cruise Control requests (submissions and polls); "
                      f"total demo time {time.monotonic() - started:.1f} s.")
        console.print("[dim]stopping the stack ...[/dim]")
    console.print("[green]demo finished[/green]")
    return 0


def _data_centre_down(console: Console, stack: LocalStack, bus: BusSettings, latest: dict[str, TopicStatus],
                      deadline: float, seen: _Seen) -> bool:
    """Step 3: /dc3 goes down, an RF 3 topic is created with a placeholder kept for /dc3 in every partition (so no
    partition has two replicas in one DC), /dc3 returns and the placeholders are filled."""
    specs = _scenario("demo-dc-down.yaml")
    console.rule(f"3. /dc3 down (brokers {', '.join(map(str, DOWN_DC))}): create {specs[0].name} under-replicated, "
                 "then bring /dc3 back")
    for broker in DOWN_DC:
        httpx.post(f"{stack.sim_url}/admin/brokers/{broker}/stop").raise_for_status()
    time.sleep(1.5)  # one look at the brokers by the reconciler
    _apply(bus, specs)
    if not _follow(console, bus, specs, latest, deadline, until=_under_replicated, seen=seen):
        console.print(f"[red]timed out waiting for the under-replicated creation; logs in {stack.logs}[/red]")
        return False
    topic = httpx.post(f"{stack.sim_url}/admin/topics/describe", json={"names": [specs[0].name]}).json()["topics"][0]
    console.print("replicas in Kafka now: " + "  ".join(
        f"p{p['partition']}={p['replicas']}" for p in topic["partitions"]))
    for broker in DOWN_DC:
        httpx.post(f"{stack.sim_url}/admin/brokers/{broker}/start").raise_for_status()
    if not _follow(console, bus, specs, latest, deadline, seen=seen):
        console.print(f"[red]timed out waiting for the placeholders to be filled; logs in {stack.logs}[/red]")
        return False
    topic = httpx.post(f"{stack.sim_url}/admin/topics/describe", json={"names": [specs[0].name]}).json()["topics"][0]
    console.print("after /dc3 returned: " + "  ".join(f"p{p['partition']}={p['replicas']}" for p in topic["partitions"]))
    return True
