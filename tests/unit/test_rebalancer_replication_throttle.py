"""What Cruise Control's replication throttle of a rebalance may leave, and what Ballast removes of it: the rules of
services/rebalancer/replication_throttle.py, called directly."""

from __future__ import annotations

from datetime import UTC, datetime

from events import CruiseControlThrottle, RebalanceAction, RebalanceRequest, RebalanceState, RebalanceStatus
from events import ThrottledReplicas, conditions
from services.adapters.cruise_control.models import ExecutorState, OptimizationResult, UserTask
from services.rebalancer import execution, logic, replication_throttle as rt
from services.rebalancer.replication_throttle import FOLLOWER_ITEMS, FOLLOWER_RATE, LEADER_ITEMS, LEADER_RATE

S = RebalanceState
NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
RATE = 300_000
REQUEST = RebalanceRequest(name="even", replication_throttle=RATE, auto_approve=True)


def proposal(topic: str, partition: int, old: list[int], new: list[int]) -> dict:
    # As the real one writes it (shared/reference/cruise-control-real/responses/proposals-verbose-real.json).
    return {"topicPartition": {"hash": 1, "partition": partition, "topic": topic}, "oldLeader": old[0],
            "oldReplicas": old, "newReplicas": new}


def answer(*proposals: dict) -> OptimizationResult:
    return OptimizationResult.model_validate({
        "summary": {"numReplicaMovements": len(proposals), "numLeaderMovements": 0, "dataToMoveMB": 10},
        "proposals": list(proposals)})


MOVES = answer(proposal("orders", 0, [1, 2], [1, 3]), proposal("orders", 1, [2, 1], [3, 1]),
               proposal("audit", 4, [2, 4], [4, 3]))


def rebalancing(**fields) -> RebalanceStatus:
    return RebalanceStatus.model_validate({"name": "even", "state": S.REBALANCING, "request": REQUEST,
                                           "session_id": "t-1", "updated_at": NOW, **fields})


def recorded() -> CruiseControlThrottle:
    throttle = rt.recorded(rebalancing(), MOVES)
    assert throttle is not None
    return throttle


# -- what an execution throttles -------------------------------------------------------------------------------------

def test_an_executions_moves_say_where_cruise_control_puts_its_throttle() -> None:
    throttle = recorded()
    # ReplicationThrottleHelper: the rate on the old and new replicas' brokers; items for the old and added replicas.
    assert throttle.rates == [RATE] and throttle.brokers == [1, 2, 3, 4]
    assert {r.topic: r.items for r in throttle.replicas} == {"audit": "4:2,4:3,4:4",
                                                             "orders": "0:1,0:2,0:3,1:1,1:2,1:3"}


def test_nothing_is_recorded_without_a_throttle_or_without_the_moves() -> None:
    unthrottled = rebalancing().model_copy(update={"request": RebalanceRequest(name="even")})
    assert rt.recorded(unthrottled, MOVES) is None
    assert rt.recorded(rebalancing(), answer()) is None
    assert rt.recorded(rebalancing(), None) is None
    assert rt.throttle_of([{"topicPartition": "orders-0", "oldReplicas": [1], "newReplicas": [2]}], RATE) is None


def test_a_second_execution_adds_to_what_the_first_may_have_left() -> None:
    """After Cruise Control forgot an execution (a restart), its new proposal executes: both are recorded."""
    first = rebalancing(cruise_control_throttle=recorded())
    second = rt.recorded(first, answer(proposal("orders", 2, [4, 2], [4, 1])))
    assert second is not None and second.brokers == [1, 2, 3, 4]
    assert {r.topic: r.items for r in second.replicas}["orders"] == "0:1,0:2,0:3,1:1,1:2,1:3,2:1,2:2,2:4"
    refreshed = RebalanceRequest(name="even", replication_throttle=500_000)
    again = rt.recorded(first.model_copy(update={"request": refreshed}), answer(proposal("audit", 0, [1], [2])))
    assert again is not None and again.rates == [RATE, 500_000]


def test_a_status_records_at_most_a_bound_of_items_and_counts_the_topics_past_it() -> None:
    many = [proposal(f"t{i:02d}", p, [1, 2, 3], [4, 5, 6]) for i in range(40) for p in range(1000)]
    throttle = rt.throttle_of(many, RATE)
    assert throttle is not None
    kept = sum(len(r.items) for r in throttle.replicas)
    assert kept <= rt.MAX_RECORDED_CHARS and throttle.unrecorded_topics == 40 - len(throttle.replicas) > 0
    assert len(throttle.model_dump_json()) < 300_000, "the status stays one record on the bus"


def test_the_execution_answer_or_its_task_records_the_throttle() -> None:
    approved = rebalancing(session_id=None)
    started = execution.on_execution_started(approved, "t-1", NOW, MOVES)
    assert started.cruise_control_throttle == recorded()
    # 202: the proposal comes with the task, while it executes.
    waiting = execution.on_execution_started(approved, "t-1", NOW)
    assert waiting.cruise_control_throttle is None
    task = UserTask.model_validate({"UserTaskId": "t-1", "Status": "InExecution", "StartMs": "0",
                                    "RequestURL": "POST /rebalance", "originalResponse": MOVES.model_dump_json(
                                        by_alias=True)})
    executor = ExecutorState.model_validate({"state": "INTER_BROKER_REPLICA_MOVEMENT_TASK_IN_PROGRESS",
                                             "triggeredUserTaskId": "t-1"})
    polled = execution.on_poll(waiting, task, executor, NOW)
    assert polled is not None and polled.cruise_control_throttle == recorded()


def test_the_record_goes_with_a_stop_and_a_refresh() -> None:
    executing = rebalancing(cruise_control_throttle=recorded())
    stopping = logic.on_action(executing, RebalanceAction(name="even", action="stop"), NOW)
    stopped = execution.stopped(execution.on_stop_sent(stopping, NOW), NOW)
    assert stopped.state == S.STOPPED and stopped.cruise_control_throttle == recorded()
    refreshing = logic.on_action(executing, RebalanceAction(name="even", action="refresh"), NOW)
    renewed = execution.stopped(refreshing, NOW)
    assert renewed.state == S.NEW and renewed.cruise_control_throttle == recorded()
    again = logic.on_action(stopped, RebalanceAction(name="even", action="refresh"), NOW)
    assert again.state == S.NEW and again.cruise_control_throttle == recorded()
    changed = logic.on_request(stopped, RebalanceRequest(name="even", replication_throttle=1), NOW)
    assert changed is not None and changed.cruise_control_throttle == recorded()


# -- what is left, and what is removed -------------------------------------------------------------------------------

def test_only_what_that_execution_set_is_removed() -> None:
    brokers = {
        1: {LEADER_RATE: str(RATE), FOLLOWER_RATE: str(RATE)},  # left by Cruise Control
        2: {LEADER_RATE: "999", FOLLOWER_RATE: str(RATE)},  # an operator changed one since: that one stays
        3: {},  # taken off by Cruise Control already
        4: {LEADER_RATE: str(RATE), FOLLOWER_RATE: str(RATE)},  # the throttle controller's own, by its status
        5: {LEADER_RATE: str(RATE), FOLLOWER_RATE: str(RATE)},  # the same rate where none of its moves went
    }
    topics = {
        "orders": {LEADER_ITEMS: "0:1,0:2,0:3,5:1", FOLLOWER_ITEMS: "0:3,7:2"},  # 5:1 and 7:2 someone else's
        "audit": {LEADER_ITEMS: "*", FOLLOWER_ITEMS: "*"},  # every replica throttled by someone: left
    }
    removal = rt.removal(recorded(), brokers, topics, controller_brokers={4})
    assert removal.rates == {1: (LEADER_RATE, FOLLOWER_RATE), 2: (FOLLOWER_RATE,)}
    assert removal.items == {("orders", LEADER_ITEMS): ("0:1", "0:2", "0:3"), ("orders", FOLLOWER_ITEMS): ("0:3",)}
    assert removal.kept == {2: "999 B/s, someone else's", 4: "the throttle controller's"}


def test_a_broker_not_read_and_a_topic_gone_change_nothing() -> None:
    removal = rt.removal(recorded(), {}, {})
    assert removal.empty and not removal.kept


def test_it_waits_while_anything_may_still_use_the_same_throttle() -> None:
    throttle = recorded()
    assert rt.why_wait(throttle) is None
    assert rt.why_wait(throttle, executing=["other"]) == "rebalance other executes (its throttle may be the same)"
    assert rt.why_wait(throttle, moving={("orders", 1), ("orders", 9)}) == "Kafka still moves 1 of its partitions"
    assert rt.why_wait(throttle, moving={("orders", 9), ("audit", 0)}) is None, "not its partitions"
    assert rt.why_wait(throttle, executor_state="NO_TASK_IN_PROGRESS") is None
    assert "STOPPING_EXECUTION" in (rt.why_wait(throttle, executor_state="STOPPING_EXECUTION") or "")


def stopped(**fields) -> RebalanceStatus:
    return RebalanceStatus(name="even", state=S.STOPPED, request=REQUEST, updated_at=NOW,
                           message="Stopped; by Cruise Control's last report, ...", **fields)


def test_the_stopped_status_says_what_was_left_and_that_it_was_removed() -> None:
    removal = rt.Removal(rates={1: (LEADER_RATE, FOLLOWER_RATE), 3: (FOLLOWER_RATE,)},
                         items={("orders", LEADER_ITEMS): ("0:1", "0:2"), ("orders", FOLLOWER_ITEMS): ("0:2",)},
                         kept={2: "999 B/s, someone else's"})
    after = rt.cleaned(stopped(cruise_control_throttle=recorded()), removal, [], NOW)
    assert after.cruise_control_throttle is None
    condition = after.condition(conditions.REPLICATION_THROTTLE_LEFT)
    assert condition is not None and (condition.status, condition.reason) == ("False", rt.REMOVED)
    assert condition.message == ("Cruise Control's replication throttle of 300000 B/s was left (its rate on brokers "
                                 "1, 3; 2 throttled replicas of topic orders); Ballast removed it (kept: broker 2: "
                                 "999 B/s, someone else's)")
    assert after.message is not None and after.message.startswith("Stopped; by Cruise Control's last report")
    assert after.message.endswith(condition.message)


def test_a_stop_cruise_control_cleaned_up_after_says_so_and_a_completed_rebalance_says_nothing() -> None:
    after = rt.cleaned(stopped(cruise_control_throttle=recorded()), rt.Removal(), [], NOW)
    condition = after.condition(conditions.REPLICATION_THROTTLE_LEFT)
    assert condition is not None and (condition.status, condition.reason) == ("False", rt.TAKEN_OFF)
    assert after.cruise_control_throttle is None and "taken off by Cruise Control" in (after.message or "")
    ready = stopped(cruise_control_throttle=recorded()).model_copy(update={"state": S.READY,
                                                                           "message": "Rebalance complete"})
    done = rt.cleaned(ready, rt.Removal(), [], NOW)
    assert done.cruise_control_throttle is None and done.conditions == [] and done.message == "Rebalance complete"


def test_a_broker_that_is_down_keeps_its_part_until_it_is_back() -> None:
    removal = rt.Removal(rates={1: (LEADER_RATE,)}, items={("orders", LEADER_ITEMS): ("0:1",)})
    after = rt.cleaned(stopped(cruise_control_throttle=recorded()), removal, [3, 9], NOW)
    assert after.cruise_control_throttle is not None
    assert (after.cruise_control_throttle.brokers, after.cruise_control_throttle.replicas) == ([3], [])
    condition = after.condition(conditions.REPLICATION_THROTTLE_LEFT)
    assert condition is not None and (condition.status, condition.reason) == ("True", rt.WAITING)
    assert "broker 3 down: removed once back" in (condition.message or "")
    back = rt.cleaned(after, rt.Removal(), [3], NOW).condition(conditions.REPLICATION_THROTTLE_LEFT)
    assert back is not None and back.message == ("Cruise Control's replication throttle of 300000 B/s: none left "
                                                 "where it could be read (broker 3 down: removed once back)")


def test_what_is_left_and_why_it_waits_is_said_once() -> None:
    status = stopped(cruise_control_throttle=recorded())
    left = rt.Removal(rates={2: (LEADER_RATE, FOLLOWER_RATE)}, items={("orders", LEADER_ITEMS): ("1:2", "1:3")})
    said = rt.waiting(status, left, "Kafka still moves 1 of its partitions", NOW)
    assert said is not None and said.cruise_control_throttle == recorded()
    condition = said.condition(conditions.REPLICATION_THROTTLE_LEFT)
    assert condition is not None and (condition.status, condition.reason) == ("True", rt.WAITING)
    assert condition.message == ("Cruise Control's replication throttle of 300000 B/s was left (its rate on broker 2; "
                                 "2 throttled replicas of topic orders); removed once nothing may use it: Kafka "
                                 "still moves 1 of its partitions")
    assert said.message is not None and said.message.endswith(condition.message)
    assert rt.waiting(said, left, "Kafka still moves 1 of its partitions", NOW) is None


def test_unrecorded_topics_are_said_to_be_left() -> None:
    throttle = recorded().model_copy(update={"unrecorded_topics": 2})
    after = rt.cleaned(stopped(cruise_control_throttle=throttle), rt.Removal(rates={1: (LEADER_RATE,)}), [], NOW)
    assert "the items of 2 more topics were too many to record" in (after.message or "")


def test_on_a_cluster_without_throttles_there_is_nothing_to_do() -> None:
    after = rt.not_supported(stopped(cruise_control_throttle=recorded()), NOW)
    assert after.cruise_control_throttle is None and after.conditions == []


def test_a_record_of_throttled_replicas_is_kafkas_own_list() -> None:
    """Parsed back as Kafka writes the list: items in any order, spaces around them."""
    throttle = CruiseControlThrottle(rates=[RATE], brokers=[1],
                                     replicas=[ThrottledReplicas(topic="t", items=" 1:1, 0:1 ")])
    removal = rt.removal(throttle, {}, {"t": {LEADER_ITEMS: "0:1,1:1,2:1"}})
    assert removal.items == {("t", LEADER_ITEMS): ("0:1", "1:1")}
