"""Load-aware placement: where the count contract leaves a choice, the lighter broker gets the replica; the contract
itself (spread, replicas per broker within one) never gives way to load."""

from collections import Counter

from services.placement.metrics import evaluate
from services.placement.model import Broker, ClusterView, PlacementSpec
from services.placement.multi_level import MultiLevelPlacer

# Three data centres of one rack with two brokers each: RF 3 puts one replica in each DC, and which of its two
# brokers takes it is the choice the counts leave.
BROKERS = [Broker(1, "/dc1/r1"), Broker(2, "/dc1/r1"), Broker(3, "/dc2/r1"), Broker(4, "/dc2/r1"),
           Broker(5, "/dc3/r1"), Broker(6, "/dc3/r1")]


def place(load: dict[int, float], partitions: int = 1, rf: int = 3) -> list[list[int]]:
    view = ClusterView.of(BROKERS, load=load)
    return MultiLevelPlacer(seed=7).place(PlacementSpec(partitions, rf, topic="t"), view)


def test_the_lighter_broker_in_a_domain_gets_the_replica() -> None:
    (light_1,) = place({1: 10.0, 2: 5_000.0, 3: 10.0, 4: 5_000.0, 5: 10.0, 6: 5_000.0})
    (light_2,) = place({1: 5_000.0, 2: 10.0, 3: 5_000.0, 4: 10.0, 5: 5_000.0, 6: 10.0})
    assert set(light_1) <= {1, 3, 5} and set(light_2) <= {2, 4, 6}


def test_a_lighter_domain_goes_first_when_counts_tie() -> None:
    # RF 1: one replica, anywhere the counts allow; /dc3 carries far less.
    (only,) = place({1: 900.0, 2: 900.0, 3: 900.0, 4: 900.0, 5: 1.0, 6: 2.0}, rf=1)
    assert only == [5]


def test_load_never_breaks_the_count_contract() -> None:
    skewed = {1: 1.0, 2: 1e6, 3: 1.0, 4: 1e6, 5: 1.0, 6: 1e6}
    assignment = place(skewed, partitions=12)
    per_broker = Counter(b for replicas in assignment for b in replicas)
    assert max(per_broker.values()) - min(per_broker.values()) <= 1, per_broker
    quality = evaluate(ClusterView.of(BROKERS, {"t": assignment}))
    assert quality.spread_ok
    assert place({}, partitions=12) == MultiLevelPlacer(seed=7).place(PlacementSpec(12, 3, topic="t"),
                                                                      ClusterView.of(BROKERS))


def test_recent_load_takes_each_brokers_latest_ended_window_and_drops_stale_ones() -> None:
    from datetime import UTC, datetime, timedelta

    from events import LoadAggregate
    from services.common.recent_load import RecentLoad

    t = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)

    def agg(entity: str, end_minute: int, rate: float, kind: str = "broker") -> LoadAggregate:
        end = t + timedelta(minutes=end_minute)
        return LoadAggregate(window_start=end - timedelta(minutes=1), window_end=end, entity_kind=kind,
                             entity=entity, bytes_in_kb_s=rate)

    recent = RecentLoad(timedelta(minutes=5))
    for a in (agg("1", 2, 100.0), agg("1", 1, 999.0), agg("1", 3, 1.0), agg("2", 2, 50.0),
              agg("/dc1", 2, 1.0, "domain"), agg("3", -10, 7.0)):
        recent.take(a)
    # At 12:02 the window ending 12:03 is still filling: broker 1's load is the one of the window ending 12:02.
    assert recent.per_broker(t + timedelta(minutes=2)) == {1: 100.0, 2: 50.0}
    assert recent.per_broker(t + timedelta(minutes=3)) == {1: 1.0, 2: 50.0}
