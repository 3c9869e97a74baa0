"""The topic reconciler's shell driven through its ports without a broker: specs handed to its handler as the agent
would, the bus an in-memory outbox, the cluster the simulator's admin API."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from events import TOPICS, TopicSpec, TopicStatus
from services.cluster_sim.app import Simulator
from services.common.admin.simulator import SimulatorClusterAdmin
from services.common.outbox import MemoryOutbox
from services.common.settings import Settings, SimulatorSettings
from services.local.broker import free_port
from services.topic_reconciler.app import TopicReconciler
from tests.unit.records import Message, Record, record


@pytest.fixture
async def reconciler(tmp_path: Path) -> AsyncIterator[tuple[TopicReconciler, MemoryOutbox, Simulator]]:
    simulator = Simulator(SimulatorSettings(cruise_control_port=free_port(), admin_port=free_port(),
                                            brokers=["1:/dc1/r1", "2:/dc1/r2", "3:/dc2/r1"]))
    await simulator.start()
    admin = SimulatorClusterAdmin(f"http://127.0.0.1:{simulator.settings.admin_port}")
    outbox = MemoryOutbox()
    settings = Settings(data_dir=tmp_path)
    service = TopicReconciler(settings, admin=admin, outbox=outbox)
    await service.intake.start()
    await service.intake.handover._taking  # type: ignore[union-attr,misc]  # the first load
    try:
        yield service, outbox, simulator
    finally:
        await admin.aclose()
        await simulator.stop()


def statuses(outbox: MemoryOutbox, topic: str) -> list[TopicStatus]:
    return [s for s in outbox.on(TOPICS.status) if s.topic == topic]


async def test_a_spec_creates_its_topic_and_publishes_its_status_once(reconciler) -> None:
    service, outbox, simulator = reconciler
    spec = TopicSpec(name="orders", partitions=3, replicas=2)
    await service.intake.on_spec_events([record(TOPICS.specs, spec, offset=4)])
    assert len(simulator.cluster.topics["orders"].partitions) == 3
    (status,) = statuses(outbox, "orders")
    assert status.ready and status.generation == 5 and status.replicas == 2
    assert [p.topic for p in outbox.on(TOPICS.placements)] == ["orders"]
    # Read again (after a restart of the agent, or a handover): a record older than the spec applied is skipped,
    # whatever it says.
    older = TopicSpec(name="orders", partitions=3, replicas=3)
    await service.intake.on_spec_events([record(TOPICS.specs, older, offset=3)])
    assert len(statuses(outbox, "orders")) == 1 and outbox.on(TOPICS.replicas_commands) == []


async def test_bad_records_go_to_the_dead_letters_and_the_rest_is_handled(reconciler) -> None:
    service, outbox, simulator = reconciler
    good = TopicSpec(name="payments", partitions=1, replicas=1)
    await service.intake.on_spec_events([
        Record(b"junk", b"{not json", Message(TOPICS.specs.name, 0)),
        record(TOPICS.specs, TopicSpec(name="__consumer_offsets", partitions=1, replicas=1), offset=1),
        record(TOPICS.specs, good, offset=2, key=b"another-name"),
        record(TOPICS.specs, good, offset=3),
    ])
    reasons = [letter.reason for letter in outbox.on(TOPICS.dead_letters)]
    assert len(reasons) == 3
    assert reasons[0].startswith("not JSON") and "internal topic" in reasons[1] and "key" in reasons[2]
    assert "payments" in simulator.cluster.topics and "__consumer_offsets" not in simulator.cluster.topics


async def test_an_rf_change_is_a_command_to_the_replicas_change_service(reconciler) -> None:
    service, outbox, _ = reconciler
    await service.intake.on_spec_events([record(TOPICS.specs, TopicSpec(name="logs", partitions=1, replicas=2), 0)])
    await service.intake.on_spec_events([record(TOPICS.specs, TopicSpec(name="logs", partitions=1, replicas=3), 1)])
    (command,) = outbox.on(TOPICS.replicas_commands)
    assert (command.topic, command.target_replicas, command.generation) == ("logs", 3, 2)
    assert statuses(outbox, "logs")[-1].replicas_change.state == "pending"  # type: ignore[union-attr]
