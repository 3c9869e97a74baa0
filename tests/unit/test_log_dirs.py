"""Choosing the log directory of new replicas (services.placement.log_dirs) and the figures behind the choice
(services.common.recent_load)."""

from datetime import UTC, datetime, timedelta

from events import LoadAggregate
from services.placement.log_dirs import LogDirUsage, choose_log_dirs
from services.common.recent_load import RecentLoad

A, B = "/data-a", "/data-b"
T0 = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)


def test_a_new_replica_goes_to_the_directory_with_the_least_disk_used_not_the_fewest_replicas() -> None:
    # Kafka would pick B (fewer partitions); B's few partitions are big ones.
    usage = {1: {A: LogDirUsage(300.0, 6), B: LogDirUsage(900.0, 2)}}
    assert choose_log_dirs({0: [1]}, usage) == {(0, 1): A}


def test_a_burst_spreads_counting_each_new_replica_as_an_average_one_of_the_broker() -> None:
    # Mean replica on broker 1: 1000 MB / 10 = 100 MB. A starts 250 MB lighter: it takes three, then they alternate.
    usage = {1: {A: LogDirUsage(375.0, 5), B: LogDirUsage(625.0, 5)}}
    chosen = choose_log_dirs({p: [1] for p in range(6)}, usage)
    assert [chosen[(p, 1)] for p in range(6)] == [A, A, A, B, A, B]


def test_replicas_placed_since_the_figures_count_as_well() -> None:
    usage = {1: {A: LogDirUsage(100.0, 1, placed_since=3), B: LogDirUsage(200.0, 1)}}
    assert choose_log_dirs({0: [1]}, usage) == {(0, 1): B}


def test_brokers_without_a_choice_or_figures_and_placeholders_are_left_to_the_broker() -> None:
    usage = {1: {A: LogDirUsage(0.0, 0)}, 2: {A: LogDirUsage(0.0, 0), B: LogDirUsage(10.0, 1)}}
    assert choose_log_dirs({0: [1, 2, 3, -1]}, usage) == {(0, 2): A}


def aggregate(entity: str, end_s: int, disk: float, replicas: int, kind: str = "log-dir") -> LoadAggregate:
    return LoadAggregate(window_start=T0 + timedelta(seconds=end_s - 60), window_end=T0 + timedelta(seconds=end_s),
                         entity_kind=kind, entity=entity, disk_mb=disk, replicas=replicas,
                         last_sample_at=T0 + timedelta(seconds=end_s - 1))


def test_recent_load_gives_the_latest_ended_window_per_directory_and_the_replicas_placed_after_it() -> None:
    recent = RecentLoad(max_age=timedelta(minutes=5))
    recent.take(aggregate(f"1:{A}", 60, 100.0, 1))
    recent.take(aggregate(f"1:{A}", 70, 110.0, 1))
    recent.take(aggregate(f"1:{A}", 80, 999.0, 9))  # still filling at 75 s
    recent.take(aggregate(f"1:{B}", 70, 50.0, 1))
    recent.take(aggregate("1", 70, 0.0, 0, kind="broker"))  # a broker's window is not a directory's
    recent.placed(1, A, T0 + timedelta(seconds=30))  # in the figures already (sampled at 69 s)
    recent.placed(1, A, T0 + timedelta(seconds=72))
    recent.placed(1, B, T0 + timedelta(seconds=73))
    usage = recent.log_dirs(T0 + timedelta(seconds=75))
    assert usage == {1: {A: LogDirUsage(110.0, 1, placed_since=1), B: LogDirUsage(50.0, 1, placed_since=1)}}
    assert recent.log_dirs(T0 + timedelta(minutes=30)) == {}  # too old: the brokers choose


def test_a_burst_onto_empty_directories_alternates_as_kafka_would() -> None:
    usage = {1: {A: LogDirUsage(0.0, 0), B: LogDirUsage(0.0, 0)}}
    chosen = choose_log_dirs({p: [1] for p in range(4)}, usage)
    assert [chosen[(p, 1)] for p in range(4)] == [A, B, A, B]


def test_one_partition_topics_of_a_batch_alternate_counting_the_ones_before() -> None:
    usage = {1: {A: LogDirUsage(0.0, 0), B: LogDirUsage(0.0, 0)}}
    assert choose_log_dirs({0: [1]}, usage) == {(0, 1): A}
    # The batch's earlier topics sent one replica to A: B comes next, then A again.
    assert choose_log_dirs({0: [1]}, usage, placed_before={(1, A): 1}) == {(0, 1): B}
    assert choose_log_dirs({0: [1]}, usage, placed_before={(1, A): 1, (1, B): 1}) == {(0, 1): A}


def test_capacity_growth_and_draining_count() -> None:
    # A holds less but is a quarter of B's size: B is the emptier disk.
    assert choose_log_dirs({0: [1]}, {1: {A: LogDirUsage(100.0, 1, capacity_mb=400.0),
                                          B: LogDirUsage(300.0, 1, capacity_mb=1600.0)}}) == {(0, 1): B}
    # A is emptier today, but grows 100 MB a day: within the horizon it is the fuller one.
    assert choose_log_dirs({0: [1]}, {1: {A: LogDirUsage(100.0, 1, growth_mb_per_day=100.0),
                                          B: LogDirUsage(500.0, 1)}}) == {(0, 1): B}
    # A drained directory is never chosen, however empty; all of them draining: left to the broker.
    assert choose_log_dirs({0: [1]}, {1: {A: LogDirUsage(0.0, 0, draining=True), B: LogDirUsage(900.0, 9)}}) \
        == {(0, 1): B}
    assert choose_log_dirs({0: [1]}, {1: {A: LogDirUsage(0.0, 0, draining=True),
                                          B: LogDirUsage(0.0, 0, draining=True)}}) == {}
