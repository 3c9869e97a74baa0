import random
import string
from datetime import UTC, datetime, timedelta

import pytest

from events import ReplicasChangeBatch, ReplicasChangeCommand, ReplicasChangeRecord
from services.adapters.cruise_control.models import UserTask
from services.domain import replicas_change as contract
from services.replicas_change import logic
from services.replicas_change.logic import COMPLETED, ONGOING, PENDING, TaskOutcome

NOW = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)
RETRY = {"initial_s": 2.0, "max_s": 60.0}


def rec(topic: str, state=PENDING, target=2, **kw) -> ReplicasChangeRecord:
    return ReplicasChangeRecord(topic=topic, state=state, target_replicas=target, updated_at=NOW, **kw)


def task(task_id: str, status: str, url: str = "POST /kafkacruisecontrol/topic_configuration?json=true") -> UserTask:
    return UserTask.model_validate({"UserTaskId": task_id, "Status": status, "StartMs": "1", "RequestURL": url})


def by_topic(*records: ReplicasChangeRecord) -> dict[str, ReplicasChangeRecord]:
    return {r.topic: r for r in records}


@pytest.mark.parametrize(
    ("status", "outcome"),
    [(None, TaskOutcome.PENDING), ("Active", TaskOutcome.ONGOING), ("InExecution", TaskOutcome.ONGOING),
     ("Completed", TaskOutcome.COMPLETED), ("CompletedWithError", TaskOutcome.FAILED)],
)
def test_task_state_mapping(status: str | None, outcome: TaskOutcome) -> None:
    assert logic.task_outcome(task("t", status) if status else None) == outcome


def test_command_creates_pending_and_duplicates_are_ignored() -> None:
    command = ReplicasChangeCommand(topic="a", target_replicas=3, generation=4)
    first = contract.on_command(None, command, NOW, actual_rf=2)
    assert first is not None and first.state == PENDING and first.target_replicas == 3 and first.generation == 4
    assert contract.on_command(first, command, NOW, actual_rf=2) is None
    ongoing = first.model_copy(update={"state": ONGOING, "session_id": "s1"})
    assert contract.on_command(ongoing, command, NOW, actual_rf=2) is None


def test_command_while_ongoing_retargets_without_dropping_the_session() -> None:
    ongoing = rec("a", ONGOING, 3, session_id="s1")
    updated = contract.on_command(ongoing, ReplicasChangeCommand(topic="a", target_replicas=2), NOW, actual_rf=2)
    assert updated is not None
    assert (updated.state, updated.session_id, updated.target_replicas) == (ONGOING, "s1", 2)


def test_command_for_rf_already_in_place_completes() -> None:
    done = contract.on_command(None, ReplicasChangeCommand(topic="a", target_replicas=3), NOW, actual_rf=3)
    assert done is not None and done.state == COMPLETED


def test_batch_holds_while_one_of_our_tasks_executes() -> None:
    records = by_topic(rec("a"), rec("b", ONGOING, session_id="s"))
    assert logic.due_for_submission(records, NOW) == []
    records = by_topic(rec("a"), rec("b", COMPLETED), rec("c", next_attempt_at=NOW + timedelta(seconds=5)))
    assert [r.topic for r in logic.due_for_submission(records, NOW)] == ["a"]


def test_batch_waits_for_the_burst_to_go_quiet_but_not_beyond_the_window() -> None:
    quiet, window = timedelta(seconds=0.25), timedelta(seconds=1)

    def ready(*ages_s: float) -> bool:
        due = [rec(f"t{i}").model_copy(update={"updated_at": NOW - timedelta(seconds=age)})
               for i, age in enumerate(ages_s)]
        return logic.batch_ready(due, NOW, quiet=quiet, window=window)

    assert not ready()
    assert not ready(0.1)  # the burst may still be arriving
    assert ready(0.3)
    assert not ready(0.9, 0.1)  # newest arrived just now, oldest still within the window
    assert ready(1.0, 0.1)  # a steady trickle cannot hold the oldest change beyond the window
    # A retry counts from its retry time, not from when it was last updated.
    retry = rec("r", next_attempt_at=NOW - timedelta(seconds=0.1)).model_copy(
        update={"updated_at": NOW - timedelta(seconds=5)})
    assert not logic.batch_ready([retry], NOW, quiet=quiet, window=window)


def test_group_by_target() -> None:
    groups = logic.group_by_target([rec("x", target=3), rec("b", target=2), rec("a", target=2)])
    assert groups == {2: ["a", "b"], 3: ["x"]}


def test_submit_failure_backs_off_exponentially_with_cap() -> None:
    records = by_topic(rec("a"))
    delays = []
    for _ in range(8):
        (records["a"],) = logic.on_submit_failed(records, ["a"], "Cluster model not ready", NOW, **RETRY)
        delays.append((records["a"].next_attempt_at - NOW).total_seconds())
    assert delays == [2, 4, 8, 16, 32, 60, 60, 60]
    assert records["a"].state == PENDING and records["a"].message == "Cluster model not ready"


def test_missing_session_is_reset_even_when_other_tasks_are_returned() -> None:
    """Strimzi resets only on an empty list; a Cruise Control restart with a new task in the list must also count."""
    records = by_topic(rec("lost", ONGOING, 3, session_id="old"), rec("kept", ONGOING, 3, session_id="new"))
    changed = logic.on_poll(records, {"new": task("new", "InExecution")}, {"lost": 2, "kept": 2}, NOW, **RETRY)
    assert len(changed) == 1
    (lost,) = changed
    assert lost.topic == "lost" and lost.state == PENDING and lost.session_id is None
    assert "no longer knows task old" in lost.message


def test_missing_session_with_rf_already_reached_completes() -> None:
    records = by_topic(rec("a", ONGOING, 3, session_id="gone"))
    (done,) = logic.on_poll(records, {}, {"a": 3}, NOW, **RETRY)
    assert done.state == COMPLETED and done.session_id is None


def test_each_record_keeps_its_own_session() -> None:
    """Strimzi relabels all ongoing topics with one task's id; here two sessions progress independently."""
    records = by_topic(rec("a", ONGOING, 3, session_id="s1"), rec("b", ONGOING, 3, session_id="s2"))
    tasks = {"s1": task("s1", "Completed"), "s2": task("s2", "InExecution")}
    (a,) = logic.on_poll(records, tasks, {"a": 3, "b": 2}, NOW, **RETRY)
    assert a.topic == "a" and a.state == COMPLETED
    assert records["b"].session_id == "s2"


def test_failed_task_goes_back_to_pending_with_message_and_backoff() -> None:
    records = by_topic(rec("a", ONGOING, 3, session_id="s1"))
    (failed,) = logic.on_poll(records, {"s1": task("s1", "CompletedWithError")}, {"a": 2}, NOW, **RETRY)
    assert failed.state == PENDING and failed.message == "Replicas change completed with error"
    assert failed.attempts == 1 and failed.next_attempt_at == NOW + timedelta(seconds=2)


def test_completed_task_but_target_moved_on_is_resubmitted() -> None:
    records = by_topic(rec("a", ONGOING, 2, session_id="s1"))  # retargeted to 2 while the task for 3 ran
    (again,) = logic.on_poll(records, {"s1": task("s1", "Completed")}, {"a": 3}, NOW, **RETRY)
    assert again.state == PENDING and again.session_id is None


def test_pending_change_is_completed_when_spec_reverted_to_actual() -> None:
    records = by_topic(rec("a", PENDING, 3, message="Request failed (500), ...", attempts=2))
    (done,) = logic.on_poll(records, {}, {"a": 3}, NOW, **RETRY)
    assert done.state == COMPLETED and done.message is None


def test_deleted_topic_settles_change() -> None:
    records = by_topic(rec("a", ONGOING, 3, session_id="s"), rec("b", PENDING, 3))
    changed = logic.on_poll(records, {"s": task("s", "Completed")}, {"a": None, "b": None}, NOW, **RETRY)
    assert {r.topic: r.state for r in changed} == {"a": COMPLETED, "b": COMPLETED}
    assert all("no longer exists" in r.message for r in changed)


def test_in_doubt_submission_is_recovered_by_reason() -> None:
    records = by_topic(rec("a", batch_id="ballast-b1"), rec("b", batch_id="ballast-b2"))
    tasks = [task("t1", "InExecution", "POST /kafkacruisecontrol/topic_configuration?dryrun=false&reason=ballast-b1")]
    changed = {r.topic: r for r in logic.recover_in_doubt(records, tasks, NOW)}
    assert (changed["a"].state, changed["a"].session_id, changed["a"].batch_id) == (ONGOING, "t1", None)
    assert (changed["b"].state, changed["b"].session_id, changed["b"].batch_id) == (PENDING, None, None)


def test_an_open_batch_found_after_a_restart_puts_its_pending_changes_in_doubt() -> None:
    records = by_topic(rec("a"), rec("b", ONGOING, session_id="t0"), rec("c", COMPLETED), rec("elsewhere"))
    batch = ReplicasChangeBatch(batch_id="ballast-b1", topics=["a", "b", "c", "gone"])
    reopened = logic.reopen_batch(records, batch)
    assert [(r.topic, r.batch_id) for r in reopened] == [("a", "ballast-b1")]  # only pending ones can be in doubt
    assert logic.reopen_batch(records, batch.model_copy(update={"open": False})) == []
    tasks = [task("t1", "Active", "POST /kafkacruisecontrol/topic_configuration?dryrun=false&reason=ballast-b1")]
    (settled,) = logic.recover_in_doubt(by_topic(*reopened), tasks, NOW)
    assert (settled.topic, settled.state, settled.session_id) == ("a", ONGOING, "t1")


def test_in_doubt_record_is_not_resubmitted_until_settled() -> None:
    records = by_topic(rec("a", batch_id="ballast-b1"))
    assert logic.due_for_submission(records, NOW) == []


def test_poll_looks_at_the_cluster_only_where_needed() -> None:
    records = by_topic(rec("p", PENDING), rec("running", ONGOING, session_id="s1"), rec("ended", ONGOING, session_id="s2"),
                       rec("done", COMPLETED))
    tasks = {"s1": task("s1", "InExecution"), "s2": task("s2", "Completed")}
    assert logic.topics_to_check(records, tasks) == ["ended", "p"]


def test_poll_leaves_unchecked_topics_alone() -> None:
    records = by_topic(rec("running", ONGOING, session_id="s1"))
    assert logic.on_poll(records, {}, {}, NOW, **RETRY) == []


def test_pending_changes_behind_an_unreachable_ongoing_task_say_why_they_wait() -> None:
    records = by_topic(rec("a", ONGOING, session_id="s"), rec("b"))
    (waiting,) = logic.on_unreachable(records, "Connection failed: refused", NOW)
    assert waiting.topic == "b" and "Connection failed" in waiting.message and waiting.state == PENDING
    assert logic.on_unreachable(by_topic(rec("a", ONGOING, session_id="s"), waiting), "Connection failed: refused",
                                NOW) == []  # said once
    assert logic.on_unreachable(by_topic(rec("b")), "Connection failed", NOW) == []


def test_an_ended_task_no_longer_holds_the_next_batch_back() -> None:
    records = by_topic(rec("waiting"), rec("done-running", ONGOING, session_id="s1"),
                       rec("still-running", ONGOING, session_id="s2"))
    tasks = {"s1": task("s1", "Completed"), "s2": task("s2", "InExecution")}
    ended = logic.ended_sessions({"s1", "s2"}, tasks)
    assert ended == {"s1"}
    assert logic.due_for_submission(records, NOW, ended_sessions=ended) == []  # s2 still executes
    del records["still-running"]
    assert [r.topic for r in logic.due_for_submission(records, NOW, ended_sessions=ended)] == ["waiting"]
    assert logic.ended_sessions({"s9"}, tasks) == {"s9"}  # forgotten by Cruise Control: over as well


def test_a_task_submitted_after_the_poll_was_sent_is_not_taken_for_lost() -> None:
    # The poll asked about s1 only; "b" went to Cruise Control (as s2) while the answer was being handled.
    records = by_topic(rec("a", ONGOING, session_id="s1"), rec("b", ONGOING, session_id="s2"))
    tasks = {"s1": task("s1", "Completed")}
    assert logic.topics_to_check(records, tasks, asked={"s1"}) == ["a"]
    (done,) = logic.on_poll(records, tasks, {"a": 2, "b": 3}, NOW, asked={"s1"}, **RETRY)
    assert (done.topic, done.state) == ("a", COMPLETED)
    # Without ``asked`` every sessionId held counts as asked: s2 missing from the answer means it is gone.
    lost = {r.topic: r for r in logic.on_poll(records, tasks, {"a": 2, "b": 3}, NOW, **RETRY)}
    assert lost["b"].state == PENDING and "no longer knows task s2" in lost["b"].message


def test_changes_wait_behind_our_execution_only_while_one_runs_and_others_are_unsent() -> None:
    from events import ReplicasChangeRecord
    from services.replicas_change.logic import waiting_behind_our_execution

    ongoing = ReplicasChangeRecord(topic="a", state="ongoing", target_replicas=3, session_id="s")
    queued = ReplicasChangeRecord(topic="b", state="pending", target_replicas=3)
    sending = queued.model_copy(update={"batch_id": "batch-1"})
    assert waiting_behind_our_execution([ongoing, queued])
    assert not waiting_behind_our_execution([ongoing, sending]), "already on its way"
    assert not waiting_behind_our_execution([queued]), "nothing of ours executes"


def test_a_change_is_scoped_to_its_batch_unless_the_cluster_scope_is_asked_for() -> None:
    import re

    params = logic.optimization_params(["a.c", "b-1"], scope="batch", goals=[], rack_enabled=True)
    assert params["goals"] == ["RackAwareGoal"] and params["skip_hard_goal_check"] is True
    excluded = re.compile(params["excluded_topics"])
    assert not excluded.fullmatch("a.c") and not excluded.fullmatch("b-1"), "never excludes a batch member"
    assert all(excluded.fullmatch(t) for t in ("abc", "a.cc", "b-10", "__consumer_offsets", "ballast.topic.status"))
    assert logic.optimization_params(["a"], scope="batch", goals=[], rack_enabled=False)["goals"] == \
        ["ReplicaCapacityGoal"]
    assert logic.optimization_params(["a"], scope="batch", goals=["RackAwareDistributionGoal"],
                                     rack_enabled=True)["goals"] == ["RackAwareDistributionGoal"]
    assert logic.optimization_params(["a"], scope="cluster", goals=[], rack_enabled=True) == {}


def test_a_scoped_batch_keeps_within_the_url_cruise_control_accepts() -> None:
    from urllib.parse import quote

    unrelated = random.Random(7)
    names = [f"orders.{''.join(unrelated.choices(string.ascii_lowercase, k=8))}" for _ in range(1000)]
    records = [ReplicasChangeRecord(topic=name, state=PENDING, target_replicas=3, updated_at=NOW) for name in names]
    taken = logic.fit_in_one_request(records, url_bytes=6000)
    excluded = logic.optimization_params([r.topic for r in taken], scope="batch", goals=[],
                                         rack_enabled=True)["excluded_topics"]
    assert 100 < len(taken) < 1000 and len(quote(excluded, safe="")) <= 6000
    assert [r.topic for r in taken] == sorted(names)[:len(taken)], "the first names in order; the rest go next"
    assert len(logic.fit_in_one_request(records)) == 1000, "unscoped: only the bus record bounds a batch"


def test_names_of_one_scheme_go_in_one_scoped_request() -> None:
    records = [ReplicasChangeRecord(topic=f"orders.eu-west-{i:04d}", state=PENDING, target_replicas=3, updated_at=NOW)
               for i in range(0, 3000, 3)]
    assert len(logic.fit_in_one_request(records, url_bytes=6000)) == 1000
    assert logic.exclusion_url_bytes(r.topic for r in records) < 1000
