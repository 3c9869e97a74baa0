"""Replication-factor increases and cordons (issue 55), the replicas-change service on the simulator: Cruise
Control's topic_configuration takes no brokers to avoid, so while a broker is fully cordoned the batch's increases
are asked as a dry run first; a topic whose proposal would add a replica there is held with the reason, the others
go on, and once the cordon is lifted the held one is sent."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from events import TOPICS, ReplicasChangeCommand, ReplicasChangeRecord
from services.adapters.admin import CORDONED_LOG_DIRS
from services.adapters.admin.simulator import SimulatorClusterAdmin
from services.cluster_sim.app import Simulator
from services.common.outbox import MemoryOutbox
from services.common.settings import ReplicasChangeSettings, Settings
from services.replicas_change.app import ReplicasChangeService
from services.replicas_change.changes import ReplicasChanges
from tests.unit.records import record
from tests.unit.simulated import FOUR_BROKERS, QUICK_EXECUTIONS, simulated_cluster


@pytest.fixture
async def service(tmp_path: Path) -> AsyncIterator[tuple[ReplicasChanges, MemoryOutbox, Simulator,
                                                        SimulatorClusterAdmin]]:
    async with simulated_cluster(brokers=FOUR_BROKERS, **QUICK_EXECUTIONS) as cluster:
        admin = cluster.admin
        # "full" fills every broker but 4 (the simulated Cruise Control adds the least-loaded broker: 4, when it
        # may); "low" is at RF 3 already and is lowered, which places nothing.
        await admin.create_topic("full", 3, 2, assignment=[[1, 2], [2, 3], [3, 1]])
        await admin.create_topic("low", 3, 3, assignment=[[1, 2, 3]] * 3)
        outbox = MemoryOutbox()
        settings = Settings(data_dir=tmp_path, replicas_change=ReplicasChangeSettings(
            batch_quiet_s=0.01, batch_window_s=0.01, retry_initial_s=0.05, retry_max_s=0.05))
        changes = ReplicasChangeService(settings, admin=admin, cruise_control=cluster.cruise_control(),
                                        outbox=outbox).changes
        await changes.rebuild()
        yield changes, outbox, cluster.simulator, admin


def latest(outbox: MemoryOutbox) -> dict[str, ReplicasChangeRecord]:
    return {r.topic: r for r in outbox.on(TOPICS.replicas_state) if isinstance(r, ReplicasChangeRecord)}


async def settle(changes: ReplicasChanges, outbox: MemoryOutbox, topics: set[str]) -> None:
    for _ in range(100):
        await changes.submit_due()
        await changes.poll()
        if {t for t, r in latest(outbox).items() if r.state == "completed"} >= topics:
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"not completed: {latest(outbox)}")


async def test_an_increase_that_would_use_a_cordoned_broker_is_held_until_the_cordon_is_lifted(service) -> None:
    changes, outbox, simulator, admin = service
    await admin.alter_broker_configs(4, {CORDONED_LOG_DIRS: "*"})
    await changes.on_command_events([
        record(TOPICS.replicas_commands, ReplicasChangeCommand(topic="full", target_replicas=3, generation=1), 0),
        record(TOPICS.replicas_commands, ReplicasChangeCommand(topic="low", target_replicas=2, generation=1), 1)])
    await asyncio.sleep(0.02)
    await settle(changes, outbox, {"low"})
    held = latest(outbox)["full"]
    assert held.state == "pending" and "broker(s) 4, whose log directories are all cordoned" in (held.message or "")
    assert all(4 not in p.replicas for p in simulator.cluster.topics["full"].partitions)
    assert all(len(p.replicas) == 2 for p in simulator.cluster.topics["low"].partitions)
    for _ in range(3):  # asked again: still held, and nothing placed on broker 4
        await asyncio.sleep(0.06)
        await changes.submit_due()
    assert latest(outbox)["full"].state == "pending"
    assert all(4 not in p.replicas for p in simulator.cluster.topics["full"].partitions)
    await admin.alter_broker_configs(4, {CORDONED_LOG_DIRS: None})
    await asyncio.sleep(0.06)
    await settle(changes, outbox, {"full", "low"})
    assert all(len(p.replicas) == 3 for p in simulator.cluster.topics["full"].partitions)


async def test_what_is_sent_is_what_a_dry_run_found_clean(service) -> None:
    """Two increases in one batch: in the first dry run only "many" lands on cordoned broker 4 (its replicas make
    broker 4 the fullest for "one"); without them, "one" would land there too. The dry run is asked again on what is
    left, so "one" is held as well and nothing is sent that a dry run did not check."""
    changes, outbox, simulator, admin = service
    await admin.create_topic("many", 18, 2, assignment=[[1, 2], [2, 3], [3, 1]] * 6)
    await admin.create_topic("one", 1, 2, assignment=[[1, 2]])
    await admin.alter_broker_configs(4, {CORDONED_LOG_DIRS: "*"})
    await changes.on_command_events([
        record(TOPICS.replicas_commands, ReplicasChangeCommand(topic=t, target_replicas=3, generation=1), i)
        for i, t in enumerate(("many", "one"))])
    await asyncio.sleep(0.02)
    await changes.submit_due()
    for _ in range(3):
        await asyncio.sleep(0.06)
        await changes.submit_due()
        await changes.poll()
    held = latest(outbox)
    assert {t: r.state for t, r in held.items()} == {"many": "pending", "one": "pending"}
    assert all("cordoned" in (held[t].message or "") for t in ("many", "one"))
    assert all(4 not in p.replicas for t in ("many", "one") for p in simulator.cluster.topics[t].partitions)
