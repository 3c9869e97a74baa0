from datetime import UTC, datetime, timedelta

from spark.rollup import Sample, domains, figures

T0 = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)


def s(seconds: int, member: str, rate: float, disk: float, replicas: int = 10) -> Sample:
    return Sample(T0 + timedelta(seconds=seconds), member, rate, 2 * rate, disk, replicas, replicas // 2)


def test_a_domain_totals_its_members_and_averages_over_time() -> None:
    f = figures([s(0, "1", 100, 1000), s(0, "2", 300, 2000), s(5, "1", 200, 1100), s(5, "2", 400, 2100)])
    assert f.samples == 2
    assert f.bytes_in_kb_s == (100 + 300 + 200 + 400) / 2
    assert f.bytes_out_kb_s == 2 * f.bytes_in_kb_s
    assert (f.disk_mb, f.disk_growth_mb) == (3200, 200)
    assert (f.replicas, f.leaders) == (20, 10)


def test_a_window_still_filling_counts_each_member_by_its_own_samples() -> None:
    # The micro-batch ended after broker 1's sample at :10 and before broker 2's.
    f = figures([s(0, "1", 100, 1000), s(0, "2", 300, 2000), s(10, "1", 200, 1100)])
    assert f.bytes_in_kb_s == 150 + 300 and (f.disk_mb, f.disk_growth_mb) == (3100, 100)
    assert f.last_sample_at == T0 + timedelta(seconds=10)


def test_a_sample_delivered_twice_counts_once_and_nothing_gives_zeros() -> None:
    once = figures([s(0, "1", 100, 1000), s(5, "1", 300, 1500)])
    twice = figures([s(0, "1", 100, 1000), s(5, "1", 300, 1500), s(5, "1", 300, 1500)])
    assert once == twice and once.bytes_in_kb_s == 200
    assert figures([]).samples == 0


def test_domains_of_a_rack_path() -> None:
    assert domains("/dc1/r2") == [("/dc1", 1), ("/dc1/r2", 2)]
    assert domains("r2") == [("/r2", 1)]
    assert domains(None) == [] and domains("") == []
