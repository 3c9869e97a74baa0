"""Exact cases for the placers, the placement CLI and the nearest-replica selector."""

from __future__ import annotations

import json
from collections import Counter

import pytest
from typer.testing import CliRunner

from services.cli.main import app
from services.placement.metrics import evaluate
from services.placement.model import (
    Broker,
    BrokerState,
    ClusterView,
    InvalidRack,
    InvalidReplicationFactor,
    PlacementError,
    PlacementSpec,
)
from services.placement.multi_level import MultiLevelPlacer
from services.placement.placer import placer_named
from services.placement.selector import nearest_replica
from services.placement.striped import StripedPlacer


def tree(dcs: int, racks: int, per_rack: int) -> list[Broker]:
    brokers = []
    for d in range(1, dcs + 1):
        for r in range(1, racks + 1):
            for _ in range(per_rack):
                brokers.append(Broker(len(brokers) + 1, f"/dc{d}/r{r}"))
    return brokers


def dc_of(cluster: ClusterView) -> dict[int, str]:
    return {b.id: (b.rack or "").split("/")[1] for b in cluster.brokers}


def test_seed_example_three_dcs_of_two_racks_never_puts_two_replicas_in_one_dc() -> None:
    cluster = ClusterView.of(tree(3, 2, 2))
    assignment = MultiLevelPlacer(seed=7).place(PlacementSpec(120, 3, topic="orders"), cluster)
    dcs = dc_of(cluster)
    assert all(len({dcs[b] for b in replicas}) == 3 for replicas in assignment)
    quality = evaluate(cluster.with_assignment("orders", assignment))
    assert quality.top_level_doubled == 0 and quality.spread_ok
    assert quality.replicas_per_broker == (30, 30) and quality.leaders_per_broker == (10, 10)


def test_flat_striped_placement_doubles_up_dcs_on_the_same_example() -> None:
    # The anchor from placement.md: rack-unaware of the DC level, striped puts two replicas in one DC often.
    cluster = ClusterView.of(tree(3, 2, 2))
    assignment = StripedPlacer(seed=7).place(PlacementSpec(120, 3, topic="orders"), cluster)
    assert evaluate(cluster.with_assignment("orders", assignment)).top_level_doubled > 0.3


def test_rf_above_the_number_of_dcs_spreads_the_extra_replica_over_racks() -> None:
    cluster = ClusterView.of(tree(2, 2, 2))
    assignment = MultiLevelPlacer(seed=1).place(PlacementSpec(40, 3, topic="t"), cluster)
    racks = {b.id: b.rack for b in cluster.brokers}
    for replicas in assignment:
        per_dc = Counter(racks[b].split("/")[1] for b in replicas)  # type: ignore[union-attr]
        assert sorted(per_dc.values()) == [1, 2]
        doubled_dc = next(dc for dc, n in per_dc.items() if n == 2)
        assert len({racks[b] for b in replicas if racks[b].startswith(f"/{doubled_dc}/")}) == 2  # type: ignore[union-attr]
    quality = evaluate(cluster.with_assignment("t", assignment))
    assert quality.spread_ok and quality.replicas_range <= 1 and quality.leaders_range <= 1


def test_uneven_racks_keep_the_spread_and_fill_a_small_rack_no_further_than_it_can() -> None:
    brokers = [Broker(1, "/dc1/a"), Broker(2, "/dc1/a"), Broker(3, "/dc1/a"), Broker(4, "/dc1/b"),
               Broker(5, "/dc2/c"), Broker(6, "/dc2/c")]
    cluster = ClusterView.of(brokers)
    assignment = MultiLevelPlacer(seed=3).place(PlacementSpec(30, 5, topic="t"), cluster)
    quality = evaluate(cluster.with_assignment("t", assignment))
    assert quality.invalid == [] and quality.spread_ok
    # Five replicas over two DCs: 3 + 2 (dc2 has only two brokers), and in dc1 both racks are used.
    for replicas in assignment:
        assert sum(b >= 5 for b in replicas) == 2 and 4 in replicas


def test_fenced_and_offline_brokers_are_never_used_and_never_lead() -> None:
    brokers = [*tree(1, 3, 2)[:5], Broker(6, "/dc1/r3", BrokerState.FENCED), Broker(7, "/dc1/r3", BrokerState.OFFLINE)]
    cluster = ClusterView.of(brokers)
    assignment = MultiLevelPlacer(seed=1).place(PlacementSpec(50, 3, topic="t"), cluster)
    assert {b for replicas in assignment for b in replicas} <= {1, 2, 3, 4, 5}
    striped = StripedPlacer(seed=1).place(PlacementSpec(50, 3, topic="t"), cluster)
    assert 7 not in {b for r in striped for b in r} and all(r[0] != 6 for r in striped)


def test_offline_observed_brokers_hold_followers_only_when_asked() -> None:
    brokers = [Broker(1, "/dc1/r1"), Broker(2, "/dc2/r1"), Broker(3, "/dc3/r1", BrokerState.OFFLINE)]
    spec = PlacementSpec(9, 3, topic="t", use_offline_brokers=True)
    assignment = MultiLevelPlacer(seed=1).place(spec, ClusterView.of(brokers))
    assert all(sorted(r) == [1, 2, 3] and r[0] != 3 for r in assignment)
    with pytest.raises(InvalidReplicationFactor, match="above the 2 alive brokers"):
        MultiLevelPlacer(seed=1).place(PlacementSpec(9, 3, topic="t"), ClusterView.of(brokers))


def test_raising_the_replication_factor_continues_the_spread() -> None:
    cluster = ClusterView.of(tree(3, 2, 2))
    placer = MultiLevelPlacer(seed=5)
    rf2 = placer.place(PlacementSpec(24, 2, topic="t"), cluster)
    cluster = cluster.with_assignment("t", rf2)
    rf3 = placer.add_replicas("t", rf2, 3, cluster)
    assert [r[:2] for r in rf3] == rf2
    dcs = dc_of(cluster)
    assert all(len({dcs[b] for b in r}) == 3 for r in rf3)
    quality = evaluate(cluster.with_assignment("t", rf3))
    assert quality.replicas_range <= 1 and quality.spread_ok


def test_adding_partitions_continues_both_placers_rings() -> None:
    cluster = ClusterView.of(tree(3, 1, 2))
    for placer in (MultiLevelPlacer(seed=2), StripedPlacer(seed=2)):
        first = placer.place(PlacementSpec(4, 2, topic="t"), cluster)
        grown = cluster.with_assignment("t", first)
        more = placer.place(PlacementSpec(2, 2, first_partition=4, topic="t"), grown)
        whole = evaluate(grown.with_assignment("t", [*first, *more]))
        assert whole.invalid == [] and whole.spread_ok, placer.name
        if placer.name == "multi-level":  # striped makes no balance promise across calls (Kafka's either)
            assert whole.replicas_range <= 1
    # Striped starts the next partition in the rack after the last leader's, as Kafka does.
    racks = {b.id: b.rack for b in cluster.brokers}
    names = sorted({b.rack for b in cluster.brokers})
    first = StripedPlacer(seed=9).place(PlacementSpec(5, 1, topic="t"), cluster)
    more = StripedPlacer(seed=9).place(PlacementSpec(1, 1, first_partition=5, topic="t"),
                                       cluster.with_assignment("t", first))
    assert racks[more[0][0]] == names[(names.index(racks[first[-1][0]]) + 1) % len(names)]


@pytest.mark.parametrize(("brokers", "message"), [
    ([Broker(1, "dc1/r1"), Broker(2, "/dc1/r2")], "does not start with '/'"),
    ([Broker(1, "/dc1/r1"), Broker(2, "/dc1")], "mix depths"),
    ([Broker(1, None), Broker(2, "/dc1")], "has no rack"),
])
def test_bad_rack_paths_are_refused_with_the_reason(brokers: list[Broker], message: str) -> None:
    with pytest.raises(InvalidRack, match=message):
        MultiLevelPlacer().place(PlacementSpec(1, 1, topic="t"), ClusterView.of(brokers))


def test_replication_factor_errors_use_each_placers_words() -> None:
    cluster = ClusterView.of(tree(1, 1, 3))
    for placer in (StripedPlacer(), MultiLevelPlacer()):
        with pytest.raises(InvalidReplicationFactor, match="must be positive"):
            placer.place(PlacementSpec(1, 0, topic="t"), cluster)
    with pytest.raises(InvalidReplicationFactor, match="cannot be reached because only 3 broker"):
        StripedPlacer().place(PlacementSpec(1, 4, topic="t"), cluster)
    with pytest.raises(InvalidReplicationFactor, match="above the 3 alive brokers"):
        MultiLevelPlacer().place(PlacementSpec(1, 4, topic="t"), cluster)
    fenced = ClusterView.of([Broker(1, "/a", BrokerState.FENCED)])
    with pytest.raises(InvalidReplicationFactor, match="All brokers are currently fenced"):
        StripedPlacer().place(PlacementSpec(1, 1, topic="t"), fenced)
    with pytest.raises(PlacementError, match="unknown placer 'best'"):
        placer_named("best")
    with pytest.raises(PlacementError, match=r"unknown broker id\(s\) \[9\]"):
        StripedPlacer().place(PlacementSpec(1, 1, topic="t"), cluster, broker_ids=[1, 9])


def test_broker_ids_limit_the_placement() -> None:
    cluster = ClusterView.of(tree(2, 2, 2))
    for name in ("striped", "multi-level"):
        assignment = placer_named(name, 1).place(PlacementSpec(20, 2, topic="t"), cluster, broker_ids=[1, 3, 5, 7])
        assert {b for r in assignment for b in r} == {1, 3, 5, 7}


def test_nearest_replica_prefers_the_longest_shared_rack_prefix_and_spreads_ties() -> None:
    racks = {1: "/dc1/r1", 2: "/dc1/r2", 3: "/dc2/r1", 4: "/dc2/r1"}
    assert nearest_replica("/dc1/r2", [1, 2, 3], racks) == 2
    assert nearest_replica("/dc1/r9", [3, 1], racks) == 1
    assert nearest_replica("/dc3/r1", [3, 1], racks) == 3  # nothing shared: the leader's order decides among all
    chosen = Counter(nearest_replica("/dc2/r1", [3, 4, 1], racks, client_id=f"c{i}") for i in range(200))
    assert set(chosen) == {3, 4} and min(chosen.values()) > 60
    assert nearest_replica("/dc2/r1", [3, 4], racks, alive={4}) == 4
    assert nearest_replica(None, [2, 1], racks) == 2


def test_place_cli_prints_reassignment_json_and_explains_errors(tmp_path) -> None:
    path = tmp_path / "cluster.json"
    path.write_text(json.dumps({"brokers": [{"id": b.id, "rack": b.rack} for b in tree(3, 2, 2)],
                                "assignments": {"orders": [[1, 5, 9]]}}))
    runner = CliRunner()
    result = runner.invoke(app, ["place", "--cluster", str(path), "--partitions", "3", "--replication-factor", "3",
                                 "--placer", "multi-level", "--seed", "4", "--topic", "orders"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert out["version"] == 1 and [p["partition"] for p in out["partitions"]] == [1, 2, 3]
    assert all(p["topic"] == "orders" and len(set(p["replicas"])) == 3 and p["log_dirs"] == ["any"] * 3
               for p in out["partitions"])
    again = runner.invoke(app, ["place", "--cluster", str(path), "--partitions", "3", "--replication-factor", "3",
                                "--placer", "multi-level", "--seed", "4", "--topic", "orders"])
    assert again.stdout == result.stdout
    bad = runner.invoke(app, ["place", "--cluster", str(path), "--partitions", "1", "--replication-factor", "13"])
    assert bad.exit_code == 2 and "cannot be reached because only 12 broker(s)" in bad.output
    path.write_text(json.dumps({"brokers": [{"id": 1, "rack": "/a", "state": "sleeping"}]}))
    bad = runner.invoke(app, ["place", "--cluster", str(path), "--partitions", "1", "--replication-factor", "1"])
    assert bad.exit_code == 2 and "brokers.0.state" in bad.output


def test_place_report_counts_only_the_new_partitions_as_the_topics(tmp_path) -> None:
    """Issue 18, defect 11: the report used to count the topic's existing partitions as placed."""
    path = tmp_path / "cluster.json"
    path.write_text(json.dumps({"brokers": [{"id": b, "rack": f"/r{b % 2}"} for b in (1, 2, 3, 4)],
                                "assignments": {"orders": [[1, 2], [3, 4], [2, 1]], "other": [[1, 4]]}}))
    result = CliRunner().invoke(app, ["place", "--cluster", str(path), "--partitions", "2", "--replication-factor",
                                      "2", "--topic", "orders", "--report", "--placer", "striped"])
    assert result.exit_code == 0, result.output
    report = result.stderr.strip()
    assert report.startswith("placer striped: 2 new partitions (after its 3 existing), 4 replicas; spread "
                             "violations by level none;"), report
    # The balance line counts everything each broker holds afterwards, other topics included.
    placed = json.loads(result.stdout)["partitions"]
    held = [b for p in [[1, 2], [3, 4], [2, 1], [1, 4], *(p["replicas"] for p in placed)] for b in p]
    counts = sorted(held.count(b) for b in (1, 2, 3, 4))
    assert f"replicas {counts[0]}-{counts[-1]}" in report
    # The topic's own spread (issue 55): its replicas per broker, existing and new, max - min.
    mine = [b for p in [[1, 2], [3, 4], [2, 1], *(p["replicas"] for p in placed)] for b in p]
    spread = max(mine.count(b) for b in (1, 2, 3, 4)) - min(mine.count(b) for b in (1, 2, 3, 4))
    assert f"The topic's own spread (max - min per broker it could use): replicas {spread}," in report


def test_place_refuses_an_assignment_naming_an_unknown_broker_and_a_top_level_array(tmp_path) -> None:
    path = tmp_path / "cluster.json"
    path.write_text(json.dumps({"brokers": [{"id": 1}, {"id": 2}], "assignments": {"orders": [[1, 2], [2, 9]]}}))
    runner = CliRunner()
    refused = runner.invoke(app, ["place", "--cluster", str(path), "--partitions", "1", "--replication-factor", "1"])
    assert refused.exit_code == 2
    assert refused.stderr.strip() == (f"error: {path}: assignments.orders[1] names broker(s) [9] that are not among "
                                      "the brokers (1, 2)")
    path.write_text(json.dumps([{"id": 1}]))
    refused = runner.invoke(app, ["place", "--cluster", str(path), "--partitions", "1", "--replication-factor", "1"])
    assert refused.exit_code == 2
    assert refused.stderr.strip() == (f'error: {path}: expected an object ({{"brokers": [...], "assignments": '
                                      '{...}}), not an array')
