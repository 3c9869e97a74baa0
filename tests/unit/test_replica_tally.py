"""The replicas and leaders per broker a view's maker keeps as placements go (services.placement.model.ReplicaTally):
the multi-level placer counts the whole cluster for each topic it places, and a batch of creations on a large
cluster spent its time there. A kept tally must count exactly what reading every topic counts."""

from __future__ import annotations

import asyncio
import random

from services.placement.model import Broker, ClusterView, ReplicaTally
from services.placement.under_replicated import place_topic
from services.topic_reconciler.cluster_view import ClusterViewCache
from tests.unit.test_freshness import Clock, Cluster, until_read_begins

BROKERS = tuple(Broker(id=b, rack=f"/dc{1 + b % 2}/r{b}") for b in range(1, 7))


def random_assignments(rng: random.Random, topics: int) -> dict[str, list[list[int]]]:
    """Topics on brokers 1-7 (7 is not among BROKERS), with placeholders (negative ids) and empty partitions."""
    def replicas() -> list[int]:
        chosen = rng.sample(range(1, 8), rng.randint(0, 3))
        return chosen + [-(i + 1) for i in range(rng.randint(0, 1))]
    return {f"t{i}": [replicas() for _ in range(rng.randint(1, 4))] for i in range(topics)}


def test_a_kept_tally_counts_what_reading_every_topic_counts() -> None:
    rng = random.Random(52)
    for _ in range(50):
        assignments = random_assignments(rng, rng.randint(0, 12))
        counted = ClusterView(BROKERS, assignments)
        tallied = ClusterView(BROKERS, assignments, tally=ReplicaTally.of(assignments))
        for exclude in [None, "absent", *assignments]:
            assert tallied.replica_counts(exclude) == counted.replica_counts(exclude)
            assert tallied.leader_counts(exclude) == counted.leader_counts(exclude)
        # A view with one topic changed keeps its tally right.
        topic, partitions = rng.choice([*assignments, "new"]), [[7, 1], [-1, 2]]
        assert (tallied.with_assignment(topic, partitions).replica_counts()
                == counted.with_assignment(topic, partitions).replica_counts())
        assert (tallied.with_assignment(topic, partitions).leader_counts()
                == counted.with_assignment(topic, partitions).leader_counts())


def test_multi_level_places_a_batch_the_same_on_a_tallied_view() -> None:
    assignments = random_assignments(random.Random(7), 200)
    placed: dict[bool, list[list[list[int]]]] = {}
    for tallied in (False, True):
        current = {t: [[b for b in r if b != 7] for r in parts] for t, parts in assignments.items()}
        tally = ReplicaTally.of(current) if tallied else None
        placed[tallied] = []
        for i in range(40):
            view = ClusterView(BROKERS, current, tally=tally)
            one = place_topic(view, f"new{i}", 3, 3, placer="multi-level", seed=1, policy="disabled", required=2)
            current[f"new{i}"] = one.assignment
            if tally is not None:
                tally.add(one.assignment)
            placed[tallied].append(one.assignment)
    assert placed[True] == placed[False]


async def test_the_cluster_view_cache_keeps_its_tally_with_its_assignments() -> None:
    cluster, clock = Cluster(), Clock()
    cache = ClusterViewCache(cluster, max_age_s=30, stale_max_s=600, clock=clock)  # type: ignore[arg-type]

    async def exact() -> None:
        view = await cache.view()
        assert view.tally is not None
        assert view.replica_counts() == ClusterView(view.brokers, view.assignments).replica_counts()
        assert view.leader_counts() == ClusterView(view.brokers, view.assignments).leader_counts()

    await exact()
    cache.set_topic("a", [[1, 2], [2, 1]])
    cache.set_topic("a", [[2, 1], [2, -1]])  # placed again: the old placement no longer counts
    cache.add_partitions("a", [[1, 2]])
    cache.set_topic("b", [[1]])
    cache.forget("old")
    cache.forget("never")
    await exact()
    # A read of the whole cluster, with placements made while it is under way kept over it.
    cluster.topics["theirs"] = [[2, 1]]
    cluster.gate = asyncio.Event()
    clock.now = 45.0
    await cache.view()
    refresh = asyncio.create_task(cache.refresh_due())
    await until_read_begins(cluster, 1)
    cache.set_topic("c", [[1, 2]])
    cache.forget("b")
    cluster.gate.set()
    await refresh
    assert set((await cache.view()).assignments) == {"old", "theirs", "c"}
    await exact()
