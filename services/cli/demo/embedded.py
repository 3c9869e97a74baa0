"""``ballast demo`` / ``make demo`` on the embedded stack (Tansu and the simulator): the whole system on one machine,
start to finish, in a few minutes."""

from __future__ import annotations

import os
import time

import httpx
from rich.console import Console

from events import TopicStatus
from services.cli.demo import run_dir as run_directory
from services.cli.demo.disks import disks_step
from services.cli.demo.follow import Seen, apply, follow, scenario, under_replicated
from services.cli.demo.load import load_step
from services.cli.demo.patience import Patience
from services.cli.demo.scaling import scale_up_and_down
from services.cli.output import section
from services.cli.views import status_table
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


def run_demo(console: Console, *, stall_s: float, keep: bool = False) -> int:
    started = time.monotonic()
    section(console, "[bold]Ballast demo")
    run_dir = run_directory.create(console, "ballast-demo-")
    with LocalStack(run_dir, env={**DEMO_ENV, **{k: v for k, v in os.environ.items() if k.startswith("BALLAST_SIM")}}) as stack:
        patience = Patience(stall_s, logs=stack.logs)
        stack.start(progress=lambda m: console.print(f"[dim]- {m}[/dim]"))
        console.print("[dim]- starting the Spark load-aggregates job (local[2]); it warms up during steps 1-5[/dim]")
        stack.start_spark_job()
        if not _steps(console, stack, patience):
            return 1
        console.print(f"total demo time {time.monotonic() - started:.1f} s.")
        console.print("[dim]stopping the stack ...[/dim]")
    return run_directory.finish(console, run_dir, keep=keep)


def _steps(console: Console, stack: LocalStack, patience: Patience) -> bool:
    bus = stack.settings().bus
    latest: dict[str, TopicStatus] = {}
    seen: Seen = {}

    create = scenario("demo-create.yaml")
    section(console, f"1. create {len(create)} topics")
    apply(bus, create)
    if not follow(console, bus, create, latest, patience, seen=seen):
        return patience.give_up(console, "the topics to be created")

    change = scenario("demo-change.yaml")
    section(console, "2. change replication factors: one raised, one lowered, a batch of three, one below min ISR")
    before = httpx.get(f"{stack.sim_url}/faults/stats").json()["requestsServed"]
    change_started = time.monotonic()
    apply(bus, change)
    desired = {s.name: s for s in create} | {s.name: s for s in change}
    if not follow(console, bus, list(desired.values()), latest, patience, seen=seen):
        return patience.give_up(console, "the replication-factor changes")
    served = httpx.get(f"{stack.sim_url}/faults/stats").json()["requestsServed"] - before
    change_s = time.monotonic() - change_started

    if not (_data_centre_down(console, stack, bus, latest, patience, seen)
            and scale_up_and_down(console, stack, bus, patience)
            and load_step(console, stack, bus, patience)
            and disks_step(console, stack, bus, patience, number=7, skewed=1, drained=2)):
        return False

    section(console, "final state")
    console.print(status_table(list(latest.values()), title="Topic status (from the status topic)"))
    console.print(f"{len(change)} replication-factor changes completed in {change_s:.1f} s "
                  f"with {served} Cruise Control requests (submissions and polls).")
    return True


def _data_centre_down(console: Console, stack: LocalStack, bus: BusSettings, latest: dict[str, TopicStatus],
                      patience: Patience, seen: Seen) -> bool:
    """Step 3: /dc3 goes down, an RF 3 topic is created with a placeholder kept for /dc3 in every partition (so no
    partition has two replicas in one DC), /dc3 returns and the placeholders are filled."""
    specs = scenario("demo-dc-down.yaml")
    section(console, f"3. /dc3 down (brokers {', '.join(map(str, DOWN_DC))}): create {specs[0].name} "
                     "under-replicated, then bring /dc3 back")
    for broker in DOWN_DC:
        httpx.post(f"{stack.sim_url}/admin/brokers/{broker}/stop").raise_for_status()
    time.sleep(1.5)  # one look at the brokers by the reconciler
    apply(bus, specs)
    if not follow(console, bus, specs, latest, patience, until=under_replicated, seen=seen):
        return patience.give_up(console, "the under-replicated creation")
    topic = httpx.post(f"{stack.sim_url}/admin/topics/describe", json={"names": [specs[0].name]}).json()["topics"][0]
    console.print("replicas in Kafka now: " + "  ".join(
        f"p{p['partition']}={p['replicas']}" for p in topic["partitions"]))
    for broker in DOWN_DC:
        httpx.post(f"{stack.sim_url}/admin/brokers/{broker}/start").raise_for_status()
    if not follow(console, bus, specs, latest, patience, seen=seen):
        return patience.give_up(console, "the placeholders to be filled")
    topic = httpx.post(f"{stack.sim_url}/admin/topics/describe", json={"names": [specs[0].name]}).json()["topics"][0]
    console.print("after /dc3 returned: " + "  ".join(f"p{p['partition']}={p['replicas']}" for p in topic["partitions"]))
    return True
