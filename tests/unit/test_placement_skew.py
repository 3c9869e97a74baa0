"""A new topic's own spread first, existing skew compensated within it (issue 55): on clusters whose brokers already
hold uneven numbers of replicas and leaderships, the multi-level placer keeps a new topic's replicas and leaders per
broker within one of the best any placer could reach for that topic alone, inside every domain (``best_placement``:
max-flow, independent of the placer), and gives the one more to the brokers holding fewer of the other topics'."""

from __future__ import annotations

from collections import Counter

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from services.placement.metrics import evaluate
from services.placement.model import Broker, ClusterView, PlacementSpec
from services.placement.multi_level import MultiLevelPlacer
from services.placement.rack_tree import Domain, build_tree
from tests.unit.best_placement import leaders_could_all_be, replicas_could_all_be
from tests.unit.test_placement_contract import rack_trees


@st.composite
def skewed_clusters(draw: st.DrawFn) -> tuple[list[Broker], list[list[int]], int, int, int]:
    """A rack tree, an old topic placed with no rule at all on brokers of very different weights (some never
    used: new brokers), and a new topic's partitions, replication factor and seed."""
    brokers = draw(rack_trees())
    weights = draw(st.lists(st.sampled_from([0, 1, 1, 4, 16]), min_size=len(brokers), max_size=len(brokers)))
    if not any(weights):
        weights[0] = 1
    rng = draw(st.randoms(use_true_random=False))
    old: list[list[int]] = []
    for _ in range(draw(st.integers(1, 80))):
        candidates = {b.id: w for b, w in zip(brokers, weights) if w}
        replicas: list[int] = []
        for _ in range(rng.randint(1, min(3, len(candidates)))):
            broker = rng.choices(list(candidates), weights=list(candidates.values()))[0]
            replicas.append(broker)
            del candidates[broker]
        old.append(replicas)
    partitions = draw(st.integers(1, 40))
    rf = draw(st.integers(1, min(len(brokers), 4)))
    return brokers, old, partitions, rf, draw(st.integers(0, 2**16))


def domains(root: Domain) -> list[Domain]:
    return [node for node in root.walk() if node.broker is None]


def brokers_in(domain: Domain) -> list[int]:
    return [node.broker for node in domain.walk() if node.broker is not None]


SETTINGS = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(skewed_clusters())
def test_a_new_topics_replicas_spread_first_and_its_one_more_goes_to_the_emptier_brokers(case) -> None:
    brokers, old, partitions, rf, seed = case
    cluster = ClusterView.of(brokers, {"old": old})
    new = MultiLevelPlacer(seed).place(PlacementSpec(partitions, rf, topic="new"), cluster)
    assert evaluate(cluster.with_assignment("new", new), topics=["new"]).spread_ok
    existing = Counter(b for replicas in old for b in replicas)
    added = Counter(b for replicas in new for b in replicas)
    for domain in domains(build_tree(brokers)):
        inside = set(brokers_in(domain))
        arrivals = {p: n for p, replicas in enumerate(new) if (n := sum(b in inside for b in replicas))}
        if not arrivals:
            continue
        mine = [added[b] for b in inside]
        # The topic on its own: nothing could keep every broker two below its fullest, nor lift every one two above
        # its emptiest, whatever the other topics hold.
        assert not replicas_could_all_be(domain, arrivals, Counter(), at_most=max(mine) - 2), (domain.path, mine)
        assert not replicas_could_all_be(domain, arrivals, Counter(), at_least=min(mine) + 2), (domain.path, mine)
        # Between brokers of one rack, the one more went to a broker holding no more of the others' replicas.
        racks = [child for child in domain.children if child.broker is not None]
        for a in racks:
            for b in racks:
                if added[a.broker] > added[b.broker]:
                    assert existing[a.broker] <= existing[b.broker], (domain.path, a.broker, b.broker)


@SETTINGS
@given(skewed_clusters())
def test_a_new_topics_leaders_spread_first(case) -> None:
    brokers, old, partitions, rf, seed = case
    cluster = ClusterView.of(brokers, {"old": old})
    new = MultiLevelPlacer(seed).place(PlacementSpec(partitions, rf, topic="new"), cluster)
    added = Counter(replicas[0] for replicas in new)
    alive = {b.id for b in brokers}
    for domain in domains(build_tree(brokers)):
        inside = set(brokers_in(domain))
        led = [replicas for replicas in new if replicas[0] in inside]
        if not led:
            continue
        mine = [added[b] for b in inside]
        assert not leaders_could_all_be(domain, led, alive, Counter(), at_most=max(mine) - 2), (domain.path, mine)
        assert not leaders_could_all_be(domain, led, alive, Counter(), at_least=min(mine) + 2), (domain.path, mine)


def test_a_skewed_rack_gives_its_one_more_to_its_emptier_brokers() -> None:
    # One DC, two racks of three: in /dc1/a broker 1 holds 30 replicas, 2 and 3 none. One replica per rack per
    # partition (RF 2), so rack a receives 14 of the 28: 4 or 5 each (the topic's own spread first), and the two
    # 5s on brokers 2 and 3.
    brokers = [Broker(i, "/dc1/a" if i <= 3 else "/dc1/b") for i in range(1, 7)]
    old = [[1]] * 30
    new = MultiLevelPlacer(seed=1).place(PlacementSpec(14, 2, topic="new"), ClusterView.of(brokers, {"old": old}))
    added = Counter(b for replicas in new for b in replicas)
    assert added[1] == 4 and added[2] == added[3] == 5
    assert sorted(added[b] for b in (4, 5, 6)) == [4, 5, 5]
    # Leaders likewise: 14 new leaderships over six brokers, 2 or 3 each; broker 1, leading 30 already, gets 2.
    leaders = Counter(replicas[0] for replicas in new)
    assert leaders[1] == 2 and set(leaders.values()) == {2, 3}


def test_the_issue_55_topic_is_spread_over_every_broker() -> None:
    """`ballast up --kafka`'s four brokers in two data centres, a plain spec of 6 partitions at RF 3 (issue 55):
    before, two replica sets alternating and leaders on two brokers; now every broker holds 4 or 5 and leads 1 or
    2, whatever the skew of the other topics."""
    brokers = [Broker(1, "/dc1/r1"), Broker(2, "/dc1/r2"), Broker(3, "/dc2/r1"), Broker(4, "/dc2/r2")]
    for old in ([[1, 2, 3]] * 5, [[1]] * 10 + [[2]] * 3, []):
        new = MultiLevelPlacer(seed=1).place(PlacementSpec(6, 3, topic="new"), ClusterView.of(brokers, {"old": old}))
        assert sorted(Counter(b for r in new for b in r).values()) == [4, 4, 5, 5], old
        assert sorted(Counter(r[0] for r in new).values()) == [1, 1, 2, 2], old
        assert len({tuple(sorted(r)) for r in new}) > 2, old


def test_without_skew_the_placement_is_the_even_one() -> None:
    brokers = [Broker(i, f"/dc{(i - 1) // 4 + 1}/r{(i - 1) // 2 % 2 + 1}") for i in range(1, 13)]
    new = MultiLevelPlacer(seed=3).place(PlacementSpec(60, 3, topic="new"), ClusterView.of(brokers))
    assert set(Counter(b for replicas in new for b in replicas).values()) == {15}
    assert set(Counter(replicas[0] for replicas in new).values()) == {5}


def test_raising_the_replication_factor_spreads_the_topic_first_then_prefers_the_emptier_broker() -> None:
    # The new replicas must go to /dc2 (the spread); there broker 3 already holds 20 replicas of another topic: the
    # topic's four new replicas go two and two, the first to broker 4.
    brokers = [Broker(1, "/dc1/a"), Broker(2, "/dc1/a"), Broker(3, "/dc2/b"), Broker(4, "/dc2/b")]
    current = [[1], [2], [1], [2]]
    cluster = ClusterView.of(brokers, {"old": [[3]] * 20, "t": current})
    raised = MultiLevelPlacer(seed=1).add_replicas("t", current, 2, cluster)
    assert [r[:1] for r in raised] == current
    assert [r[1] for r in raised] == [4, 3, 4, 3]
