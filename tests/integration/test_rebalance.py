"""Rebalancing end to end on the real local parts: the rebalancer process, the local broker, the simulator.

The stack is this module's own: brokers join and leave here. Each test uses its own broker ids and topics."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from events import RebalanceState
from tests.integration.harness import scrape, value
from tests.integration.rebalancing import ENV, Rebalancing, rebalancing_stack

S = RebalanceState
ORIGINAL = range(1, 7)


@pytest.fixture(scope="module")
def rb(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Rebalancing]:
    with rebalancing_stack(tmp_path_factory.mktemp("rebalance-stack"), ENV) as client:
        yield client


@pytest.fixture(autouse=True)
def reset_faults(rb: Rebalancing) -> Iterator[None]:
    yield
    rb.fault("reset")


def lopsided(rb: Rebalancing, name: str) -> None:
    """A topic whose every replica sits on brokers 1, 3 and 5 (one per data centre): a full rebalance has work."""
    rb.create_topic(name, partitions=24, assignment=[[1, 3, 5]] * 24)


def test_add_brokers_moves_replicas_only_onto_the_new_brokers(rb: Rebalancing) -> None:
    for broker, rack in ((7, "/dc1/r3"), (8, "/dc2/r3"), (9, "/dc3/r3")):
        rb.add_broker(broker, rack)
    before = rb.replicas_per_broker()
    rb.request(name="scale-up", mode="add-brokers", brokers=[7, 8, 9])

    ready = rb.wait_state("scale-up", S.PROPOSAL_READY)
    assert ready.summary is not None and ready.summary.num_replica_movements > 0
    assert ready.summary.data_to_move_mb > 0
    load = {row.broker: row for row in ready.broker_load}
    assert all(load[b].replicas_before == 0 and load[b].replicas_after > 0 for b in (7, 8, 9))
    assert all(load[b].replicas_after <= load[b].replicas_before for b in ORIGINAL)
    assert rb.replicas_per_broker() == before, "a proposal moves nothing"

    rb.act("scale-up", "approve")
    running = rb.wait_for("scale-up", lambda s: s.progress is not None and s.progress.total_data_mb > 0, "progress")
    # The proposal executed is recorded beside the approved one, and it is what the executor moves (defect 10).
    assert running.executed_summary is not None
    assert abs(running.progress.total_data_mb - running.executed_summary.data_to_move_mb) <= 1
    assert running.summary == ready.summary, "the approved figures stay as approved"
    done = rb.wait_state("scale-up", S.READY)
    assert done.executed_summary == running.executed_summary
    # Its metrics (issue 18, item 14): the rebalance by state, its progress, the requests it took.
    scraped = scrape(rb.stack.health_url("rebalancer").replace("/health", "/metrics"))
    assert value(scraped, "ballast_rebalances", state="Ready") >= 1
    assert value(scraped, "ballast_rebalance_data_moved_percent", rebalance="scale-up") == 100
    assert value(scraped, "ballast_cruise_control_requests_total", endpoint="add_broker", method="POST") >= 2
    after = rb.replicas_per_broker()
    assert all(after[b] <= before[b] for b in ORIGINAL), (before, after)
    assert {b: after[b] for b in (7, 8, 9)} == {row.broker: row.replicas_after for row in ready.broker_load
                                                if row.broker in (7, 8, 9)}
    assert rb.states("scale-up") == [S.NEW, S.PENDING_PROPOSAL, S.PROPOSAL_READY, S.REBALANCING, S.READY]


def test_full_rebalance_evens_the_cluster_out(rb: Rebalancing) -> None:
    lopsided(rb, "lopsided-full")
    before = rb.replicas_per_broker()
    rb.request(name="even-out", auto_approve=True)
    rb.wait_state("even-out", S.READY)
    after = rb.replicas_per_broker()
    alive = [b for b in after if b in before]
    assert max(after[b] for b in alive) - min(after[b] for b in alive) <= 2, after
    assert max(before.values()) - min(before.values()) > 2, before
    assert S.PROPOSAL_READY in rb.states("even-out"), "auto-approval still goes through a proposal"


def test_remove_brokers_and_safe_scale_down(rb: Rebalancing) -> None:
    rb.add_broker(20, "/dc1/r9")
    rb.create_topic("on-twenty", partitions=6, assignment=[[20, 3, 5]] * 6)
    rb.request(name="scale-down", mode="remove-brokers", brokers=[20], auto_approve=True)
    done = rb.wait_for("scale-down", lambda s: s.condition("BrokersRemovable") is not None, "removability")
    assert done.state == S.READY and done.condition("BrokersRemovable").status == "True"
    assert rb.replicas_per_broker()[20] == 0

    # A topic created afterwards lands a replica on the broker: no longer safe to remove.
    rb.create_topic("landed-later", partitions=1, assignment=[[20, 1, 3]])
    landed = rb.wait_for("scale-down", lambda s: s.condition("BrokersRemovable").status == "False", "not removable")
    assert "broker 20 hosts 1 replica(s) of landed-later" in landed.condition("BrokersRemovable").message
    rb.delete_topic("landed-later")
    rb.wait_for("scale-down", lambda s: s.condition("BrokersRemovable").status == "True", "removable again")
    rb.remove_broker(20)


@pytest.mark.parametrize(("goals", "error"), [
    (["ReplicaDistributionGoal"], "Missing hard goals"),
    (["NoSuchGoal"], "Goals [NoSuchGoal] are not supported."),
])
def test_bad_goals_are_not_ready_with_cruise_controls_words(rb: Rebalancing, goals: list[str], error: str) -> None:
    name = f"bad-goals-{len(goals[0])}"
    rb.request(name=name, goals=goals)
    failed = rb.wait_state(name, S.NOT_READY)
    assert error in (failed.message or "")


def test_unknown_broker_is_not_ready(rb: Rebalancing) -> None:
    rb.request(name="unknown-broker", mode="add-brokers", brokers=[42])
    failed = rb.wait_state("unknown-broker", S.NOT_READY)
    assert "Broker [42] does not exist." in (failed.message or "")


def test_a_full_servlet_keeps_the_state_and_is_retried_without_a_status(rb: Rebalancing) -> None:
    """Issue 28: other clients filled Cruise Control's user tasks; nothing is wrong with the rebalance, so nothing
    about it is published: it is asked again until there is room."""
    served = lambda: rb.sim.get("/faults/stats").json()["requestsServed"]  # noqa: E731
    rb.tune(max_active_user_tasks=0)
    before = served()
    rb.request(name="servlet-full")
    rb.wait_state("servlet-full", S.PENDING_PROPOSAL)
    rb.wait("three refused requests", lambda: served() >= before + 3)
    assert rb.latest["servlet-full"].state == S.PENDING_PROPOSAL
    rb.tune(max_active_user_tasks=5)
    rb.wait_state("servlet-full", S.PROPOSAL_READY)
    history = rb.history["servlet-full"]
    assert not any("servlet" in (s.message or "") for s in history), [s.message for s in history]
    assert sum(1 for s in history if s.state == S.PENDING_PROPOSAL) == 1, "one status while it waited"


def test_stop_during_execution(rb: Rebalancing) -> None:
    lopsided(rb, "lopsided-stop")
    rb.tune(min_execution_s=30)
    rb.request(name="stopped", auto_approve=True)
    rb.wait_for("stopped", lambda s: s.progress is not None and s.progress.finished_data_mb > 0, "progress")
    rb.act("stopped", "stop")
    stopping = rb.wait_state("stopped", S.STOPPING)
    assert "lets those in flight finish" in (stopping.message or "")
    stopped = rb.wait_state("stopped", S.STOPPED)
    assert rb.executor()["state"] == "NO_TASK_IN_PROGRESS"
    progress = stopped.progress
    assert progress is not None and 0 < progress.finished_partition_movements < progress.total_partition_movements
    assert (stopped.message or "").startswith(
        f"Stopped; by Cruise Control's last report, {progress.finished_partition_movements} of "
        f"{progress.total_partition_movements} partition movements made"), stopped.message
    assert rb.states("stopped")[-3:] == [S.REBALANCING, S.STOPPING, S.STOPPED]
    rb.act("stopped", "approve")  # not valid when Stopped: a warning, nothing else
    rb.wait_for("stopped", lambda s: s.condition("InvalidAction") is not None, "the invalid-action warning")
    assert rb.latest["stopped"].state == S.STOPPED
    # A Cruise Control restart while Stopped changes nothing; a refresh afterwards gets a new proposal.
    rb.fault("cruise-control/restart", {"downSeconds": 0.3})
    rb.tune(min_execution_s=0.3)
    rb.act("stopped", "refresh")
    refreshed = rb.wait_for("stopped", lambda s: s.state == S.READY and s.condition("InvalidAction") is None,
                            "the refreshed rebalance done")
    assert refreshed.request.auto_approve


def test_cruise_control_restart_while_the_proposal_is_computed(rb: Rebalancing) -> None:
    lopsided(rb, "lopsided-pending")
    rb.tune(proposal_s=3, max_block_s=0.2)
    rb.request(name="restart-pending")
    pending = rb.wait_for("restart-pending", lambda s: s.state == S.PENDING_PROPOSAL and s.session_id is not None,
                          "a proposal task")
    rb.fault("cruise-control/restart", {"downSeconds": 0.5})
    rb.tune(proposal_s=0.1)
    rb.wait_state("restart-pending", S.PROPOSAL_READY)
    assert pending.session_id not in {t["UserTaskId"] for t in rb.tasks()}, "the first task was forgotten"


def test_cruise_control_restart_with_a_proposal_ready(rb: Rebalancing) -> None:
    lopsided(rb, "lopsided-ready")
    rb.request(name="restart-ready")
    rb.wait_state("restart-ready", S.PROPOSAL_READY)
    # The approval must reach Cruise Control while it warms up: 2 s of warm-up were over first on a busy machine.
    rb.fault("cruise-control/restart", {"downSeconds": 0.3, "warmupSeconds": 20})
    rb.act("restart-ready", "approve")
    rb.wait_state("restart-ready", S.READY)
    messages = [s.message or "" for s in rb.history["restart-ready"]]
    assert any("Cluster model not ready" in m or "Cruise Control is warming up" in m for m in messages), messages


def test_an_approval_is_refused_when_the_proposal_to_execute_drifted(rb: Rebalancing) -> None:
    """Issue 18, defect 10: Cruise Control computes the proposal again at execution; an approval stands only within
    the limit of the approved figures, else the new proposal is shown for another approval."""
    name = "drifting"
    lopsided(rb, "drift-a")
    rb.request(name=name, excluded_topics="(?!drift-).*", approval_max_drift_percent=50)
    first = rb.wait_state(name, S.PROPOSAL_READY)
    assert first.summary is not None and first.summary.num_replica_movements > 0
    lopsided(rb, "drift-b")  # as much again to move: the proposal Cruise Control would execute now is another
    seen = len(rb.history[name])
    rb.act(name, "approve")
    refused = rb.wait_for(name, lambda s: s.condition("ProposalChanged") is not None, "the approval refused")
    assert refused.state == S.PROPOSAL_READY and not refused.checking_approval
    assert any(s.checking_approval for s in rb.history[name][seen:]), "the approval was checked first"
    assert refused.summary is not None
    assert refused.summary.num_replica_movements >= 1.5 * first.summary.num_replica_movements, refused.summary
    assert (refused.message or "").startswith("Approval refused: the proposal drifted more than 50% from the "
                                              "approved one (data to move ")
    assert S.REBALANCING not in rb.states(name), "nothing was executed"
    assert rb.executor()["state"] == "NO_TASK_IN_PROGRESS"

    # Approved again: the new figures are checked, executed, and recorded as executed.
    rb.act(name, "approve")
    done = rb.wait_state(name, S.READY)
    checked = next(s for s in rb.history[name] if s.state == S.REBALANCING)
    assert "within 50% of the approved one" in (checked.message or ""), checked.message
    moved = [(s.num_replica_movements, s.data_to_move_mb) for s in (refused.summary, done.summary,
                                                                     done.executed_summary) if s is not None]
    assert moved == [moved[0]] * 3, "shown, approved and executed: the same proposal"


def test_cruise_control_restart_during_execution(rb: Rebalancing) -> None:
    rb.add_broker(21, "/dc2/r9")
    rb.create_topic("on-twenty-one", partitions=12, assignment=[[21, 1, 5]] * 12)
    rb.tune(min_execution_s=4)
    rb.request(name="restart-running", mode="remove-brokers", brokers=[21], auto_approve=True)
    rb.wait_for("restart-running", lambda s: s.progress is not None, "progress")
    rb.fault("cruise-control/restart", {"downSeconds": 0.3})
    done = rb.wait_state("restart-running", S.READY)
    assert rb.replicas_per_broker()[21] == 0
    messages = [s.message or "" for s in rb.history["restart-running"]]
    assert any("no longer knows task" in m for m in messages), messages
    assert done.condition("BrokersRemovable") is None or done.condition("BrokersRemovable").status == "True"
    rb.remove_broker(21)


def test_restart_of_both_during_execution_does_not_name_a_removed_broker_again(rb: Rebalancing) -> None:
    """Strimzi #10631: after a restart, remove_broker was re-issued for brokers already gone."""
    rb.add_broker(22, "/dc3/r9")
    rb.create_topic("on-twenty-two", partitions=12, assignment=[[22, 1, 3]] * 12)
    rb.tune(min_execution_s=3)
    rb.request(name="gone-broker", mode="remove-brokers", brokers=[22], auto_approve=True)
    rb.wait_for("gone-broker", lambda s: s.progress is not None, "progress")
    rb.stack.kill("rebalancer")  # kill -9
    rb.fault("cruise-control/restart", {"downSeconds": 0.3})
    deadline = time.monotonic() + 30
    while rb.replicas_per_broker()[22] and time.monotonic() < deadline:
        time.sleep(0.2)  # Kafka finishes the reassignments Cruise Control handed it
    rb.remove_broker(22)
    rb.stack.start_process("rebalancer")
    rb.stack.wait_http(rb.stack.health_url("rebalancer"), "rebalancer")
    done = rb.wait_state("gone-broker", S.READY)
    assert "no longer in the cluster" in (done.message or "")
    assert not [t for t in rb.tasks() if "brokerid=22" in t["RequestURL"]], "remove_broker named broker 22 again"


def test_invalid_requests_and_actions_go_to_the_dead_letter_topic(rb: Rebalancing) -> None:
    from events import TOPICS
    from services.common import busio

    raw = b'{"schema": "ballast.RebalanceRequest", "version": 1, "payload": {"name": "bad", "mode": "add-brokers"}}'
    busio.produce(rb.bus, [(TOPICS.rebalance_requests.name, b"bad", raw, None)])
    rb.act("never-requested", "approve")
    rb.wait("two dead letters", lambda: {"bad", "never-requested"} <= {d.record_key for d in rb.dead_letters})
    reasons = {d.record_key: d.reason for d in rb.dead_letters}
    assert "needs the list of brokers" in reasons["bad"]
    assert reasons["never-requested"] == "no rebalance named 'never-requested'"
    assert rb.stack.http.get(rb.stack.health_url("rebalancer")).status_code == 200
