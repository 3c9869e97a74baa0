"""Step 6 of the demo (issue 5): load sampled from the simulated Cruise Control, aggregated by the Spark job per
rack-tree domain and broker, and a topic placed towards the lighter brokers."""

from __future__ import annotations

import time
from collections.abc import Callable

import httpx
from rich.console import Console

from events import TOPICS, LoadAggregate, TopicSpec
from services.common import busio
from services.cli.demo.patience import Patience
from services.cli.output import section
from services.cli.views import latest_windows, load_table
from services.common.settings import BusSettings
from services.local.stack import LocalStack

DOMAINS = {"/dc1", "/dc2", "/dc3"}


def aggregates_once(console: Console, bus: BusSettings, patience: Patience,
                    ready: Callable[[list[LoadAggregate]], bool], what: str) -> list[LoadAggregate] | None:
    """The Spark job's aggregates once ``ready`` holds for them (the job warms up during the steps before); None,
    said, when none came for the patience's while."""
    started, said = time.monotonic(), False
    while patience.waiting:
        aggregates = list(busio.latest(bus, TOPICS.load_aggregates).values())
        patience.observe("aggregates", len(aggregates))
        if ready(aggregates):
            if said:
                console.print(f"[dim]first aggregates after {time.monotonic() - started:.0f} s more[/dim]")
            return aggregates
        if not said:
            console.print(f"[dim]waiting for {what} ...[/dim]")
            said = True
        time.sleep(2)
    patience.give_up(console, what)
    return None


def load_step(console: Console, stack: LocalStack, bus: BusSettings, patience: Patience) -> bool:
    section(console, "6. load: Cruise Control's load -> load collector -> Spark (local[2]) -> aggregates -> placement")
    aggregates = aggregates_once(console, bus, patience,
                                 lambda found: DOMAINS <= {a.entity for a in found if a.entity_kind == "domain"},
                                 "the Spark job's load aggregates of every data centre")
    if aggregates is None:
        return False
    console.print(load_table(aggregates))
    brokers = {int(a.entity): a for a in latest_windows(aggregates) if a.entity_kind == "broker"}
    spec = TopicSpec(name="telemetry", partitions=1, replicas=3, placer="multi-level")
    busio.publish(bus, TOPICS.specs, [spec])
    replicas, log_dirs = None, {}
    while patience.waiting and replicas is None:
        found = httpx.post(f"{stack.sim_url}/admin/topics/describe", json={"names": [spec.name]}).json()["topics"]
        if found:
            replicas, log_dirs = found[0]["partitions"][0]["replicas"], found[0]["partitions"][0]["logDirs"]
        time.sleep(0.3)
    if replicas is None:
        return patience.give_up(console, f"{spec.name} to be created")
    loads = "; ".join(f"{b}: {brokers[b].replicas}, {brokers[b].bytes_in_kb_s / 1024:.1f}" for b in sorted(brokers))
    console.print(f"{spec.name} (RF 3, multi-level) placed on brokers {replicas}: one per data centre; within one, "
                  "the fewest replicas, and where those tie, the least load. Brokers (replicas, MB/s in): " + loads,
                  soft_wrap=True)
    dirs = "; ".join(f"{b}: {log_dirs.get(str(b), '?')}" for b in replicas)
    console.print(f"Each replica went to its broker's least-used log directory ({dirs}); the placement is counted in "
                  "the next windows' 'placed' column.", soft_wrap=True)
    return True
