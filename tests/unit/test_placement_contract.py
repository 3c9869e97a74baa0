"""The quality contract of the multi-level placer, over random rack trees and topics of any shape (hypothesis)."""

from __future__ import annotations

from collections import Counter

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from services.placement.metrics import evaluate, is_symmetric
from services.placement.model import Broker, ClusterView, PlacementSpec
from services.placement.multi_level import MultiLevelPlacer
from services.placement.rack_tree import Domain, build_tree


@st.composite
def rack_trees(draw: st.DrawFn, symmetric: bool = False) -> list[Broker]:
    """Brokers under a rack tree 1-3 levels deep. Symmetric trees have one fan-out per level; others draw a fan-out
    per domain (uneven racks, lone brokers)."""
    depth = draw(st.integers(1, 3))
    fanouts = [draw(st.integers(1, 4)) for _ in range(depth + 1)]
    brokers: list[Broker] = []

    def grow(path: str, level: int) -> None:
        width = fanouts[level] if symmetric else draw(st.integers(1, 4))
        if level == depth:
            first = len(brokers) + 1
            brokers.extend([Broker(first + i, path) for i in range(width)])
            return
        for i in range(width):
            grow(f"{path}/l{level}n{i}", level + 1)

    grow("", 0)
    return brokers


@st.composite
def workloads(draw: st.DrawFn, symmetric: bool = False) -> tuple[list[Broker], list[tuple[int, int]], int]:
    brokers = draw(rack_trees(symmetric))
    topics = draw(st.lists(st.tuples(st.integers(1, 40), st.integers(1, min(len(brokers), 5))), min_size=1,
                           max_size=4))
    return brokers, topics, draw(st.integers(0, 2**16))


def place_all(brokers: list[Broker], topics: list[tuple[int, int]], seed: int) -> ClusterView:
    cluster = ClusterView.of(brokers)
    placer = MultiLevelPlacer(seed)
    for index, (partitions, rf) in enumerate(topics):
        name = f"topic-{index}"
        cluster = cluster.with_assignment(name, placer.place(PlacementSpec(partitions, rf, topic=name), cluster))
    return cluster


SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(workloads())
def test_every_partition_is_valid_and_spread_at_every_level(work) -> None:
    brokers, topics, seed = work
    cluster = place_all(brokers, topics, seed)
    quality = evaluate(cluster)
    assert quality.invalid == []
    assert quality.spread_violations == {}, quality
    assert all(len(r) == rf for (_, rf), name in zip(topics, cluster.assignments) for r in cluster.assignments[name])


@SETTINGS
@given(workloads(symmetric=True))
def test_sibling_domains_of_equal_capacity_hold_totals_within_one(work) -> None:
    brokers, topics, seed = work
    quality = evaluate(place_all(brokers, topics, seed))
    assert all(spread <= 1 for spread in quality.sibling_total_range.values()), quality.sibling_total_range


@SETTINGS
@given(workloads())
def test_sibling_domains_of_the_same_shape_hold_totals_within_one(work) -> None:
    # Equal capacity is not enough on uneven trees: five brokers as racks of 1 + 4 can hold one replica per partition
    # in the 4-broker rack where 2 + 3 can hold two, so evening their totals would push the lone broker above the
    # best any placer could reach; the brokers' balance (test_placement_skew) comes first. Same-shaped siblings
    # can absorb the same, and stay within one.
    brokers, topics, seed = work
    cluster = place_all(brokers, topics, seed)
    per_broker = Counter(b for parts in cluster.assignments.values() for replicas in parts for b in replicas)
    for node in build_tree(brokers).walk():
        by_shape: dict[tuple, list[int]] = {}
        for child in node.children:
            if child.broker is None:
                by_shape.setdefault(_shape(child), []).append(sum(per_broker[b.broker] for b in child.walk()
                                                                   if b.broker is not None))
        for totals in by_shape.values():
            assert max(totals) - min(totals) <= 1, (node.path, by_shape)


def _shape(node: Domain) -> tuple:
    return tuple(sorted(_shape(child) for child in node.children)) if node.broker is None else ()


@SETTINGS
@given(workloads(symmetric=True))
def test_replicas_per_broker_within_one_cluster_wide_and_per_topic(work) -> None:
    brokers, topics, seed = work
    assert is_symmetric(build_tree(brokers))
    quality = evaluate(place_all(brokers, topics, seed))
    assert quality.replicas_range <= 1, quality.replicas_per_broker
    assert quality.topic_replicas_range <= 1
    # Leaders are water-filled over the cluster's leaderships (skew compensation), so about one run in 4,000 leaves
    # a topic's own leaders two apart; never more.
    assert quality.topic_leaders_range <= 2
    # Known limit: a sequence of small topics mixing RF 1 with larger RFs can leave no choice but a second
    # leadership on one broker (about 1 run in 60 of these); never more than that.
    assert quality.leaders_range <= 2, quality.leaders_per_broker


@st.composite
def full_topics(draw: st.DrawFn) -> tuple[list[Broker], list[tuple[int, int]], int]:
    brokers = draw(rack_trees(symmetric=True))
    n = len(brokers)
    topics = draw(st.lists(st.tuples(st.integers(n, n + 60), st.integers(min(2, n), min(n, 5))), min_size=1,
                           max_size=4))
    return brokers, topics, draw(st.integers(0, 2**16))


@SETTINGS
@given(full_topics())
def test_leaders_per_broker_within_one_cluster_wide_for_topics_spanning_the_cluster(work) -> None:
    brokers, topics, seed = work
    quality = evaluate(place_all(brokers, topics, seed))
    assert quality.leaders_range <= 1, quality.leaders_per_broker
    assert quality.replicas_range <= 1, quality.replicas_per_broker


@SETTINGS
@given(workloads())
def test_same_seed_same_placement(work) -> None:
    brokers, topics, seed = work
    assert place_all(brokers, topics, seed).assignments == place_all(brokers, topics, seed).assignments


@SETTINGS
@given(full_topics(), st.integers(1, 30))
def test_adding_partitions_continues_the_spread(work, added: int) -> None:
    brokers, topics, seed = work
    cluster = place_all(brokers, topics, seed)
    partitions, rf = topics[0]
    more = MultiLevelPlacer(seed).place(PlacementSpec(added, rf, first_partition=partitions, topic="topic-0"), cluster)
    cluster = cluster.with_assignment("topic-0", [*cluster.assignments["topic-0"], *more])
    quality = evaluate(cluster)
    assert quality.invalid == [] and quality.spread_ok
    # The topic's own spread comes first: its replicas stay within one per broker; the skew of the cluster only
    # decides which brokers take the one more, so the cluster may end two apart (never more).
    assert quality.topic_replicas_range <= 1 and quality.replicas_range <= 2, quality
    # Known limit: one or a few added partitions pick replicas by replica counts first, so their leader may land
    # on a broker already leading one more than the least; bounded at two.
    assert quality.topic_leaders_range <= 2 and quality.leaders_range <= 2, quality


@SETTINGS
@given(workloads(), st.integers(1, 3))
def test_raising_the_replication_factor_keeps_replicas_and_spread(work, extra: int) -> None:
    brokers, topics, seed = work
    cluster = place_all(brokers, topics, seed)
    partitions, rf = topics[0]
    target = min(rf + extra, len(brokers))
    before = cluster.assignments["topic-0"]
    after = MultiLevelPlacer(seed).add_replicas("topic-0", before, target, cluster)
    assert all(list(new[: len(old)]) == list(old) for old, new in zip(before, after))
    assert all(len(r) == target for r in after)
    quality = evaluate(cluster.with_assignment("topic-0", after), topics=["topic-0"])
    assert quality.invalid == [] and quality.spread_ok, quality
