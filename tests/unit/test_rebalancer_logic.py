from datetime import UTC, datetime, timedelta

import pytest
from pydantic import ValidationError

from events import conditions
from events import RebalanceAction, RebalanceRequest, RebalanceState, RebalanceStatus
from services.adapters.cruise_control.errors import (
    ClusterModelNotReady,
    ConnectionFailed,
    MalformedAnswer,
    OngoingExecution,
    RequestRejected,
    ServletFull,
)
from services.adapters.cruise_control.models import ExecutorState, OptimizationResult, UserTask
from events.rebalance import ProposalSummary
from services.domain import drift
from services.rebalancer import disks, execution, failed_disks, logic, proposals, scale_down, scaling
from services.rebalancer.logic import Step

S = RebalanceState
NOW = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)
RETRY = {"initial_s": 2.0, "max_s": 60.0}
ADD = RebalanceRequest(name="scale-up", mode="add-brokers", brokers=[7, 8])
REMOVE = RebalanceRequest(name="scale-down", mode="remove-brokers", brokers=[5, 6])


def status(state: S = S.NEW, request: RebalanceRequest = ADD, **fields) -> RebalanceStatus:
    return RebalanceStatus(name=request.name, state=state, request=request, updated_at=NOW, **fields)


def task(task_id: str, state: str, *, start_ms: int | None = None, url: str = "POST /add_broker",
         response: str | None = None) -> UserTask:
    start = start_ms if start_ms is not None else int((NOW - timedelta(seconds=10)).timestamp() * 1000)
    body = {"UserTaskId": task_id, "Status": state, "StartMs": str(start), "RequestURL": url}
    if response is not None:
        body["originalResponse"] = response
    return UserTask.model_validate(body)


def result(replica_moves: int = 12, leader_moves: int = 3) -> OptimizationResult:
    def brokers(counts: dict[int, int]) -> dict:
        return {"brokers": [{"Broker": b, "Replicas": n, "Leaders": n // 3, "DiskMB": n * 100.0}
                            for b, n in counts.items()]}

    return OptimizationResult.model_validate({
        "summary": {"numReplicaMovements": replica_moves, "numLeaderMovements": leader_moves, "dataToMoveMB": 1200,
                    "onDemandBalancednessScoreBefore": 71.5, "onDemandBalancednessScoreAfter": 98.0},
        "loadBeforeOptimization": brokers({1: 12, 2: 12, 7: 0}),
        "loadAfterOptimization": brokers({1: 8, 2: 8, 7: 8}),
    })


# -- every action in every state (Strimzi's table) --------------------------------------------------------------------

EXPECTED = {
    # (state, action): (next state, stopping)
    (S.PENDING_PROPOSAL, "stop"): (S.STOPPED, None),
    (S.PENDING_PROPOSAL, "refresh"): (S.NEW, None),
    (S.PROPOSAL_READY, "approve"): (S.REBALANCING, None),
    (S.PROPOSAL_READY, "refresh"): (S.NEW, None),
    (S.REBALANCING, "stop"): (S.REBALANCING, "stop"),
    (S.REBALANCING, "refresh"): (S.REBALANCING, "refresh"),
    (S.READY, "refresh"): (S.NEW, None),
    (S.NOT_READY, "refresh"): (S.NEW, None),
    (S.STOPPED, "refresh"): (S.NEW, None),
}


@pytest.mark.parametrize("state", list(S))
@pytest.mark.parametrize("action", ["approve", "refresh", "stop"])
def test_every_action_in_every_state(state: S, action: str) -> None:
    before = status(state, session_id="task-1" if state in (S.PENDING_PROPOSAL, S.REBALANCING) else None)
    after = logic.on_action(before, RebalanceAction(name=ADD.name, action=action), NOW)
    if (state, action) in EXPECTED:
        next_state, stopping = EXPECTED[(state, action)]
        assert (after.state, after.stopping) == (next_state, stopping)
        assert after.condition(conditions.INVALID_ACTION) is None
    else:
        assert after.state == state, "an invalid action leaves the state alone"
        warning = after.condition(conditions.INVALID_ACTION)
        assert warning is not None and f"'{action}' is not valid in state {state}" in (warning.message or "")


def test_a_valid_action_clears_an_earlier_warning() -> None:
    warned = logic.on_action(status(S.PROPOSAL_READY), RebalanceAction(name=ADD.name, action="stop"), NOW)
    assert warned.condition(conditions.INVALID_ACTION) is not None
    approved = logic.on_action(warned, RebalanceAction(name=ADD.name, action="approve"), NOW)
    assert approved.condition(conditions.INVALID_ACTION) is None
    assert approved.execution_reason and approved.session_id is None
    assert logic.next_step(approved, [], NOW) is Step.EXECUTE


def test_no_second_action_while_a_stop_is_under_way() -> None:
    stopping = logic.on_action(status(S.REBALANCING, session_id="t"), RebalanceAction(name=ADD.name, action="stop"),
                               NOW)
    again = logic.on_action(stopping, RebalanceAction(name=ADD.name, action="refresh"), NOW)
    assert again.stopping == "stop" and again.condition(conditions.INVALID_ACTION) is not None
    assert logic.next_step(stopping, [], NOW) is Step.STOP
    sent = execution.on_stop_sent(stopping, NOW)
    assert sent.state == S.STOPPING and logic.next_step(sent, [], NOW) is Step.POLL
    assert logic.VALID_ACTIONS[S.STOPPING] == frozenset(), "nothing to do but wait while it stops"
    idle = ExecutorState.model_validate({"state": "NO_TASK_IN_PROGRESS"})
    assert execution.on_poll(sent, task("t", "InExecution"), idle, NOW).state == S.STOPPED


def test_a_stop_waits_for_the_movements_in_flight_and_says_what_was_moved_and_left() -> None:
    """The real Cruise Control answers the stop at once and stays STOPPING_EXECUTION for up to 84 s."""
    running = status(S.REBALANCING, session_id="t", stopping="stop")
    sent = execution.on_stop_sent(running, NOW)
    assert sent.state == S.STOPPING and "lets those in flight finish" in (sent.message or "")
    stopping = ExecutorState.model_validate({
        "state": "STOPPING_EXECUTION", "triggeredUserTaskId": "t", "numTotalPartitionMovements": 76,
        "numFinishedPartitionMovements": 7, "totalDataToMove": 760, "finishedDataMovement": 70})
    still = execution.on_poll(sent, task("t", "InExecution"), stopping, NOW)
    assert still is not None and still.state == S.STOPPING and still.progress.finished_partition_movements == 7
    assert execution.on_poll(still, task("t", "InExecution"), stopping, NOW) is None, "no status without news"
    ended = stopping.model_copy(update={"state": "NO_TASK_IN_PROGRESS"})
    stopped = execution.on_poll(still, task("t", "CompletedWithError"), ended, NOW)
    assert stopped.state == S.STOPPED and stopped.session_id is None and stopped.stopping is None
    assert stopped.message == ("Stopped; by Cruise Control's last report, 7 of 76 partition movements made (70 of 760 "
                               "MB); the other 69 were not started. Movements already made stay")
    in_flight = stopped.progress.model_copy(update={"in_progress_partition_movements": 3})
    assert execution.stopped(still.model_copy(update={"progress": in_flight}), NOW).message.endswith(
        "7 of 76 partition movements made (70 of 760 MB) and 3 in flight, let finish; the other 66 were not started. "
        "Movements already made stay")
    # While stopping, the real one reports only what is in flight: the last figures stand.
    figureless = ExecutorState.model_validate({"state": "STOPPING_EXECUTION", "triggeredUserTaskId": "t",
                                               "numInProgressPartitionMovements": 0})
    assert execution.on_poll(still, task("t", "InExecution"), figureless, NOW) is None


def test_refresh_while_executing_stops_then_starts_over() -> None:
    refreshing = logic.on_action(status(S.REBALANCING, session_id="t"),
                                 RebalanceAction(name=ADD.name, action="refresh"), NOW)
    after = execution.stopped(execution.on_stop_sent(refreshing, NOW), NOW)
    assert after.state == S.NEW and after.session_id is None and after.stopping is None


# -- requests ---------------------------------------------------------------------------------------------------------

def test_same_request_changes_nothing_and_a_changed_one_starts_over() -> None:
    ready = status(S.PROPOSAL_READY)
    assert logic.on_request(ready, ADD, NOW) is None
    changed = ADD.model_copy(update={"brokers": [7, 8, 9]})
    fresh = logic.on_request(ready, changed, NOW)
    assert fresh is not None and fresh.state == S.NEW and fresh.request.brokers == [7, 8, 9]


def test_a_request_changed_while_executing_waits_for_a_refresh() -> None:
    running = status(S.REBALANCING, session_id="t")
    changed = ADD.model_copy(update={"replication_throttle": 1000})
    after = logic.on_request(running, changed, NOW)
    assert after is not None and after.state == S.REBALANCING and after.request == ADD
    assert after.pending_request == changed and after.condition(conditions.REQUEST_CHANGED) is not None
    assert logic.on_request(after, changed, NOW) is None
    refreshed = execution.stopped(logic.on_action(after, RebalanceAction(name=ADD.name, action="refresh"), NOW), NOW)
    assert refreshed.state == S.NEW and refreshed.request == changed


@pytest.mark.parametrize(("fields", "error"), [
    ({"mode": "add-brokers"}, "needs the list of brokers"),
    ({"mode": "remove-brokers", "brokers": []}, "needs the list of brokers"),
    ({"brokers": [1]}, "only for the add-brokers and remove-brokers modes"),
    ({"rebalance_disk": True, "goals": ["DiskCapacityGoal"]}, "takes no goals"),
    ({"mode": "add-brokers", "brokers": [1], "rebalance_disk": True}, "only for the full mode"),
    ({"excluded_topics": "("}, "not a valid regex"),
    ({"name": "Not_A_Name"}, "invalid rebalance name"),
])
def test_invalid_requests_say_why(fields: dict, error: str) -> None:
    with pytest.raises(ValidationError, match=error):
        RebalanceRequest.model_validate({"name": "r", **fields})


# -- proposals --------------------------------------------------------------------------------------------------------

def test_a_proposal_still_computing_keeps_its_task_id_and_a_ready_one_carries_summary_and_load() -> None:
    pending = proposals.begin_proposal(status(S.NEW), NOW)
    assert pending is not None and pending.state == S.PENDING_PROPOSAL
    computing = proposals.on_proposal(pending, "task-1", None, NOW)
    assert computing.state == S.PENDING_PROPOSAL and computing.session_id == "task-1"
    ready = proposals.on_proposal(computing, "task-1", result(), NOW)
    assert ready.state == S.PROPOSAL_READY and ready.session_id is None
    assert ready.summary is not None and ready.summary.num_replica_movements == 12
    assert ready.summary.data_to_move_mb == 1200 and ready.summary.on_demand_balancedness_score_after == 98.0
    load = {b.broker: (b.replicas_before, b.replicas_after) for b in ready.broker_load}
    assert load == {1: (12, 8), 2: (12, 8), 7: (0, 8)}
    assert ready.to_payload()["summary"]["dataToMoveMB"] == 1200


def test_an_empty_proposal_is_ready_at_once() -> None:
    ready = proposals.on_proposal(status(S.PENDING_PROPOSAL), "t", result(0, 0), NOW)
    assert ready.state == S.READY and "Nothing to move" in (ready.message or "")


@pytest.mark.parametrize("error", [
    ConnectionFailed("Connection failed: refused"),
    ServletFull("Cruise Control is at its active user task limit (servlet capacity)"),
    OngoingExecution("Another task is executing"),
])
def test_temporary_failures_keep_the_state_and_back_off(error) -> None:
    current = status(S.PENDING_PROPOSAL, session_id="t")
    delays = []
    for _ in range(7):
        current = logic.on_failure(current, error, NOW, **RETRY)
        assert current.state == S.PENDING_PROPOSAL and error.message in (current.message or "")
        delays.append((current.next_attempt_at - NOW).total_seconds())
    assert delays == [2, 4, 8, 16, 32, 60, 60]
    assert current.session_id is None, "a proposal task Cruise Control may have forgotten is asked for anew"
    assert logic.next_step(current, [], NOW) is None
    assert logic.next_step(current, [], NOW + timedelta(seconds=61)) is Step.PROPOSE


def test_a_warming_up_cruise_control_is_waited_for_at_a_steady_pace_and_said_once() -> None:
    warming = ClusterModelNotReady("Cruise Control is warming up (no valid metric window yet)")
    current = status(S.PENDING_PROPOSAL, session_id="t")
    assert not logic.quiet(current, warming), "said once"
    current = logic.on_failure(current, warming, NOW, **RETRY)
    assert current.state == S.PENDING_PROPOSAL and current.message.endswith("; waiting for it")
    assert (current.next_attempt_at - NOW).total_seconds() == 2 and current.attempts == 0
    again = ClusterModelNotReady("Cruise Control is warming up (its load monitor is loading, 40% loaded)")
    assert logic.quiet(current, again), "then waited for without a new status"
    assert logic.quiet(current, ServletFull("full")), "a full servlet says nothing about the rebalance"


def test_a_refused_request_is_not_ready_with_cruise_controls_reason() -> None:
    refused = RequestRejected("Request failed (500), Broker [42] does not exist.")
    after = logic.on_failure(status(S.PENDING_PROPOSAL), refused, NOW, **RETRY)
    assert after.state == S.NOT_READY and "Broker [42] does not exist." in (after.message or "")


def test_an_execution_keeps_its_reason_only_when_its_request_may_have_arrived() -> None:
    approved = logic.approve(status(S.PROPOSAL_READY), NOW)
    unanswered = logic.on_failure(approved, ConnectionFailed("Connection failed: timed out"), NOW, **RETRY)
    assert unanswered.state == S.REBALANCING and unanswered.execution_reason == approved.execution_reason
    refused = logic.on_failure(approved, OngoingExecution("Another task is executing"), NOW, **RETRY)
    assert refused.state == S.REBALANCING and refused.execution_reason not in (None, approved.execution_reason)
    unreadable = logic.on_failure(approved, MalformedAnswer("Cruise Control accepted the request but sent no "
                                                            "User-Task-ID header"), NOW, **RETRY)
    assert unreadable.state == S.REBALANCING and unreadable.execution_reason == approved.execution_reason


def test_a_proposal_that_cannot_be_read_is_not_ready_until_refreshed() -> None:
    after = logic.on_failure(status(S.PENDING_PROPOSAL), MalformedAnswer("unexpected answer from Cruise Control"),
                             NOW, **RETRY)
    assert after.state == S.NOT_READY and after.message == "unexpected answer from Cruise Control"


# -- execution --------------------------------------------------------------------------------------------------------

def test_progress_comes_from_the_executor_with_an_estimate() -> None:
    running = status(S.REBALANCING, session_id="t1")
    executor = ExecutorState.model_validate({
        "state": "INTER_BROKER_REPLICA_MOVEMENT_TASK_IN_PROGRESS", "triggeredUserTaskId": "t1",
        "numTotalPartitionMovements": 40, "numFinishedPartitionMovements": 10, "totalDataToMove": 4000,
        "finishedDataMovement": 1000})
    after = execution.on_poll(running, task("t1", "InExecution"), executor, NOW)
    assert after is not None and after.progress is not None
    assert after.progress.percent_data_moved == 25.0 and after.progress.finished_partition_movements == 10
    assert after.progress.estimated_seconds_to_completion == 30.0  # 1000 MB in 10 s, 3000 MB left
    assert execution.on_poll(after, task("t1", "InExecution"), executor, NOW) is None


def test_completion_and_failure_of_the_execution() -> None:
    running = status(S.REBALANCING, session_id="t1")
    assert execution.on_poll(running, task("t1", "Completed"), None, NOW).state == S.READY
    failed = execution.on_poll(running, task("t1", "CompletedWithError", response='{"errorMessage": "broker died"}'),
                           None, NOW)
    assert failed.state == S.NOT_READY and failed.message == "broker died"


def test_a_forgotten_execution_waits_for_a_busy_executor_then_runs_again() -> None:
    running = status(S.REBALANCING, session_id="t1")
    busy = ExecutorState.model_validate({"state": "INTER_BROKER_REPLICA_MOVEMENT_TASK_IN_PROGRESS"})
    waiting = execution.on_poll(running, None, busy, NOW)
    assert waiting is not None and waiting.session_id == "t1" and "still in progress" in (waiting.message or "")
    assert execution.on_poll(waiting, None, busy, NOW) is None
    idle = ExecutorState.model_validate({"state": "NO_TASK_IN_PROGRESS"})
    again = execution.on_poll(waiting, None, idle, NOW)
    assert again.state == S.REBALANCING and again.session_id is None and again.checking_approval
    assert again.condition(conditions.EXECUTION_INTERRUPTED) is not None
    assert "asking it for a new proposal for what is left" in again.message
    assert logic.next_step(again, [], NOW) is Step.CHECK


def _executed(data_mb: float, moves: int) -> dict:
    return {"summary": {"numReplicaMovements": moves, "dataToMoveMB": data_mb, "numLeaderMovements": 0}}


def _interrupted(**fields) -> RebalanceStatus:
    progress = {"executorState": "INTER_BROKER_REPLICA_MOVEMENT_TASK_IN_PROGRESS", "finishedDataMovementMB": 400,
                "totalDataToMoveMB": 1000, "finishedPartitionMovements": 4, "totalPartitionMovements": 10}
    running = status(S.REBALANCING, session_id="t1", request=ADD.model_copy(update=fields),
                     summary=proposals.summary_of(OptimizationResult.model_validate(_executed(1000, 10))),
                     progress=progress)
    return execution.on_poll(running, None, ExecutorState.model_validate({"state": "NO_TASK_IN_PROGRESS"}), NOW)


def test_after_a_restart_mid_execution_the_new_proposal_is_said_with_its_figures_and_executed() -> None:
    interrupted = _interrupted()
    fresh = OptimizationResult.model_validate(_executed(620, 6))
    go = proposals.on_check(interrupted, "t2", fresh, NOW, max_drift_percent=20.0)
    assert go.state == S.REBALANCING and go.execution_reason and not go.checking_approval
    assert go.message == ("Cruise Control restarted during the execution; its new proposal (620 MB to move, 6 "
                          "replica movements) replaced what was left of the interrupted one (600 MB to move, 6 replica "
                          "movements)")
    assert "remaining movements" not in go.message
    said = go.condition(conditions.EXECUTION_INTERRUPTED)
    assert said is not None and said.reason == logic.NEW_PROPOSAL_EXECUTED and said.message == go.message
    assert logic.next_step(go, [], NOW) is Step.EXECUTE
    # Said for as long as it executes (a poll's message does not replace it).
    running = go.model_copy(update={"session_id": "t2", "execution_reason": None})
    executor = ExecutorState.model_validate({"state": "INTER_BROKER_REPLICA_MOVEMENT_TASK_IN_PROGRESS",
                                             "triggeredUserTaskId": "t2", "numTotalPartitionMovements": 6,
                                             "numFinishedPartitionMovements": 1, "totalDataToMove": 620,
                                             "finishedDataMovement": 100})
    polled = execution.on_poll(running, task("t2", "InExecution"), executor, NOW)
    assert polled.message == go.message and polled.progress.finished_partition_movements == 1


def test_after_a_restart_a_new_proposal_past_the_drift_limit_waits_for_approval_again() -> None:
    bigger = OptimizationResult.model_validate(_executed(2000, 20))
    held = proposals.on_check(_interrupted(), "t2", bigger, NOW, max_drift_percent=20.0)
    assert held.state == S.PROPOSAL_READY and held.condition(conditions.PROPOSAL_CHANGED) is not None
    assert held.summary.data_to_move_mb == 2000 and "approve it to go on" in held.message
    auto = proposals.on_check(_interrupted(auto_approve=True), "t2", bigger, NOW, max_drift_percent=20.0)
    assert auto.state == S.REBALANCING, "an auto-approved rebalance goes on with Cruise Control's new proposal"
    done = proposals.on_check(_interrupted(), "t2", OptimizationResult.model_validate(_executed(0, 0)), NOW,
                          max_drift_percent=20.0)
    assert done.state == S.READY and "moves nothing more" in done.message


def test_executions_name_only_brokers_still_in_the_cluster() -> None:
    draining = status(S.REBALANCING, request=REMOVE)
    assert execution.execution_brokers(draining, [1, 2, 3, 4, 5]) == [5]
    assert execution.execution_brokers(draining, [1, 2, 3, 4]) == []


def test_an_execution_in_doubt_is_found_by_its_reason() -> None:
    approved = logic.approve(status(S.PROPOSAL_READY), NOW)
    tasks = [task("other", "Active", url="POST /rebalance?reason=x"),
             task("mine", "InExecution", url=f"POST /add_broker?dryrun=false&reason={approved.execution_reason}")]
    assert execution.find_execution(approved, tasks).user_task_id == "mine"
    assert execution.find_execution(approved, tasks[:1]) is None
    failed = task("failed", "CompletedWithError", url=f"POST /add_broker?reason={approved.execution_reason}")
    assert execution.find_execution(approved, [failed]) is None, "a failed request is made again, not adopted"


# -- safe scale-down --------------------------------------------------------------------------------------------------

def test_removable_only_while_the_brokers_host_nothing() -> None:
    ready = status(S.READY, request=REMOVE)
    safe = scale_down.removal_check(ready, scale_down.hosted_replicas({"a": [[1, 2], [2, 3]]}), NOW)
    assert safe is not None and safe.condition(conditions.BROKERS_REMOVABLE).status == "True"
    assert scale_down.removal_check(safe, {}, NOW) is None, "unchanged: nothing to publish"
    landed = scale_down.removal_check(safe, scale_down.hosted_replicas({"new-topic": [[6, 1], [6, 2]], "a": [[1, 2]]}), NOW)
    condition = landed.condition(conditions.BROKERS_REMOVABLE)
    assert condition.status == "False" and "broker 6 hosts 2 replica(s) of new-topic" in condition.message
    assert scale_down.removal_check(status(S.READY), {}, NOW) is None, "only remove-brokers rebalances"
    assert scale_down.removal_check(status(S.REBALANCING, request=REMOVE), {}, NOW) is None


# -- automatic rebalancing --------------------------------------------------------------------------------------------

def test_brokers_that_joined() -> None:
    assert scaling.joined(None, [3, 1, 2]) == ([], [1, 2, 3]), "the first look finds the cluster as it was"
    assert scaling.joined([1, 2, 3], [1, 2, 3, 4, 5]) == ([4, 5], [1, 2, 3, 4, 5])
    assert scaling.joined([1, 2, 3, 4], [1, 2, 3]) == ([], [1, 2, 3])
    assert scaling.joined([1, 2, 3], [1, 2, 3, 4]) == ([4], [1, 2, 3, 4]), "a broker that left and came back is new"


def test_scaling_requests_come_from_the_templates() -> None:
    up = scaling.scaling_request("up", [7, 8], {"replicationThrottle": 5000}, auto_approve=True)
    assert (up.name, up.mode, up.brokers, up.auto_approve, up.scaling) == (
        "auto-add-brokers-7-8", "add-brokers", [7, 8], True, "up")
    assert up.replication_throttle == 5000
    down = scaling.scaling_request("down", [9], {}, auto_approve=False)
    assert (down.name, down.mode, down.auto_approve) == ("auto-remove-brokers-9", "remove-brokers", False)


def test_scale_down_goes_first() -> None:
    up = status(S.PROPOSAL_READY, request=scaling.scaling_request("up", [7], {}, auto_approve=True))
    down = status(S.REBALANCING, request=scaling.scaling_request("down", [3], {}, auto_approve=True))
    held = logic.auto_approved(up, [down], NOW)
    assert held is not None and held.state == S.PROPOSAL_READY and "auto-remove-brokers-3" in held.message
    assert logic.auto_approved(held, [down], NOW) is None
    new_up = status(S.NEW, request=up.request)
    assert logic.next_step(new_up, [down], NOW) is None
    done = down.model_copy(update={"state": S.READY})
    assert logic.auto_approved(up, [done], NOW).state == S.REBALANCING
    assert logic.next_step(new_up, [done], NOW) is Step.PROPOSE
    manual = status(S.PROPOSAL_READY)
    assert logic.auto_approved(manual, [], NOW) is None, "only auto-approved requests execute by themselves"


def test_each_tick_moves_a_rebalance_by_a_request_or_only_a_status() -> None:
    now = datetime.now(UTC)
    scale_down = status(S.REBALANCING, REMOVE.model_copy(update={"scaling": "down"}), session_id="t1")
    up = ADD.model_copy(update={"scaling": "up", "auto_approve": True})
    waiting = logic.next_move(status(S.PROPOSAL_READY, up), [scale_down], now)
    assert waiting.step is None and waiting.status is not None and "scale-down" in (waiting.status.message or "")
    approved = logic.next_move(status(S.PROPOSAL_READY, up), [], now)
    assert approved.step is None and approved.status is not None and approved.status.state == S.REBALANCING
    held = logic.next_move(status(S.NEW, up), [scale_down], now)
    assert held.step is None and "Waiting for the scale-down rebalance" in (held.status.message or "")  # type: ignore[union-attr]
    assert logic.next_move(status(S.NEW, up), [], now) == logic.Move(step=logic.Step.PROPOSE)
    assert logic.next_move(scale_down, [], now) == logic.Move(step=logic.Step.POLL)


# -- disks ----------------------------------------------------------------------------------------------------------

DRAIN = RebalanceRequest.model_validate({"name": "drain", "mode": "remove-disks",
                                         "moveReplicasOffVolumes": [{"brokerId": 1, "volumeIds": [1]},
                                                                    {"brokerId": 2, "logDirs": ["/k/data-0"]}]})
DIRS = {1: ["/k/data-0", "/k/data-1"], 2: ["/k/data-0", "/k/data-1"]}


def test_remove_disks_requests_are_checked_where_they_are_written() -> None:
    for bad, why in (({"mode": "remove-disks"}, "needs moveReplicasOffVolumes"),
                     ({"mode": "remove-disks", "moveReplicasOffVolumes": [{"brokerId": 1}]}, "name the volumes"),
                     ({"moveReplicasOffVolumes": [{"brokerId": 1, "volumeIds": [0]}]}, "only for the remove-disks"),
                     ({"mode": "remove-disks", "goals": ["RackAwareGoal"],
                       "moveReplicasOffVolumes": [{"brokerId": 1, "volumeIds": [0]}]}, "takes no goals"),
                     ({"intraBrokerThrottle": 10}, "intraBrokerThrottle is for moves between disks")):
        with pytest.raises(ValidationError, match=why):
            RebalanceRequest.model_validate({"name": "x", **bad})
    assert RebalanceRequest.model_validate({"name": "x", "rebalanceDisk": True, "intraBrokerThrottle": 10})


def test_volumes_resolve_to_the_brokers_directories_by_strimzis_layout() -> None:
    resolved = disks.resolve_disk_removal(DRAIN, DIRS)
    assert [(d.broker, d.log_dirs) for d in resolved] == [(1, ["/k/data-1"]), (2, ["/k/data-0"])]
    for dirs, why in (({1: ["/k/data-0"], 2: DIRS[2]}, "volume 1 matches no log directories"),
                      ({2: DIRS[2]}, "broker 1 is not in the cluster"),
                      ({1: DIRS[1], 2: ["/k/data-0"]}, "broker 2 would have no log directory left")):
        with pytest.raises(ValueError, match=why):
            disks.resolve_disk_removal(DRAIN, dirs)


def test_drained_directories_are_those_of_executing_or_ready_unreleased_remove_disks_rebalances() -> None:
    removed = disks.resolve_disk_removal(DRAIN, DIRS)
    ready = status(S.READY, DRAIN, removed_log_dirs=removed)
    assert disks.drained_log_dirs([ready]) == {1: {"/k/data-1"}, 2: {"/k/data-0"}}
    assert disks.drained_log_dirs([status(S.PROPOSAL_READY, DRAIN, removed_log_dirs=removed)]) == {}
    released = logic.on_action(ready, RebalanceAction(name="drain", action="release"), NOW)
    assert released.released and "placement may use them again" in (released.message or "")
    assert disks.drained_log_dirs([released]) == {}
    # release on anything else is a warning, not a change
    other = logic.on_action(status(S.READY), RebalanceAction(name="add", action="release"), NOW)
    assert not other.released and other.condition(conditions.INVALID_ACTION) is not None


def test_disks_check_says_whether_the_removed_directories_are_empty() -> None:
    ready = status(S.READY, DRAIN, removed_log_dirs=disks.resolve_disk_removal(DRAIN, DIRS))
    busy = disks.disks_check(ready, {(1, "/k/data-1"): 2}, NOW)
    assert busy is not None and busy.condition(conditions.DISKS_EMPTY).status == "False"
    empty = disks.disks_check(busy, {}, NOW)
    assert empty is not None and empty.condition(conditions.DISKS_EMPTY).status == "True"
    assert disks.disks_check(empty, {}, NOW) is None


def test_the_intra_broker_throttle_goes_on_the_brokers_whose_disks_move() -> None:
    throttled = DRAIN.model_copy(update={"intra_broker_throttle": 1000})
    removed = disks.resolve_disk_removal(DRAIN, DIRS)
    assert disks.intra_throttle_brokers(status(S.REBALANCING, throttled, removed_log_dirs=removed), [1, 2, 3]) == [1, 2]
    disk = RebalanceRequest(name="disk", rebalance_disk=True, intra_broker_throttle=1000)
    assert disks.intra_throttle_brokers(status(S.REBALANCING, disk), [3, 1, 2]) == [1, 2, 3]
    assert disks.intra_throttle_brokers(status(S.REBALANCING, DRAIN, removed_log_dirs=removed), [1, 2]) == []


def test_progress_counts_moves_between_directories() -> None:
    task = UserTask.model_validate({"UserTaskId": "t", "RequestURL": "POST /remove_disks", "ClientIdentity": "x",
                                    "StartMs": str(int((NOW - timedelta(seconds=10)).timestamp() * 1000)),
                                    "Status": "InExecution"})
    executor = ExecutorState.model_validate({
        "state": "INTRA_BROKER_REPLICA_MOVEMENT_TASK_IN_PROGRESS", "triggeredUserTaskId": "t",
        "numTotalIntraBrokerPartitionMovements": 4, "numFinishedIntraBrokerPartitionMovements": 1,
        "totalIntraBrokerDataToMove": 400, "finishedIntraBrokerDataMovement": 100})
    progress = execution.progress_of(executor, status(S.REBALANCING, session_id="t"), NOW, task)
    assert progress is not None
    assert (progress.total_intra_broker_partition_movements, progress.finished_intra_broker_partition_movements) == (4, 1)
    assert progress.percent_data_moved == 25.0 and progress.estimated_seconds_to_completion == 30.0


def test_a_brokers_status_changes_only_when_its_directories_do() -> None:
    online = failed_disks.broker_status(1, [("/d1", None), ("/d0", None)], {}, None, NOW)
    assert online is not None and [d.path for d in online.log_dirs] == ["/d0", "/d1"]
    assert online.condition(conditions.LOG_DIRS_OFFLINE).status == "False"
    assert failed_disks.broker_status(1, [("/d0", None), ("/d1", None)], {}, online, NOW) is None
    failed = failed_disks.broker_status(1, [("/d0", None), ("/d1", "KAFKA_STORAGE_ERROR")], {"/d0": "drain"}, online, NOW)
    assert failed is not None and failed.condition(conditions.LOG_DIRS_OFFLINE).status == "True"
    assert "/d1 (KAFKA_STORAGE_ERROR)" in failed.condition(conditions.LOG_DIRS_OFFLINE).message
    assert failed.log_dirs[0].drained_by == "drain"


def test_a_cordon_changes_the_brokers_status_and_is_said_in_its_condition() -> None:
    """Issue 55: a cordon set by anyone (kafka-configs) is in the next BrokerStatus."""
    dirs = [("/d0", None), ("/d1", None)]
    plain = failed_disks.broker_status(1, dirs, {}, None, NOW)
    assert plain is not None and plain.condition(conditions.LOG_DIRS_CORDONED).status == "False"
    some = failed_disks.broker_status(1, dirs, {}, plain, NOW, cordoned={"/d1"})
    assert some is not None and [d.cordoned for d in some.log_dirs] == [False, True]
    said = some.condition(conditions.LOG_DIRS_CORDONED)
    assert (said.status, said.reason) == ("True", "SomeCordoned") and "/d1; they take no new replica" in said.message
    assert failed_disks.broker_status(1, dirs, {}, some, NOW, cordoned={"/d1"}) is None
    every = failed_disks.broker_status(1, dirs, {}, some, NOW, cordoned={"/d0", "/d1"})
    assert every is not None and every.condition(conditions.LOG_DIRS_CORDONED).reason == "AllCordoned"
    assert "the broker takes no new replica" in every.condition(conditions.LOG_DIRS_CORDONED).message


def test_the_remediation_is_one_auto_approved_fix_per_set_of_failed_disks() -> None:
    healthy = failed_disks.broker_status(1, [("/d0", None), ("/d1", None)], {}, None, NOW)
    assert failed_disks.fix_offline_request([healthy], {}) is None
    one = failed_disks.broker_status(1, [("/d0", None), ("/d1", "KAFKA_STORAGE_ERROR")], {}, None, NOW)
    two = failed_disks.broker_status(2, [("/d0", "KAFKA_STORAGE_ERROR"), ("/d1", None)], {}, None, NOW)
    first = failed_disks.fix_offline_request([one], {"replicationThrottle": 1000})
    assert first.mode == "fix-offline-replicas" and first.auto_approve and first.replication_throttle == 1000
    assert failed_disks.fix_offline_request([one], {}).name == first.name
    assert failed_disks.fix_offline_request([one, two], {}).name != first.name


def test_disk_drift_leaves_out_drained_and_failed_directories() -> None:
    usage = {1: {"/d0": 900.0, "/d1": 100.0, "/d2": 500.0}, 2: {"/d0": 10.0}}
    assert disks.disk_drift(usage, {}) == {1: (800.0, 1.6)}
    assert disks.disk_drift(usage, {1: {"/d1"}}) == {1: (400.0, 400.0 / 700.0)}


def test_an_automatic_disk_rebalance_waits_for_others_and_the_cooldown() -> None:
    drift = {1: (800.0, 1.6)}
    ask = dict(threshold=0.5, min_mb=100.0, cooldown_s=600.0, template={"intraBrokerThrottle": 5}, now=NOW)
    request = disks.disk_rebalance_request(drift, [], **ask)
    assert request is not None and request.rebalance_disk and not request.auto_approve
    assert request.intra_broker_throttle == 5
    assert disks.disk_rebalance_request({1: (50.0, 1.6)}, [], **ask) is None  # too few bytes to matter
    assert disks.disk_rebalance_request(drift, [status(S.REBALANCING)], **ask) is None
    recent = status(S.READY, request).model_copy(update={"updated_at": NOW - timedelta(seconds=60)})
    assert disks.disk_rebalance_request(drift, [recent], **ask) is None
    old = recent.model_copy(update={"updated_at": NOW - timedelta(hours=1)})
    assert disks.disk_rebalance_request(drift, [old], **ask) is not None


# -- an approval checked against the proposal Cruise Control would execute (issue 18, defect 10) -------------------

def proposed(data_mb: float, replica_moves: int = 12) -> OptimizationResult:
    body = result(replica_moves).model_dump(by_alias=True)
    body["summary"]["dataToMoveMB"] = data_mb
    return OptimizationResult.model_validate(body)


def shown(data_mb: float, replica_moves: int = 12) -> RebalanceStatus:
    return proposals.on_proposal(status(S.PENDING_PROPOSAL), "t0", proposed(data_mb, replica_moves), NOW)


def test_an_approval_with_a_drift_limit_asks_for_the_proposal_again_first() -> None:
    ready = shown(36_024)
    approved = logic.on_action(ready, RebalanceAction(name=ADD.name, action="approve"), NOW, max_drift_percent=10)
    assert approved.state == S.PROPOSAL_READY and approved.checking_approval and approved.session_id is None
    assert logic.next_move(approved, [], NOW) == logic.Move(step=Step.CHECK)
    computing = proposals.on_check(approved, "t1", None, NOW, max_drift_percent=10)
    assert computing.session_id == "t1" and computing.checking_approval, "a 202: the same task asked again"
    unlimited = logic.on_action(ready, RebalanceAction(name=ADD.name, action="approve"), NOW)
    assert unlimited.state == S.REBALANCING and not unlimited.checking_approval


def test_a_proposal_within_the_limit_executes() -> None:
    checking = logic.approve(shown(36_024), NOW, check=True)
    after = proposals.on_check(checking, "t1", proposed(38_000), NOW, max_drift_percent=10)
    assert after.state == S.REBALANCING and not after.checking_approval and after.execution_reason
    assert after.summary is not None and after.summary.data_to_move_mb == 36_024, "the approved figures stay shown"
    assert "within 10% of the approved one (data to move 36,024 -> 38,000 MB (+5.5%), replica movements 12 " \
           "(unchanged))" in (after.message or "")
    shrunk = proposals.on_check(checking, "t1", proposed(35_000), NOW, max_drift_percent=1)
    assert "(data to move 36,024 -> 35,000 MB (-2.8%), replica movements 12 (unchanged)): the same movements; the " \
           "partitions shrank since the proposal" in (shrunk.message or "")


def test_a_drifted_proposal_refuses_the_approval_and_shows_the_new_one() -> None:
    checking = logic.approve(shown(36_024), NOW, check=True)
    refused = proposals.on_check(checking, "t1", proposed(41_115), NOW, max_drift_percent=10)
    assert refused.state == S.PROPOSAL_READY and not refused.checking_approval and refused.session_id is None
    assert refused.summary is not None and refused.summary.data_to_move_mb == 41_115
    condition = refused.condition(conditions.PROPOSAL_CHANGED)
    assert condition is not None and condition.reason == "ProposalDrifted"
    assert refused.message == condition.message == (
        "Approval refused: the proposal drifted more than 10% from the approved one (data to move 36,024 -> "
        "41,115 MB (+14.1%), replica movements 12 (unchanged)): the same movements; the partitions grew since the "
        "proposal. The new proposal is shown; approve it, or refresh later.")
    assert logic.next_move(refused, [], NOW) == logic.Move(), "waits for the operator"
    again = logic.approve(refused, NOW, check=True)
    assert again.condition(conditions.PROPOSAL_CHANGED) is None
    other_moves = proposals.on_check(again, "t2", proposed(41_115, replica_moves=20), NOW, max_drift_percent=10)
    assert "Cruise Control's goals chose other movements" in (other_moves.message or "")


def test_a_check_that_finds_nothing_left_to_move_is_ready() -> None:
    checking = logic.approve(shown(36_024), NOW, check=True)
    done = proposals.on_check(checking, "t1", result(0, 0), NOW, max_drift_percent=10)
    assert done.state == S.READY and not done.checking_approval


def test_auto_approval_is_not_checked() -> None:
    auto = shown(100).model_copy(update={"request": ADD.model_copy(update={"auto_approve": True})})
    assert logic.auto_approved(auto, [], NOW).state == S.REBALANCING


def test_a_failing_check_retries_from_a_new_task_or_refuses() -> None:
    checking = logic.approve(shown(100), NOW, check=True).model_copy(update={"session_id": "t1"})
    retried = logic.on_failure(checking, ConnectionFailed("Connection failed: refused"), NOW, **RETRY)
    assert retried.state == S.PROPOSAL_READY and retried.checking_approval and retried.session_id is None
    assert logic.next_step(retried, [], NOW + timedelta(seconds=3)) is Step.CHECK
    refused = logic.on_failure(checking, RequestRejected("Broker [7] does not exist."), NOW, **RETRY)
    assert refused.state == S.NOT_READY and not refused.checking_approval


def test_the_executed_proposal_is_recorded_beside_the_approved_one_and_the_difference_explained() -> None:
    approved = logic.approve(shown(36_024), NOW)
    same = execution.on_execution_started(approved, "t2", NOW, proposed(36_024))
    assert same.message == "Executing the proposal" and same.executed_summary == same.summary
    grown = execution.on_execution_started(approved, "t2", NOW, proposed(41_115))
    assert grown.executed_summary is not None and grown.executed_summary.data_to_move_mb == 41_115
    assert grown.message == ("Executing the proposal Cruise Control computed again at execution, not quite the "
                             "approved one (data to move 36,024 -> 41,115 MB (+14.1%), replica movements 12 "
                             "(unchanged)): the same movements; the partitions grew since the proposal")
    # A 202 to the execution request: the figures come from the task's original response at the next poll.
    unknown = execution.on_execution_started(approved, "t2", NOW)
    assert unknown.executed_summary is None
    response = proposed(41_115).model_dump_json(by_alias=True)
    polled = execution.on_poll(unknown, task("t2", "InExecution", response=response), None, NOW)
    assert polled is not None and polled.executed_summary == grown.executed_summary
    assert polled.message == grown.message
    done = execution.on_poll(unknown, task("t2", "Completed", response=response), None, NOW)
    assert done.state == S.READY and done.executed_summary == grown.executed_summary


def test_a_request_may_set_its_own_drift_limit() -> None:
    strict = ADD.model_copy(update={"approval_max_drift_percent": 5.0})
    assert logic.drift_limit(strict, 20.0) == 5.0
    assert logic.drift_limit(ADD, 20.0) == 20.0 and logic.drift_limit(ADD, None) is None
    with pytest.raises(ValidationError):
        RebalanceRequest(name="x", approval_max_drift_percent=-1)


def test_the_drift_limit_setting_defaults_to_20_percent_and_null_turns_the_check_off(monkeypatch) -> None:
    from services.common.settings import Settings

    assert Settings().rebalancer.approval_max_drift_percent == 20.0
    monkeypatch.setenv("BALLAST_REBALANCER__APPROVAL_MAX_DRIFT_PERCENT", "null")
    assert Settings().rebalancer.approval_max_drift_percent is None


def test_a_proposal_without_the_load_before_it_shows_only_the_load_after() -> None:
    """The real Cruise Control's remove_disks answers no loadBeforeOptimization: nothing is made up for it."""
    import json
    from pathlib import Path

    from services.cli.views import broker_load_table

    recorded = Path(__file__).resolve().parents[3] / "shared" / "reference" / "cruise-control-real" / "responses"
    answer = json.loads((recorded / "remove_disks-dryrun-real.json").read_text())["body"]
    rows = proposals.broker_load_of(OptimizationResult.model_validate(answer))
    assert rows and all(r.replicas_before is None and r.disk_mb_before is None for r in rows)
    assert rows[1].replicas_after == 90
    table = broker_load_table(status(S.PROPOSAL_READY, broker_load=rows))
    assert list(table.columns[1].cells)[1] == "90", "after only, no invented 0 before it"
    with_before = proposals.broker_load_of(result())
    assert [(r.replicas_before, r.replicas_after) for r in with_before] == [(12, 8), (12, 8), (0, 8)]


def test_movements_between_directories_are_named_as_such() -> None:
    """Seen on the real Cruise Control: a remove-disks restarted mid-way was said to have "40 replica movements"."""
    intra = ProposalSummary(intra_broker_data_to_move_mb=157, num_intra_broker_replica_movements=40)
    assert drift.describe(intra) == "157 MB to move, 40 between directories"
    both = ProposalSummary(data_to_move_mb=10, num_replica_movements=2, num_intra_broker_replica_movements=3)
    assert drift.describe(both) == "10 MB to move, 2 replica movements, 3 between directories"
    assert drift.describe(ProposalSummary()) == "0 MB to move, 0 replica movements"


def test_release_is_possible_only_where_there_are_emptied_directories_to_release() -> None:
    """Issue 30, defect 6: `ballast rebalance stop` on a Ready full rebalance suggested `release`, which was then
    sent and ignored. The CLI and the rebalancer ask the same rule."""
    removed = disks.resolve_disk_removal(DRAIN, DIRS)
    assert logic.valid_actions(status(S.READY)) == {"refresh"}
    assert logic.valid_actions(status(S.READY, DRAIN, removed_log_dirs=removed)) == {"refresh", "release"}
    released = logic.on_action(status(S.READY, DRAIN, removed_log_dirs=removed),
                               RebalanceAction(name="drain", action="release"), NOW)
    assert logic.valid_actions(released) == {"refresh"}
    again = logic.on_action(released, RebalanceAction(name="drain", action="release"), NOW)
    assert again.condition(conditions.INVALID_ACTION).message == (
        "Action 'release' is not valid in state Ready (valid: refresh): its directories are released already; "
        "ignored.")
    full = logic.on_action(status(S.READY), RebalanceAction(name="add", action="release"), NOW)
    assert full.condition(conditions.INVALID_ACTION).message == (
        "Action 'release' is not valid in state Ready (valid: refresh): only a remove-disks rebalance that has "
        "emptied its directories has any to release; ignored.")
    stopping = status(S.REBALANCING).model_copy(update={"stopping": "stop"})
    assert logic.valid_actions(stopping) == frozenset()


def test_an_executing_rebalance_shows_the_throttles_in_force_and_loses_them_once_it_ends() -> None:
    from events import BrokerThrottle
    from services.rebalancer.statuses import with_throttles

    rates = [BrokerThrottle(broker=1, kind="inter-broker", bytes_per_s=3_000_000, owner="ballast")]
    executing = with_throttles(status(S.REBALANCING), rates)
    assert executing is not None and executing.throttles == rates
    assert with_throttles(executing, rates) is None  # already shown: nothing to publish
    ready = with_throttles(executing.model_copy(update={"state": S.READY}), rates)
    assert ready is not None and ready.throttles == []
    assert with_throttles(status(S.PROPOSAL_READY), rates) is None  # not executing: nothing to show
