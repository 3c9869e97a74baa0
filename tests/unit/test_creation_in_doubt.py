"""A creation whose answer was lost (the connection it went on closed: a broker killed mid-request, seen on the real
cluster as kafka-python's "Cancelled") may still have been carried out: the topic reconciler looks, and a topic the
cluster shows as asked is created, its placeholders remembered, instead of failing and being asked again later as a
plain replication-factor change that forgets them."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from pathlib import Path

import pytest

from events import TOPICS, PlaceholderRecord, TopicSpec
from services.adapters.admin import ClusterUnavailable, NewTopic
from services.adapters.admin.simulator import SimulatorClusterAdmin
from services.cluster_sim.app import Simulator
from services.common.outbox import MemoryOutbox
from services.common.settings import PlacementSettings, Settings
from services.topic_reconciler.app import TopicReconciler
from tests.unit.records import record
from tests.unit.simulated import FOUR_BROKERS, simulated_cluster


class AnswerLost(SimulatorClusterAdmin):
    """Creates the topics, then answers as a connection closed mid-request does."""

    async def create_topics(self, topics: Sequence[NewTopic], *, first=None):  # noqa: ANN001, ANN201
        await super().create_topics(topics, first=first)
        raise ClusterUnavailable("Cancelled: Cancelled")


@pytest.fixture
async def cluster() -> AsyncIterator[tuple[Simulator, AnswerLost]]:
    async with simulated_cluster(brokers=FOUR_BROKERS, admin=AnswerLost) as simulated:
        yield simulated.simulator, simulated.admin


async def test_a_topic_created_though_the_answer_was_lost_is_created_with_its_placeholders(
        cluster, tmp_path: Path) -> None:
    simulator, admin = cluster
    outbox = MemoryOutbox()
    settings = Settings(data_dir=tmp_path, placement=PlacementSettings(under_replicated="enabled_prefer_observed"))
    service = TopicReconciler(settings, admin=admin, outbox=outbox)
    await service.intake.start()
    await service.intake.handover._taking  # type: ignore[union-attr,misc]  # the first load
    await service.reconciler.observe_brokers(record_news=False)
    simulator.cluster.brokers[4].alive = False  # seen, and down now: RF 4 keeps a placeholder for it
    await service.intake.on_spec_events([record(TOPICS.specs, TopicSpec(name="orders", partitions=2, replicas=4), 0)])
    assert [len(p.replicas) for p in simulator.cluster.topics["orders"].partitions] == [3, 3]
    (kept,) = [r for r in outbox.on(TOPICS.placeholders) if isinstance(r, PlaceholderRecord)]
    assert kept.topic == "orders" and not kept.filled
    status = outbox.on(TOPICS.status)[-1]
    assert status.topic == "orders" and status.condition("UnderReplicated") is not None
