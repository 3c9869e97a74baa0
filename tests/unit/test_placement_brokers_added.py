"""Brokers added: replicas moved onto them stay within 5% of the lower bound, spread and balance kept."""

from __future__ import annotations

import math
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from services.placement.metrics import evaluate, moved_replicas
from services.placement.model import Broker, BrokerState, ClusterView, PlacementError, PlacementSpec
from services.placement.multi_level import MultiLevelPlacer
from services.placement.rebalance import balance_leaders, drain, even_out, fair_share, lower_bound, spread_onto

Shape = tuple[int, int, int]  # DCs, racks per DC, brokers per rack


def grow(old: Shape, new: Shape) -> tuple[list[Broker], list[Broker], list[int]]:
    """Brokers of the old tree, of the grown tree (old brokers keep their ids and racks), and the new ids."""
    def racks(shape: Shape) -> list[str]:
        dcs, per_dc, per_rack = shape
        return [f"/dc{d}/r{r}" for d in range(1, dcs + 1) for r in range(1, per_dc + 1) for _ in range(per_rack)]

    before = [Broker(i + 1, rack) for i, rack in enumerate(racks(old))]
    left = Counter(racks(old))
    after, added = list(before), []
    for rack in racks(new):
        if left[rack]:
            left[rack] -= 1
        else:
            added.append(1000 + len(added))
            after.append(Broker(added[-1], rack))
    return before, after, added


def loaded(brokers: list[Broker], topics: list[tuple[int, int]], seed: int = 1) -> ClusterView:
    cluster = ClusterView.of(brokers)
    for index, (partitions, rf) in enumerate(topics):
        topic = f"t{index}"
        cluster = cluster.with_assignment(topic, MultiLevelPlacer(seed).place(PlacementSpec(partitions, rf, topic=topic),
                                                                             cluster))
    return cluster


def check(old: Shape, new: Shape, topics: list[tuple[int, int]], within: int = 1,
          leaders_within: int = 1) -> tuple[int, int]:
    before, after, added = grow(old, new)
    cluster = loaded(before, topics)
    grown = ClusterView.of(after, cluster.assignments)
    result = spread_onto(grown, added)
    quality = evaluate(ClusterView.of(after, result))
    assert quality.spread_ok, quality.spread_violations
    assert quality.replicas_range <= within and quality.leaders_range <= leaders_within
    for topic, parts in result.items():  # same partitions, each a set of distinct brokers
        assert len(parts) == len(cluster.assignments[topic])
        assert all(len(set(r)) == len(r) == len(o) for r, o in zip(parts, cluster.assignments[topic]))
    assert lower_bound(grown) >= fair_share(grown) * len(added)
    return moved_replicas(cluster.assignments, result), lower_bound(grown)


@pytest.mark.parametrize(("old", "new"), [((3, 2, 2), (3, 2, 3)), ((3, 2, 2), (4, 2, 2)), ((1, 3, 2), (1, 3, 3)),
                                          ((2, 2, 2), (2, 3, 2))])
def test_moves_exactly_the_new_brokers_fair_share(old: Shape, new: Shape) -> None:
    moved, bound = check(old, new, [(300, 3)] * 4 + [(50, 2)])
    assert moved == bound


def test_a_new_dc_that_changes_the_spread_rule_is_repaired_and_levelled() -> None:
    # 2 DCs at RF 3 put two replicas in one DC; with a third DC the contract wants one per DC. Every partition needs
    # one move for that, and brokers the repair leaves uneven are levelled: a few moves above the new brokers' share.
    moved, bound = check((2, 3, 1), (3, 3, 1), [(300, 3)] * 4)
    assert bound <= moved <= 1.15 * bound


SHAPES = st.tuples(st.integers(1, 3), st.integers(1, 3), st.integers(1, 3))
TOPICS = st.lists(st.tuples(st.integers(1, 60), st.integers(1, 3)), min_size=1, max_size=6)


# Known limits, as for placing (test_placement_contract.py): leaders are evened by reordering replicas, and by
# trading a leader replica for a follower replica (two moves) only within the 5% budget, so a small random workload
# mixing RF 1 partitions can end at a leader range of 2. When a new rack or DC joins, partitions whose replicas may
# not cross domains can leave a broker one above the ceiling (about 1 in 100 random workloads in our runs). The
# realistic cases above reach 1 everywhere.
@settings(max_examples=60, deadline=None)
@given(shape=SHAPES, added_per_rack=st.integers(1, 2), topics=TOPICS)
def test_more_brokers_per_rack_moves_within_five_percent_of_the_lower_bound(
        shape: Shape, added_per_rack: int, topics: list[tuple[int, int]]) -> None:
    # Every rack grows alike, so the spread rule of every partition stays as it was.
    dcs, racks, per_rack = shape
    topics = [(p, min(rf, dcs * racks * per_rack)) for p, rf in topics]
    moved, bound = check(shape, (dcs, racks, per_rack + added_per_rack), topics, leaders_within=2)
    assert moved <= math.ceil(bound * 1.05)  # within 5%, rounded up: 10 moves where the bound is 9


@settings(max_examples=40, deadline=None)
@given(shape=SHAPES, grow_level=st.sampled_from(["dcs", "racks"]), topics=TOPICS)
def test_new_racks_or_dcs_keep_the_contract(shape: Shape, grow_level: str, topics: list[tuple[int, int]]) -> None:
    # A new domain can change a partition's spread rule (RF 3 over 2 DCs -> 3 DCs); the contract still holds after.
    dcs, racks, per_rack = shape
    topics = [(p, min(rf, dcs * racks * per_rack)) for p, rf in topics]
    new = (dcs + 1, racks, per_rack) if grow_level == "dcs" else (dcs, racks + 1, per_rack)
    moved, bound = check(shape, new, topics, within=2, leaders_within=2)
    assert moved >= bound


def test_deterministic() -> None:
    before, after, added = grow((3, 2, 2), (3, 2, 3))
    grown = ClusterView.of(after, loaded(before, [(200, 3)] * 3).assignments)
    assert spread_onto(grown, added) == spread_onto(grown, added)


def test_unknown_or_offline_new_broker_is_refused() -> None:
    before, after, added = grow((1, 2, 1), (1, 2, 2))
    grown = ClusterView.of([b if b.id != added[0] else Broker(b.id, b.rack, BrokerState.OFFLINE) for b in after],
                           loaded(before, [(10, 2)]).assignments)
    with pytest.raises(PlacementError, match="not alive brokers"):
        spread_onto(grown, added)
    with pytest.raises(PlacementError, match=r"\[77\]"):
        spread_onto(grown, [77])


def test_leaders_are_evened_through_chains_of_followers() -> None:
    # Broker 4 follows only partitions led by 1, which leads nothing else to give; 1 takes one of 2's instead.
    assignments = {"a": [[1, 4], [1, 4], [2, 1], [2, 1], [2, 3], [3, 2]]}
    balance_leaders(assignments, {1, 2, 3, 4})
    leaders = Counter(r[0] for r in assignments["a"])
    assert max(leaders.values()) - min(leaders[b] for b in (1, 2, 3, 4)) <= 1 and leaders[4] >= 1
    assert [sorted(r) for r in assignments["a"]] == [[1, 4], [1, 4], [1, 2], [1, 2], [2, 3], [2, 3]]


def test_add_broker_mode_moves_replicas_only_onto_the_new_brokers() -> None:
    before, after, added = grow((3, 2, 2), (3, 2, 3))
    cluster = loaded(before, [(300, 3)] * 3)
    result = spread_onto(ClusterView.of(after, cluster.assignments), added, only_onto_new=True)
    for topic, parts in result.items():
        for old, new in zip(cluster.assignments[topic], parts):
            assert set(new) - set(old) <= set(added), (old, new)
    assert evaluate(ClusterView.of(after, result)).spread_ok


def test_remove_broker_drains_it_keeping_the_spread_of_what_remains() -> None:
    brokers = grow((3, 2, 2), (3, 2, 2))[0]
    cluster = loaded(brokers, [(200, 3)] * 2)
    result = drain(cluster, [12])
    remaining = [b for b in brokers if b.id != 12]
    assert all(12 not in r for parts in result.values() for r in parts)
    assert evaluate(ClusterView.of(remaining, result)).spread_ok
    # One replica per DC: /dc3's three remaining brokers share its 400 replicas evenly.
    in_dc3 = Counter(b for parts in result.values() for r in parts for b in r if b in (9, 10, 11))
    assert max(in_dc3.values()) - min(in_dc3.values()) <= 1
    on_12 = sum(1 for parts in cluster.assignments.values() for r in parts if 12 in r)
    assert moved_replicas(cluster.assignments, result) == on_12, "only the leaving broker's replicas move"
    with pytest.raises(PlacementError, match="no broker would remain"):
        drain(cluster, [b.id for b in brokers])


def test_a_badly_spread_partition_still_leaves_and_goes_where_the_spread_suffers_least() -> None:
    # /dc1: 1, 2   /dc2: 3, 4   /dc3: 5, 6. [3, 4, 1] has two replicas in /dc2 already; draining 3 cannot make it
    # well spread with 4 staying, but /dc3 makes it no worse, and /dc1 (a second replica there too) would.
    brokers = [Broker(i, f"/dc{(i + 1) // 2}/r{2 - i % 2}") for i in range(1, 7)]
    cluster = ClusterView.of(brokers, {"t": [[3, 4, 1]]})
    result = drain(cluster, [3])
    (moved,) = set(result["t"][0]) - {4, 1}
    assert set(result["t"][0]) == {moved, 4, 1} and moved in (5, 6)
    tight = ClusterView.of(brokers[:3], {"t": [[1, 2, 3]]})
    with pytest.raises(PlacementError, match="every remaining broker already holds one of its replicas"):
        drain(tight, [3])


def test_full_rebalance_evens_out_a_lopsided_cluster() -> None:
    brokers = grow((1, 3, 2), (1, 3, 2))[0]
    lopsided = ClusterView.of(brokers, {"t": [[1, 3, 5]] * 30 + [[2, 4, 6]] * 6})
    result = even_out(lopsided)
    quality = evaluate(ClusterView.of(brokers, result))
    assert quality.spread_ok and quality.replicas_range <= 1 and quality.leaders_range <= 1
    assert moved_replicas(lopsided.assignments, result) <= math.ceil(lower_bound(lopsided) * 1.05)
