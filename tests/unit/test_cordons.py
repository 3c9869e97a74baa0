"""Cordoned log directories (issue 55, KIP-1066), on the simulator: its model and admin API cordon as Kafka 4.3 does
(the broker config ``cordoned.log.dirs``, ``*`` for all), and the topic reconciler places no new replica on a broker
whose every directory is cordoned, nor in a cordoned directory, as Kafka's own placer does not."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from events import TOPICS, TopicSpec
from services.cluster_sim.app import Simulator
from services.adapters.admin import CORDONED_LOG_DIRS, OperationRefused, Unsupported
from services.adapters.admin.simulator import SimulatorClusterAdmin
from services.common.outbox import MemoryOutbox
from services.common.settings import PlacementSettings, Settings
from services.topic_reconciler.app import TopicReconciler
from tests.unit.records import record
from tests.unit.simulated import FOUR_BROKERS, simulated_cluster


@pytest.fixture
async def cluster() -> AsyncIterator[tuple[Simulator, SimulatorClusterAdmin]]:
    async with simulated_cluster(brokers=FOUR_BROKERS) as simulated:
        yield simulated.simulator, simulated.admin


async def reconciler(admin: SimulatorClusterAdmin, tmp_path: Path, placer: str) -> TopicReconciler:
    settings = Settings(data_dir=tmp_path, placement=PlacementSettings(placer=placer))
    service = TopicReconciler(settings, admin=admin, outbox=MemoryOutbox())
    await service.intake.start()
    await service.intake.handover._taking  # type: ignore[union-attr,misc]  # the first load
    return service


def brokers_of(simulator: Simulator, topic: str) -> set[int]:
    return {b for p in simulator.cluster.topics[topic].partitions for b in p.replicas}


async def test_a_cordon_is_a_broker_config_and_describe_log_dirs_shows_it(cluster) -> None:
    simulator, admin = cluster
    first, second = simulator.cluster.brokers[1].log_dirs
    await admin.alter_broker_configs(1, {CORDONED_LOG_DIRS: first})
    assert await admin.broker_configs(1) == {CORDONED_LOG_DIRS: first}
    dirs = {(d.broker, d.path): d.cordoned for d in await admin.describe_log_dirs(replicas=False)}
    assert dirs[(1, first)] and not dirs[(1, second)] and not any(c for (b, _), c in dirs.items() if b != 1)
    with pytest.raises(OperationRefused, match="not one of the broker's log directories"):
        await admin.alter_broker_configs(1, {CORDONED_LOG_DIRS: "/nowhere"})
    with pytest.raises(Unsupported, match="models no broker config but cordoned.log.dirs"):
        await admin.alter_broker_configs(1, {"leader.replication.throttled.rate": "100"})
    await admin.alter_broker_configs(1, {CORDONED_LOG_DIRS: None})
    assert not any(d.cordoned for d in await admin.describe_log_dirs(replicas=False))


async def test_the_simulators_own_placer_skips_a_broker_whose_every_directory_is_cordoned(cluster) -> None:
    simulator, admin = cluster
    await admin.alter_broker_configs(4, {CORDONED_LOG_DIRS: "*"})
    await admin.create_topic("plain", 8, 3, {})
    assert brokers_of(simulator, "plain") == {1, 2, 3}


@pytest.mark.parametrize("placer", ["striped", "multi-level"])
async def test_ballast_places_no_new_replica_on_a_fully_cordoned_broker_nor_in_a_cordoned_directory(
        cluster, tmp_path: Path, placer: str) -> None:
    simulator, admin = cluster
    service = await reconciler(admin, tmp_path, placer)
    await admin.alter_broker_configs(4, {CORDONED_LOG_DIRS: "*"})
    kept, cordoned = simulator.cluster.brokers[1].log_dirs
    await admin.alter_broker_configs(1, {CORDONED_LOG_DIRS: cordoned})
    await service.intake.on_spec_events([record(TOPICS.specs, TopicSpec(name="orders", partitions=12, replicas=3), 0)])
    assert brokers_of(simulator, "orders") == {1, 2, 3}
    on_broker_1 = {p.log_dirs.get(1) for p in simulator.cluster.topics["orders"].partitions if 1 in p.replicas}
    assert on_broker_1 == {kept}
    # Uncordoned, the broker takes new replicas again (the next look reads the cordons afresh).
    await admin.alter_broker_configs(4, {CORDONED_LOG_DIRS: None})
    await service.intake.on_spec_events([record(TOPICS.specs, TopicSpec(name="later", partitions=12, replicas=3), 1)])
    assert 4 in brokers_of(simulator, "later")


async def test_a_replication_factor_only_cordoned_brokers_could_give_is_refused_not_placed_there(
        cluster, tmp_path: Path) -> None:
    simulator, admin = cluster
    service = await reconciler(admin, tmp_path, "striped")
    for broker in (3, 4):
        await admin.alter_broker_configs(broker, {CORDONED_LOG_DIRS: "*"})
    await service.intake.on_spec_events([record(TOPICS.specs, TopicSpec(name="wide", partitions=2, replicas=3), 0)])
    assert "wide" not in simulator.cluster.topics
    [status] = [s for s in service.outbox.on(TOPICS.status) if s.topic == "wide"]  # type: ignore[attr-defined]
    assert not status.ready and "cordoned" in (status.condition("Ready").message or "")  # type: ignore[union-attr]


async def test_added_partitions_and_placement_answers_leave_a_fully_cordoned_broker_out(
        cluster, tmp_path: Path) -> None:
    from events import PlacementRequest

    simulator, admin = cluster
    service = await reconciler(admin, tmp_path, "striped")
    await service.intake.on_spec_events([record(TOPICS.specs, TopicSpec(name="grows", partitions=2, replicas=3), 0)])
    before = [list(p.replicas) for p in simulator.cluster.topics["grows"].partitions]
    await admin.alter_broker_configs(4, {CORDONED_LOG_DIRS: "*"})
    await service.intake.on_spec_events([record(TOPICS.specs, TopicSpec(name="grows", partitions=10, replicas=3), 1)])
    after = [list(p.replicas) for p in simulator.cluster.topics["grows"].partitions]
    assert after[:2] == before and len(after) == 10
    assert all(4 not in replicas for replicas in after[2:])
    answer = await service.reconciler.placing.answer(PlacementRequest(request_id="r", topic="x", partitions=12,
                                                                      replication_factor=3))
    assert answer.error is None and answer.assignment and all(4 not in r for r in answer.assignment)


async def test_placeholders_are_filled_on_brokers_that_take_new_replicas_only(cluster) -> None:
    """A topic created while brokers were down keeps placeholders; filled later, none goes to the broker whose every
    directory is cordoned, though it is the emptiest (the fill prefers the broker holding fewest replicas)."""
    from events import PlaceholderRecord
    from events.envelope import utcnow
    from services.topic_reconciler.placing import Placing

    simulator, admin = cluster
    await admin.create_topic("waiting", 4, 2, assignment=[[1, 2], [2, 3], [3, 1], [1, 2]])
    await admin.alter_broker_configs(4, {CORDONED_LOG_DIRS: "*"})
    record = PlaceholderRecord(topic="waiting", replication_factor=3,
                               assignment=[[1, 2, -1], [2, 3, -1], [3, 1, -1], [1, 2, -1]])
    placing = Placing(admin, MemoryOutbox(), PlacementSettings(), clock=utcnow)
    filled = await placing.fill("waiting", record, load_aware=False, correlation_id=None)
    assert filled is not None and filled.record.filled
    assert [len(p.replicas) for p in simulator.cluster.topics["waiting"].partitions] == [3, 3, 3, 3]
    assert brokers_of(simulator, "waiting") == {1, 2, 3}


def test_a_replica_leaving_a_drained_directory_never_goes_to_a_cordoned_one() -> None:
    from services.adapters.admin import LogDirInfo, LogDirReplica
    from services.rebalancer.observers.drained_dirs import _plan_moves

    replica = LogDirReplica(topic="t", partition=0, size_bytes=10)
    dirs = [LogDirInfo(1, "/drained", replicas=(replica,)), LogDirInfo(1, "/emptiest", cordoned=True),
            LogDirInfo(1, "/other", replicas=(LogDirReplica(topic="u", partition=0, size_bytes=10**9),))]
    moves: dict = {}
    _plan_moves(1, {"/drained"}, dirs, {}, moves)
    assert moves == {"t": {(0, 1): "/other"}}
    moves = {}
    _plan_moves(1, {"/drained"}, dirs[:2], {}, moves)  # nowhere else to go: it stays, said in the log
    assert moves == {}
