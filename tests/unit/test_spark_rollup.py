from datetime import UTC, datetime, timedelta

from spark.rollup import domains, member, rollup, total

T0 = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)


def test_a_member_from_running_figures() -> None:
    m = member("1", "/dc1/r1", 3, 330.0, 660.0, 1000.0, 1100.0, 10, 5, T0)
    assert (m.samples, m.bytes_in_kb_s, m.bytes_out_kb_s) == (3, 110.0, 220.0)
    assert (m.disk_mb, m.disk_growth_mb, m.replicas, m.leaders) == (1100.0, 100.0, 10, 5)


def test_domains_sum_their_brokers_at_every_level() -> None:
    one = member("1", "/dc1/r1", 3, 330.0, 660.0, 1000.0, 1100.0, 10, 5, T0)
    two = member("2", "/dc1/r2", 3, 630.0, 1260.0, 2000.0, 2100.0, 20, 10, T0 + timedelta(seconds=5))
    three = member("3", "/dc2/r1", 2, 620.0, 0.0, 3000.0, 3000.0, 30, 15, T0)
    domains_ = rollup([one, two, three])
    assert set(domains_) == {("/dc1", 1), ("/dc1/r1", 2), ("/dc1/r2", 2), ("/dc2", 1), ("/dc2/r1", 2)}
    dc1 = domains_[("/dc1", 1)]
    assert (dc1.bytes_in_kb_s, dc1.disk_mb, dc1.disk_growth_mb, dc1.replicas) == (320.0, 3200.0, 200.0, 30)
    assert dc1.last_sample_at == T0 + timedelta(seconds=5) and dc1.samples == 3
    assert domains_[("/dc2", 1)].bytes_in_kb_s == 310.0
    assert total("empty", []).samples == 0


def test_domains_of_a_rack_path() -> None:
    assert domains("/dc1/r2") == [("/dc1", 1), ("/dc1/r2", 2)]
    assert domains("r2") == [("/r2", 1)]
    assert domains(None) == [] and domains("") == []


def test_placements_add_up_into_domains_and_a_window_with_placements_only_has_no_samples() -> None:
    one = member("1", "/dc1/r1", 3, 330.0, 660.0, 1000.0, 1100.0, 10, 5, T0, placements=2)
    placed_only = member("2", "/dc1/r2", 0, 0.0, 0.0, 0.0, 0.0, 0, 0, None, placements=1)
    assert (placed_only.samples, placed_only.bytes_in_kb_s, placed_only.placements) == (0, 0.0, 1)
    domains_ = rollup([one, placed_only])
    assert domains_[("/dc1", 1)].placements == 3 and domains_[("/dc1/r2", 2)].placements == 1
    assert domains_[("/dc1", 1)].bytes_in_kb_s == 110.0
