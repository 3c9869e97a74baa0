"""Topic creation and growth go through the chosen placer, on the real local broker and the cluster simulator
(6 brokers: 3 DCs x 2 racks)."""

from __future__ import annotations

import time
from collections import Counter

from events import TOPICS, PlacementRequest, PlacementResponse, TopicSpec, decode
from services.common import busio
from tests.integration.harness import Ballast
from tests.unit.best_placement import uneven_spread


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
    # The other tests' topics leave the brokers uneven; the topic's own spread comes first all the same: its replicas
    # within one per broker of each data centre, its leaders within one per broker (issue 55).
    assert uneven_spread(placed, dcs) == []

    ballast.apply(TopicSpec(name=topic, partitions=18, replicas=3, placer="multi-level"))
    ballast.watcher.wait_status(topic, lambda s: s.partitions == 18, "18 partitions")
    grown = replicas_of(ballast, topic)
    assert grown[:12] == placed, "existing partitions do not move"
    assert all(len({dcs[b] for b in replicas}) == 3 for replicas in grown[12:]), grown[12:]
    assert uneven_spread(grown, dcs) == []


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


def test_placement_request_and_response_on_the_bus(ballast: Ballast, name: str) -> None:
    requests = [PlacementRequest(request_id=f"{name}-ok", topic=f"{name}-new", partitions=6, replication_factor=3,
                                 placer="multi-level"),
                PlacementRequest(request_id=f"{name}-too-wide", topic=f"{name}-new", partitions=1,
                                 replication_factor=9)]
    busio.publish(ballast.settings.bus, TOPICS.placement_requests, requests)
    answers: dict[str, PlacementResponse] = {}
    deadline = time.monotonic() + 30
    for record in busio.consume(ballast.settings.bus, [TOPICS.placement_responses.name], follow=True,
                                deadline=deadline):
        response = decode(record.value, topic=TOPICS.placement_responses).event
        assert isinstance(response, PlacementResponse)
        answers[response.request_id] = response
        if all(r.request_id in answers for r in requests):
            break
    ok, too_wide = answers[f"{name}-ok"], answers[f"{name}-too-wide"]
    dcs = dcs_of(ballast)
    assert ok.error is None and ok.placer == "multi-level" and ok.first_partition == 0
    assert ok.assignment is not None and len(ok.assignment) == 6
    assert all(len({dcs[b] for b in replicas}) == 3 for replicas in ok.assignment)
    assert too_wide.assignment is None and "replication factor of 9" in (too_wide.error or "")
    assert ballast.cluster_topic(f"{name}-new") is None, "a placement request creates nothing"
