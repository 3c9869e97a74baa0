"""Existing skew compensated: on clusters whose brokers already hold uneven numbers of replicas and leaderships, the
multi-level placer gives a new topic's replicas and leaders to the emptier brokers of every domain, so that inside
each domain the counts per broker end within one of the best any placer could reach with what that domain receives
(``best_placement``: max-flow, independent of the placer)."""

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
def test_new_replicas_even_out_every_domain_to_within_one_of_the_best(case) -> None:
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
        final = [existing[b] + added[b] for b in inside]
        # Nothing could keep every broker two below this placement's fullest, nor lift every one two above its
        # emptiest.
        assert not replicas_could_all_be(domain, arrivals, existing, at_most=max(final) - 2), (domain.path, final)
        assert not replicas_could_all_be(domain, arrivals, existing, at_least=min(final) + 2), (domain.path, final)


@SETTINGS
@given(skewed_clusters())
def test_new_leaders_even_out_every_domain_to_within_one_of_the_best(case) -> None:
    brokers, old, partitions, rf, seed = case
    cluster = ClusterView.of(brokers, {"old": old})
    new = MultiLevelPlacer(seed).place(PlacementSpec(partitions, rf, topic="new"), cluster)
    existing = Counter(replicas[0] for replicas in old)
    added = Counter(replicas[0] for replicas in new)
    alive = {b.id for b in brokers}
    for domain in domains(build_tree(brokers)):
        inside = set(brokers_in(domain))
        led = [replicas for replicas in new if replicas[0] in inside]
        if not led:
            continue
        final = [existing[b] + added[b] for b in inside]
        assert not leaders_could_all_be(domain, led, alive, existing, at_most=max(final) - 2), (domain.path, final)
        assert not leaders_could_all_be(domain, led, alive, existing, at_least=min(final) + 2), (domain.path, final)


def test_a_skewed_rack_gets_the_new_replicas_on_its_emptier_brokers() -> None:
    # One DC, two racks of three: in /dc1/a broker 1 holds 30 replicas, 2 and 3 none. One replica per rack per
    # partition (RF 2), so rack a receives 12 of the 24: all on brokers 2 and 3, six each.
    brokers = [Broker(i, "/dc1/a" if i <= 3 else "/dc1/b") for i in range(1, 7)]
    old = [[1]] * 30
    new = MultiLevelPlacer(seed=1).place(PlacementSpec(12, 2, topic="new"), ClusterView.of(brokers, {"old": old}))
    added = Counter(b for replicas in new for b in replicas)
    assert added[1] == 0 and added[2] == added[3] == 6
    assert sorted(added[b] for b in (4, 5, 6)) == [4, 4, 4]
    # Leaders likewise: broker 1 leads 30 already, so the 12 new leaderships go to the other five.
    leaders = Counter(replicas[0] for replicas in new)
    assert leaders[1] == 0 and max(leaders.values()) - min(leaders[b] for b in (2, 3, 4, 5, 6)) <= 1


def test_without_skew_the_placement_is_the_even_one() -> None:
    brokers = [Broker(i, f"/dc{(i - 1) // 4 + 1}/r{(i - 1) // 2 % 2 + 1}") for i in range(1, 13)]
    new = MultiLevelPlacer(seed=3).place(PlacementSpec(60, 3, topic="new"), ClusterView.of(brokers))
    assert set(Counter(b for replicas in new for b in replicas).values()) == {15}
    assert set(Counter(replicas[0] for replicas in new).values()) == {5}


def test_raising_the_replication_factor_adds_to_the_emptier_brokers() -> None:
    # The new replicas must go to /dc2 (the spread); there broker 3 already holds 20 replicas of another topic.
    brokers = [Broker(1, "/dc1/a"), Broker(2, "/dc1/a"), Broker(3, "/dc2/b"), Broker(4, "/dc2/b")]
    current = [[1], [2], [1], [2]]
    cluster = ClusterView.of(brokers, {"old": [[3]] * 20, "t": current})
    raised = MultiLevelPlacer(seed=1).add_replicas("t", current, 2, cluster)
    assert [r[:1] for r in raised] == current
    assert [r[1] for r in raised] == [4, 4, 4, 4]
