"""Under-replicated creation (seed 002): placeholders for replicas whose brokers are down."""

from __future__ import annotations

from collections import Counter

import pytest

from services.placement.model import Broker, BrokerState, ClusterView, PlacementError
from services.placement.under_replicated import Policy, fill_placeholders, place_topic, required_alive_replicas

OFF = BrokerState.OFFLINE


def three_brokers_one_down() -> ClusterView:
    return ClusterView.of([Broker(1, "/dc1/r1"), Broker(2, "/dc2/r1"), Broker(3, "/dc3/r1", OFF)])


@pytest.mark.parametrize("placer", ["striped", "multi-level"])
def test_three_brokers_one_down_rf3_gets_one_placeholder_per_partition(placer: str) -> None:
    placed = place_topic(three_brokers_one_down(), "t", 4, 3, placer=placer, seed=0, policy=Policy.ENABLED,
                         required=required_alive_replicas(3, {"min.insync.replicas": "2"}, None))
    assert all(sorted(r) == [1, 2] for r in placed.assignment)
    assert all(r[2] == -1 and sorted(r[:2]) == [1, 2] for r in placed.full)
    assert placed.placeholders == 4 and placed.intended == {}


def test_too_few_alive_for_min_insync_or_min_required_is_refused_with_the_reason() -> None:
    cluster = three_brokers_one_down()
    with pytest.raises(PlacementError, match=r"at least 3 replica\(s\) on alive brokers"):
        place_topic(cluster, "t", 1, 3, placer="striped", seed=0, policy=Policy.ENABLED,
                    required=required_alive_replicas(3, {"min.insync.replicas": "3"}, None))
    with pytest.raises(PlacementError, match="at least 3"):
        place_topic(cluster, "t", 1, 3, placer="striped", seed=0, policy=Policy.ENABLED,
                    required=required_alive_replicas(3, {}, min_required=3))
    assert required_alive_replicas(3, {}, None) == 1  # Kafka's default min.insync.replicas
    assert required_alive_replicas(2, {"min.insync.replicas": "3"}, None) == 2


def test_disabled_policy_keeps_kafkas_refusal() -> None:
    with pytest.raises(PlacementError, match="registered|alive"):
        place_topic(three_brokers_one_down(), "t", 1, 3, placer="striped", seed=0, policy=Policy.DISABLED,
                    required=1)


def test_rf_above_every_broker_ever_observed_is_refused() -> None:
    with pytest.raises(PlacementError, match="above the 3 brokers ever observed"):
        place_topic(three_brokers_one_down(), "t", 1, 4, placer="striped", seed=0, policy=Policy.ENABLED,
                    required=1)


@pytest.mark.parametrize(("placer", "racks"), [
    ("multi-level", ["/dc1/r1", "/dc1/r2", "/dc2/r1", "/dc2/r2", "/dc3/r1", "/dc3/r2"]),
    # striped knows one rack level: the zones are its racks.
    ("striped", ["/dc1", "/dc1", "/dc2", "/dc2", "/dc3", "/dc3"]),
])
def test_prefer_observed_keeps_one_replica_per_dc_when_a_dc_is_down(placer: str, racks: list[str]) -> None:
    # The seed's example: 3 zones, one offline. Placing on the 4 alive brokers would put two replicas in one zone;
    # preferring observed brokers keeps a placeholder for the offline zone instead.
    brokers = [Broker(i + 1, rack, OFF if i >= 4 else BrokerState.ALIVE) for i, rack in enumerate(racks)]
    cluster = ClusterView.of(brokers)
    dc = {b.id: b.rack.split("/")[1] for b in brokers}
    placed = place_topic(cluster, "t", 12, 3, placer=placer, seed=0, policy=Policy.PREFER_OBSERVED, required=2)
    assert all(len(r) == 2 and {dc[b] for b in r} == {"dc1", "dc2"} for r in placed.assignment)
    assert all(r[-1] == -1 for r in placed.full)
    assert set(placed.intended) == set(range(12))
    assert all(len(v) == 1 and v[0] in (5, 6) for v in placed.intended.values())
    assert Counter(v[0] for v in placed.intended.values()) == {5: 6, 6: 6}

    enabled = place_topic(cluster, "t", 12, 3, placer=placer, seed=0, policy=Policy.ENABLED, required=2)
    assert enabled.placeholders == 0
    assert any(len({dc[b] for b in r}) < 3 for r in enabled.assignment), "4 alive brokers: a DC holds two"


def test_a_returning_broker_fills_the_placeholders_never_twice_in_a_partition() -> None:
    back = ClusterView.of([Broker(1, "/dc1/r1"), Broker(2, "/dc2/r1"), Broker(3, "/dc3/r1")])
    changes, after = fill_placeholders([[1, 2, -1], [2, 1, -1]], {}, back)
    assert changes == {0: [1, 2, 3], 1: [2, 1, 3]} and after == [[1, 2, 3], [2, 1, 3]]
    still_down = three_brokers_one_down()
    assert fill_placeholders([[1, 2, -1]], {}, still_down) == ({}, [[1, 2, -1]])


def test_a_placeholder_kept_for_an_observed_broker_waits_for_it_and_free_ones_keep_the_spread() -> None:
    brokers = [Broker(1, "/dc1/r1"), Broker(2, "/dc1/r2"), Broker(3, "/dc2/r1"), Broker(4, "/dc2/r2"),
               Broker(5, "/dc3/r1", OFF), Broker(6, "/dc3/r2")]
    cluster = ClusterView.of(brokers)
    # Partition 0 waits for broker 5 (still down); partition 1 waited for 6, which is back.
    changes, after = fill_placeholders([[1, 3, -1], [2, 4, -1]], {0: [5], 1: [6]}, cluster)
    assert changes == {1: [2, 4, 6]} and after == [[1, 3, -1], [2, 4, 6]]
    # Without a broker to wait for (forgotten, or enabled policy), the free placeholder takes the alive broker in
    # the DC the partition lacks: 6, not 2 or 4 which share a DC with its replicas.
    changes, _ = fill_placeholders([[1, 3, -1]], {}, cluster)
    assert changes == {0: [1, 3, 6]}


def test_prefer_observed_does_not_wait_for_an_empty_offline_broker_when_its_dc_has_room() -> None:
    # Broker 5 was in /dc2 and is gone, its replicas moved away: the emptiest broker of the cluster. The alive
    # brokers of /dc2 can take the DC's replica of every partition, so none waits for broker 5 (fenced brokers come
    # last, as in KRaft), even though water-filling favours empty brokers.
    brokers = [Broker(1, "/dc1/r1"), Broker(2, "/dc1/r2"), Broker(3, "/dc2/r1"), Broker(4, "/dc2/r2"),
               Broker(5, "/dc2/r3", OFF)]
    cluster = ClusterView.of(brokers, {"old": [[1, 3], [2, 4], [3, 1], [4, 2]] * 5})
    placed = place_topic(cluster, "t", 8, 2, placer="multi-level", seed=0, policy=Policy.PREFER_OBSERVED,
                         required=1)
    assert placed.placeholders == 0 and all(len(r) == 2 for r in placed.assignment), placed
