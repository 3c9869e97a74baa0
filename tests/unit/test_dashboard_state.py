"""The dashboard's state, folded from status events (issue 18, item 15): called directly."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from events import (
    BrokerForgotten,
    BrokerLoadSample,
    ObservedBroker,
    RebalanceRequest,
    RebalanceState,
    RebalanceStatus,
    ReplicasChangeState,
    ReplicasChangeStatus,
    ThrottleRateChanged,
    ThrottleStatus,
    TopicStatus,
)
from events.throttle import BrokerThrottle, LogDirThrottle
from services.dashboard.state import THROTTLE_CHANGES, DashboardState


def change(state: ReplicasChangeState, rf: int = 3) -> ReplicasChangeStatus:
    return ReplicasChangeStatus(state=state, target_replicas=rf)


def test_a_topic_keeps_the_history_of_its_change_and_its_notes() -> None:
    board = DashboardState()
    for state in (ReplicasChangeState.PENDING, ReplicasChangeState.PENDING, ReplicasChangeState.ONGOING,
                  ReplicasChangeState.COMPLETED):
        update = board.apply(TopicStatus(topic="orders", ready=True, replicas=1, replicas_change=change(state)))
    assert update is not None and update["kind"] == "topic"
    shown = board.snapshot()["topics"][0]
    assert shown["history"] == ["pending (RF 3)", "ongoing (RF 3)", "completed (RF 3)"]
    assert shown["changeText"] == "completed -> RF 3"
    assert board.apply(TopicStatus(topic="orders", ready=False, deleted=True)) == {"kind": "topic-gone",
                                                                                   "name": "orders"}
    assert board.snapshot()["topics"] == []


def test_rebalances_and_brokers_by_rack_with_load() -> None:
    board = DashboardState()
    board.apply(RebalanceStatus(name="scale-up", state=RebalanceState.PROPOSAL_READY,
                                request=RebalanceRequest(name="scale-up", mode="add-brokers", brokers=[7])))
    board.apply(ObservedBroker(id=2, rack="/dc1/r2"))
    board.apply(ObservedBroker(id=1, rack="/dc1/r1"))
    board.apply(BrokerLoadSample(broker=1, rack="/dc1/r1", sampled_at=datetime(2026, 1, 1, tzinfo=UTC),
                                 disk_mb=512.0, replicas=4, leaders=2))
    snapshot = board.snapshot()
    assert [r["state"] for r in snapshot["rebalances"]] == ["ProposalReady"]
    assert [(b["id"], b["rack"]) for b in snapshot["brokers"]] == [(1, "/dc1/r1"), (2, "/dc1/r2")]
    assert snapshot["brokers"][0]["load"]["diskMb"] == 512.0 and "load" not in snapshot["brokers"][1]
    board.apply(BrokerForgotten(id=2))
    assert [b["id"] for b in board.snapshot()["brokers"]] == [1]


def test_a_rebalance_shows_the_executed_proposal_beside_the_approved_one_when_they_differ() -> None:
    from events import ProposalSummary

    approved = ProposalSummary(num_replica_movements=48, num_leader_movements=6, data_to_move_mb=36_024)
    executed = approved.model_copy(update={"data_to_move_mb": 41_115})
    request = RebalanceRequest(name="scale-up", mode="add-brokers", brokers=[7])
    board = DashboardState()
    board.apply(RebalanceStatus(name="scale-up", state=RebalanceState.REBALANCING, request=request,
                                summary=approved, executed_summary=approved))
    assert board.snapshot()["rebalances"][0]["proposalText"] == "48 replica / 6 leader movements, 36,024 MB"
    board.apply(RebalanceStatus(name="scale-up", state=RebalanceState.REBALANCING, request=request,
                                summary=approved, executed_summary=executed))
    assert board.snapshot()["rebalances"][0]["proposalText"] == (
        "48 replica / 6 leader movements, 36,024 MB; executed: 48 replica / 6 leader movements, 41,115 MB")


def test_a_finished_drain_shows_what_the_cli_shows() -> None:
    """Issue 30, defect 7: the page said "Rebalance complete" where the CLI said "Not safe to remove: broker 4 hosts
    22 replica(s)"; both now show the same notes (services.common.wording.rebalance_notes)."""
    from events import Condition
    from services.cli.views import rebalance_table

    landed = Condition(type="BrokersRemovable", status="False", reason="ReplicasLanded",
                       message="Not safe to remove: broker 4 hosts 22 replica(s) of orders. Refresh this rebalance "
                               "to move them off.")
    drain = RebalanceStatus(name="drain", state=RebalanceState.READY, message="Rebalance complete",
                            request=RebalanceRequest(name="drain", mode="remove-brokers", brokers=[4]),
                            conditions=[landed])
    board = DashboardState()
    board.apply(drain)
    notes = board.snapshot()["rebalances"][0]["notes"]
    assert notes == ["Rebalance complete", landed.message]
    row = rebalance_table([drain]).columns[-1]._cells[0]
    assert row == "; ".join(notes)


def test_a_topic_history_has_every_kind_of_change_not_only_the_rf() -> None:
    """Issue 30, feature 7: created, partitions added, the RF change, drift, paused and resumed, refused."""
    from events import Condition

    def drift(reason: str) -> Condition:
        return Condition(type="Drift", status="True", reason=reason, message="changed outside Ballast: ...")

    board = DashboardState()
    for status in (
            TopicStatus(topic="t", ready=True, partitions=3, replicas=2),
            TopicStatus(topic="t", ready=True, partitions=6, replicas=2),
            TopicStatus(topic="t", ready=True, partitions=6, replicas=2,
                        replicas_change=change(ReplicasChangeState.PENDING)),
            TopicStatus(topic="t", ready=True, partitions=6, replicas=3,
                        replicas_change=change(ReplicasChangeState.COMPLETED)),
            TopicStatus(topic="t", ready=True, partitions=6, replicas=3,
                        replicas_change=change(ReplicasChangeState.COMPLETED), conditions=[drift("Corrected")]),
            TopicStatus(topic="t", ready=True, partitions=6, replicas=3, conditions=[Condition(
                type="ReconciliationPaused", status="True")]),
            TopicStatus(topic="t", ready=True, partitions=6, replicas=3),
            TopicStatus(topic="t", ready=False, partitions=6, replicas=3, conditions=[Condition(
                type="PolicyViolation", status="True")])):
        board.apply(status)
    assert board.snapshot()["topics"][0]["history"] == [
        "created (3 partitions, RF 2)", "partitions 3 -> 6", "pending (RF 3)", "completed (RF 3)", "drift corrected",
        "paused", "resumed", "refused by the policy"]


def test_unmanaged_topics_are_the_clusters_that_no_spec_names() -> None:
    board = DashboardState()
    board.apply(TopicStatus(topic="orders", ready=True, partitions=3, replicas=3))
    update = board.cluster_topics(["orders", "legacy", "__consumer_offsets", "ballast.topic.specs", "clicks"])
    assert update == {"kind": "unmanaged", "names": ["clicks", "legacy"]}
    assert board.cluster_topics(["orders", "legacy", "clicks"]) is None  # the same list: nothing to send
    board.apply(TopicStatus(topic="legacy", ready=True, partitions=1, replicas=1))  # adopted
    assert board.snapshot()["unmanaged"] == ["clicks"]


def test_the_latest_throttle_status_with_its_rates_in_words_as_the_cli_says_them() -> None:
    from services.cli.commands.throttle import back_off_text, broker_rows, traffic_text

    board = DashboardState()
    assert board.snapshot()["throttle"] is None and board.snapshot()["throttleChanges"] == []
    status = ThrottleStatus(
        moving_partitions=3,
        brokers=[BrokerThrottle(broker=2, kind="inter-broker", bytes_per_s=50_000_000, owner="other", reason="fixed"),
                 BrokerThrottle(broker=1, kind="intra-broker", bytes_per_s=1_000_000, owner="ballast",
                                reason="isr-back-off", capacity_bytes_per_s=400_000_000,
                                live_bytes_per_s=30_500_000, headroom_bytes_per_s=369_500_000),
                 BrokerThrottle(broker=1, kind="inter-broker", bytes_per_s=3_200_000, owner="ballast",
                                reason="isr-back-off")],
        log_dirs=[LogDirThrottle(broker=1, log_dir="/data-1", headroom_bytes_per_s=369_500_000)],
        traffic_source="cruise-control", traffic_age_s=4.2, back_off="isr-back-off",
        back_off_until=datetime(2026, 1, 1, 12, tzinfo=UTC), lagging_partitions=["orders-0"],
        message="moves in flight")
    update = board.apply(status)
    assert update is not None and update["kind"] == "throttle"
    shown = board.snapshot()["throttle"]
    assert shown == update["data"]
    assert [(b["broker"], b["kind"], b["rateText"], b["owner"], b["reason"]) for b in shown["brokers"]] == [
        (1, "inter-broker", "3.2 MB/s", "ballast", "isr-back-off"), (1, "intra-broker", "1.0 MB/s", "ballast",
                                                                     "isr-back-off"),
        (2, "inter-broker", "50.0 MB/s", "other", "fixed")]
    # The same words as `ballast throttle status`, raw bytes beside them.
    assert [(str(b["broker"]), b["kind"], b["rateText"], b["owner"], b["reason"], b["capacityText"], b["liveText"],
             b["headroomText"]) for b in shown["brokers"]] == broker_rows(status)
    assert shown["brokers"][1]["bytesPerS"] == 1_000_000 and "capacityBytesPerS" not in shown["brokers"][0]
    assert shown["logDirs"] == [{"broker": 1, "logDir": "/data-1", "headroomBytesPerS": 369_500_000,
                                 "capacityText": "-", "liveText": "-", "headroomText": "369.5 MB/s"}]
    assert shown["trafficText"] == traffic_text(status) and shown["trafficSource"] == "cruise-control"
    assert shown["backOff"] == "isr-back-off" and shown["backOffText"] == back_off_text(status)
    assert shown["laggingText"] == "1 partition(s) outside the moves out of their ISR: orders-0"
    assert shown["movesText"].startswith("3 partition(s) moving") and shown["message"] == "moves in flight"

    # The status is one record (the cluster): the next replaces it.
    board.apply(ThrottleStatus(message="no moves in flight"))
    shown = board.snapshot()["throttle"]
    assert shown["brokers"] == [] and shown["backOffText"] is None and shown["movesText"] == "no moves in flight"


def test_the_latest_throttle_changes_in_time_order() -> None:
    start = datetime(2026, 1, 1, tzinfo=UTC)

    def changed(second: int, new: int | None = 2_000_000) -> ThrottleRateChanged:
        return ThrottleRateChanged(broker=second % 3, kind="inter-broker", from_bytes_per_s=1_000_000,
                                   to_bytes_per_s=new, reason="headroom" if new else "moves-ended",
                                   at=start + timedelta(seconds=second))

    board = DashboardState()
    update = board.apply(changed(1, None))
    assert update is not None and update["kind"] == "throttle-changes"
    assert update["data"] == [{"broker": 1, "kind": "inter-broker", "fromBytesPerS": 1_000_000,
                               "reason": "moves-ended", "detail": "", "at": "2026-01-01T00:00:01Z",
                               "atText": "2026-01-01 00:00:01", "changeText": "1.0 MB/s -> none"}]
    # Keyed by broker and kind, the topic's partitions are read in no set order: the page gets them in time order.
    board.apply(changed(10))
    board.apply(changed(5))
    assert [c["atText"][-2:] for c in board.snapshot()["throttleChanges"]] == ["01", "05", "10"]
    for second in range(100, 100 + THROTTLE_CHANGES + 5):
        board.apply(changed(second))
    kept = board.snapshot()["throttleChanges"]
    assert len(kept) == THROTTLE_CHANGES == 50
    assert kept[0]["at"] == "2026-01-01T00:01:45Z" and kept[-1]["at"] == "2026-01-01T00:02:34Z"
    late = board.apply(changed(7))  # older than every change kept: not shown
    assert late is not None and late["data"] == kept


def test_a_topic_shows_its_owner() -> None:
    board = DashboardState()
    board.apply(TopicStatus(topic="a.orders", ready=True, owner="team-a"))
    board.apply(TopicStatus(topic="orders", ready=True))
    assert [(t["topic"], t.get("owner")) for t in board.snapshot()["topics"]] == [("a.orders", "team-a"),
                                                                                  ("orders", None)]


def test_a_brokers_cordons_and_failed_disks_are_shown_with_it() -> None:
    from events import BrokerStatus
    from events.rebalance import LogDirState

    board = DashboardState()
    board.apply(ObservedBroker(id=4, rack="/dc2/r2"))
    board.apply(ObservedBroker(id=1, rack="/dc1/r1"))
    update = board.apply(BrokerStatus(broker=4, log_dirs=[LogDirState(path="/d0", cordoned=True),
                                                          LogDirState(path="/d1", cordoned=True)]))
    assert update is not None and update["data"]["logDirsText"] == "cordoned (every directory): takes no new replica"
    board.apply(BrokerStatus(broker=1, log_dirs=[LogDirState(path="/d0", cordoned=True),
                                                 LogDirState(path="/d1", online=False, error="KAFKA_STORAGE_ERROR")]))
    shown = {b["id"]: b for b in board.snapshot()["brokers"]}
    assert shown[1]["logDirsText"] == "cordoned: /d0; offline: /d1" and shown[1]["cordoned"] == ["/d0"]
    assert shown[4]["rack"] == "/dc2/r2" and shown[4]["cordoned"] == ["/d0", "/d1"]
    board.apply(BrokerStatus(broker=4, log_dirs=[LogDirState(path="/d0"), LogDirState(path="/d1")]))
    assert board.snapshot()["brokers"][-1]["logDirsText"] == ""
    # A forgotten broker's last status (compacted, read in no order with the registry) does not bring it back; a
    # status read before the broker's registration is shown once it registers.
    board.apply(BrokerForgotten(id=4))
    assert board.apply(BrokerStatus(broker=4, log_dirs=[LogDirState(path="/d0", cordoned=True)])) is None
    assert 4 not in {b["id"] for b in board.snapshot()["brokers"]}
    board.apply(BrokerStatus(broker=7, log_dirs=[LogDirState(path="/d0", cordoned=True)]))
    board.apply(ObservedBroker(id=7, rack="/dc1/r9"))
    assert {b["id"]: b for b in board.snapshot()["brokers"]}[7]["logDirsText"] == \
        "cordoned (every directory): takes no new replica"
