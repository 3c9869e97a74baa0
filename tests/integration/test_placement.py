"""Topic creation and growth go through the chosen placer, on the real local broker and the cluster simulator
(6 brokers: 3 DCs x 2 racks)."""

from __future__ import annotations

from collections import Counter

from events import TopicSpec
from tests.integration.harness import Ballast


def dcs_of(ballast: Ballast) -> dict[int, str]:
    brokers = ballast.sim.get("/admin/brokers").json()["brokers"]
    return {b["id"]: b["rack"].split("/")[1] for b in brokers}


def replicas_of(ballast: Ballast, topic: str) -> list[list[int]]:
    found = ballast.cluster_topic(topic)
    assert found is not None, f"{topic} was not created"
    return [p["replicas"] for p in sorted(found["partitions"], key=lambda p: p["partition"])]


def test_multi_level_spec_places_one_replica_per_dc_and_continues_when_partitions_grow(
        ballast: Ballast, name: str) -> None:
    topic = f"{name}-orders"
    ballast.apply(TopicSpec(name=topic, partitions=12, replicas=3, placer="multi-level"))
    ballast.watcher.wait_rf(topic, 3)
    dcs = dcs_of(ballast)
    placed = replicas_of(ballast, topic)
    assert len(placed) == 12
    assert all(len({dcs[b] for b in replicas}) == 3 for replicas in placed), placed
    assert set(Counter(b for replicas in placed for b in replicas).values()) == {6}, "6 replicas on every broker"

    ballast.apply(TopicSpec(name=topic, partitions=18, replicas=3, placer="multi-level"))
    ballast.watcher.wait_status(topic, lambda s: s.partitions == 18, "18 partitions")
    grown = replicas_of(ballast, topic)
    assert grown[:12] == placed, "existing partitions do not move"
    assert all(len({dcs[b] for b in replicas}) == 3 for replicas in grown[12:]), grown[12:]
    assert set(Counter(b for replicas in grown for b in replicas).values()) == {9}


def test_a_placement_error_is_reported_and_the_topic_created_once_it_can_be(ballast: Ballast, name: str) -> None:
    topic = f"{name}-wide"
    ballast.stop_brokers(5, 6)
    try:
        ballast.apply(TopicSpec(name=topic, partitions=2, replicas=5, placer="multi-level"))
        status = ballast.watcher.wait_status(topic, lambda s: any("CreateTopic failed" in (c.message or "")
                                                                  for c in s.conditions), "creation refused")
        message = next(c.message for c in status.conditions if "CreateTopic failed" in (c.message or ""))
        assert "replication factor 5 is above the 4 alive brokers" in message, message
        assert ballast.cluster_topic(topic) is None
    finally:
        ballast.start_brokers(5, 6)
    ballast.watcher.wait_rf(topic, 5)  # the resync retries once the brokers are back
    dcs = dcs_of(ballast)
    assert all(max(Counter(dcs[b] for b in r).values()) == 2 for r in replicas_of(ballast, topic))
