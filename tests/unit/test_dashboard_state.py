"""The dashboard's state, folded from status events (issue 18, item 15): called directly."""

from __future__ import annotations

from datetime import UTC, datetime

from events import (
    BrokerForgotten,
    BrokerLoadSample,
    ObservedBroker,
    RebalanceRequest,
    RebalanceState,
    RebalanceStatus,
    ReplicasChangeState,
    ReplicasChangeStatus,
    TopicStatus,
)
from services.dashboard.state import DashboardState


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
