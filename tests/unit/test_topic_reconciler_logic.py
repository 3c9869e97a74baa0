from datetime import UTC, datetime, timedelta

from events import BrokerForgotten, PlaceholderRecord, ReplicasChangeRecord, TopicSpec
from services.adapters.admin import BrokerInfo, PartitionInfo, TopicDescription
from services.placement.model import BrokerState
from services.topic_reconciler import logic
from services.topic_reconciler.observed import ObservedBrokers

NOW = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)


def desc(name: str, partitions: int = 3, rf: int = 3, config: dict | None = None) -> TopicDescription:
    return TopicDescription(name, tuple(PartitionInfo(i, tuple(range(1, rf + 1)), 1) for i in range(partitions)),
                            config or {})


def spec(name: str = "t", partitions: int = 3, replicas: int = 3, **config: str) -> TopicSpec:
    return TopicSpec(name=name, partitions=partitions, replicas=replicas,
                     config={k.replace("_", "."): v for k, v in config.items()})


def test_missing_topic_is_created_with_target_rf() -> None:
    plan = logic.plan(spec(replicas=2, retention_ms="1000"), None, None)
    assert plan.actions == [logic.CreateTopic("t", 3, 2, {"retention.ms": "1000"})]


def test_deleted_spec_deletes_topic() -> None:
    assert logic.plan(None, desc("t"), None).actions == [logic.DeleteTopic("t")]
    assert logic.plan(None, None, None).actions == []


def test_rf_difference_requests_a_change_once() -> None:
    assert logic.plan(spec(replicas=2), desc("t", rf=3), None).actions == [logic.RequestReplicasChange("t", 2)]
    in_flight = ReplicasChangeRecord(topic="t", state="ongoing", target_replicas=2, session_id="s")
    assert logic.plan(spec(replicas=2), desc("t", rf=3), in_flight).actions == []
    other_target = ReplicasChangeRecord(topic="t", state="pending", target_replicas=1)
    assert logic.plan(spec(replicas=2), desc("t", rf=3), other_target).actions == [logic.RequestReplicasChange("t", 2)]


def test_config_drift_and_partition_growth() -> None:
    plan = logic.plan(spec(partitions=6, retention_ms="5"), desc("t", 3, config={"retention.ms": "1"}), None)
    # The placer continues after the partitions the topic has, at the topic's RF.
    assert logic.CreatePartitions("t", 6, 3, ((1, 2, 3),) * 3) in plan.actions
    assert logic.AlterConfig("t", {"retention.ms": "5"}) in plan.actions


def test_the_specs_placer_travels_with_creation_and_growth() -> None:
    chosen = TopicSpec(name="t", partitions=4, replicas=3, placer="multi-level")
    assert logic.plan(chosen, None, None).actions == [logic.CreateTopic("t", 4, 3, {}, "multi-level")]
    grow = logic.plan(chosen, desc("t", 3), None).actions
    assert grow == [logic.CreatePartitions("t", 4, 3, ((1, 2, 3),) * 3, "multi-level")]


def test_partition_decrease_is_a_warning_not_an_action() -> None:
    plan = logic.plan(spec(partitions=2), desc("t", 3), None)
    assert plan.actions == []
    assert plan.warnings[0].type == "PartitionsDecreaseNotSupported"


def test_rf_below_min_isr_is_a_condition_and_the_topic_stays_ready() -> None:
    s = spec(replicas=1, min_insync_replicas="2")
    status = logic.build_status(name="t", spec=s, generation=4, actual=desc("t", rf=1), change=None, error=None,
                                warnings=[], previous=None, now=NOW)
    assert status.ready
    condition = status.condition("ReplicationFactorBelowMinInsyncReplicas")
    assert condition is not None and "min.insync.replicas 2" in condition.message
    assert status.observed_generation == 4


def test_status_carries_replicas_change() -> None:
    change = ReplicasChangeRecord(topic="t", state="ongoing", target_replicas=2, session_id="s1")
    status = logic.build_status(name="t", spec=spec(replicas=2), generation=1, actual=desc("t"), change=change,
                                error=None, warnings=[], previous=None, now=NOW)
    assert status.replicas_change is not None
    assert (status.replicas_change.state, status.replicas_change.session_id) == ("ongoing", "s1")
    assert status.replicas == 3


def test_transition_time_kept_while_condition_unchanged() -> None:
    first = logic.build_status(name="t", spec=spec(), generation=1, actual=desc("t"), change=None, error=None,
                               warnings=[], previous=None, now=NOW)
    again = logic.build_status(name="t", spec=spec(), generation=1, actual=desc("t"), change=None, error=None,
                               warnings=[], previous=first, now=NOW + timedelta(minutes=5))
    assert again.condition("Ready").last_transition_time == NOW
    assert logic.same_status(first, again)
    failing = logic.build_status(name="t", spec=spec(), generation=1, actual=desc("t"), change=None, error="boom",
                                 warnings=[], previous=first, now=NOW + timedelta(minutes=5))
    assert not failing.ready and not logic.same_status(first, failing)


def test_revert_to_actual_rf_tells_the_replicas_change_service() -> None:
    stuck = ReplicasChangeRecord(topic="t", state="pending", target_replicas=4, message="refused")
    assert logic.plan(spec(replicas=2), desc("t", rf=2), stuck).actions == [
        logic.RequestReplicasChange("t", 2, differs=False)]
    settled = ReplicasChangeRecord(topic="t", state="completed", target_replicas=4)
    assert logic.plan(spec(replicas=2), desc("t", rf=2), settled).actions == []


def test_placeholders_hold_the_rf_change_until_enough_brokers_are_alive() -> None:
    record = PlaceholderRecord(topic="t", replication_factor=3, assignment=[[1, 2, -1]] * 3)
    under = desc("t", 3, rf=2)
    waiting = logic.plan(spec(replicas=3), under, None, record, alive_brokers=2)
    assert waiting.actions == []  # Cruise Control would only refuse RF 3 on 2 brokers
    (condition,) = waiting.warnings
    assert condition.type == "UnderReplicated" and "3 placeholder replica(s) in 3 partition(s)" in condition.message
    # Enough brokers again and no way to move replicas directly: Cruise Control fills them.
    assert logic.plan(spec(replicas=3), under, None, record, alive_brokers=3).actions == [
        logic.RequestReplicasChange("t", 3)]
    assert logic.placeholders_filled(record, desc("t", 3, rf=3), spec(replicas=3))
    assert not logic.placeholders_filled(record, under, spec(replicas=3))
    # The spec moved on to RF 2: nothing waits any more.
    assert logic.placeholders_filled(record, under, spec(replicas=2))


def test_placeholders_filled_without_ballast_name_the_brokers_that_took_them() -> None:
    record = PlaceholderRecord(topic="t", replication_factor=3, assignment=[[1, 2, -1], [2, -1, -2], [3, 1, 2]])

    def actual(*partitions: tuple[int, ...]) -> TopicDescription:
        return TopicDescription("t", tuple(PartitionInfo(i, r, r[0]) for i, r in enumerate(partitions)))

    # Cruise Control's RF change: a new broker where each placeholder was, none in a partition that had none.
    assert logic.filled_without_ballast(record, actual((1, 2, 4), (2, 3, 4), (3, 1, 2))) == {0: [4], 1: [3, 4]}
    # Still waiting, or moved elsewhere meanwhile: never more brokers than the partition had placeholders.
    assert logic.filled_without_ballast(record, actual((1, 2), (2, 5, 3), (3, 1, 2))) == {1: [5, 3]}
    assert logic.filled_without_ballast(record, actual((4, 5, 6), (2, 3, 4), (3, 1, 2))) == {0: [4], 1: [3, 4]}
    # Partitions the topic no longer has count none.
    assert logic.filled_without_ballast(record, actual((1, 2, 4),)) == {0: [4]}


def test_a_partition_short_of_its_replicas_holds_the_placeholders_open_while_the_spec_wants_them() -> None:
    record = PlaceholderRecord(topic="t", replication_factor=3, assignment=[[1, 2, -1]] * 3)
    half_done = TopicDescription("t", tuple(PartitionInfo(i, r, 1) for i, r in enumerate(
        [(1, 2, 3), (1, 2, 3), (1, 2)])))  # most partitions have 3: the topic's RF reads 3
    assert half_done.replication_factor == 3
    assert not logic.placeholders_filled(record, half_done, spec(replicas=3))
    assert logic.filled_without_ballast(record, half_done) == {0: [3], 1: [3]}
    assert logic.placeholders_filled(record, half_done, spec(replicas=2))  # the spec moved on
    assert logic.placeholders_filled(record, desc("t", 3, rf=3), spec(replicas=3))


def test_observed_registry_keeps_offline_brokers_until_forgotten() -> None:
    registry = ObservedBrokers()
    news = registry.observe([BrokerInfo(1, "/dc1/r1"), BrokerInfo(2, "/dc2/r1")])
    assert [b.id for b in news] == [1, 2]
    assert registry.observe([BrokerInfo(1, "/dc1/r1")]) == []  # nothing new: nothing to publish
    # Broker 2 is no longer described (a real Kafka lists only live brokers): placement sees it offline.
    brokers = registry.cluster_brokers([BrokerInfo(1, "/dc1/r1")])
    assert [(b.id, b.state) for b in brokers] == [(1, BrokerState.ALIVE), (2, BrokerState.OFFLINE)]
    moved = registry.observe([BrokerInfo(2, "/dc3/r1")])
    assert moved[0].rack == "/dc3/r1" and moved[0].first_seen == news[1].first_seen
    registry.apply(BrokerForgotten(id=2))
    assert [b.id for b in registry.cluster_brokers([BrokerInfo(1, "/dc1/r1")])] == [1]


def test_a_forgotten_broker_comes_back_only_when_two_looks_in_a_row_begun_after_the_forget_show_it() -> None:
    registry = ObservedBrokers()
    one, two = BrokerInfo(1, "/dc1/r1"), BrokerInfo(2, "/dc2/r1")
    registry.observe([one, two])
    asked_before = registry.look_begins()
    registry.apply(BrokerForgotten(id=2))
    # The answer to a look asked before the forget, then a broker whose metadata still lists it: not back.
    assert registry.observe([one, two], asked_before) == []
    assert registry.observe([one, two]) == []
    assert registry.observe([one]) == []
    assert registry.observe([one, two]) == []  # one look, then the next must show it too
    assert 2 not in {b.id for b in registry.cluster_brokers([one])}
    [back] = registry.observe([one, two])  # it really came back
    assert back.id == 2 and 2 in {b.id for b in registry.cluster_brokers([one])}


def test_a_requested_change_shows_pending_at_once_unless_the_replicas_change_service_decides() -> None:
    done = ReplicasChangeRecord(topic="t", state="completed", target_replicas=3)
    expected = logic.expected_change(done, logic.RequestReplicasChange("t", 2), 7, NOW)
    assert expected is not None
    assert (expected.state, expected.target_replicas, expected.generation, expected.session_id) == ("pending", 2, 7,
                                                                                                     None)
    status = logic.build_status(name="t", spec=spec(replicas=2), generation=7, actual=desc("t"), change=expected,
                                error=None, warnings=[], previous=None, now=NOW)
    assert status.replicas_change is not None and status.replicas_change.state == "pending"
    # Cruise Control executes an earlier target: the service retargets that task, and says so itself.
    running = ReplicasChangeRecord(topic="t", state="ongoing", target_replicas=4, session_id="s")
    assert logic.expected_change(running, logic.RequestReplicasChange("t", 2), 7, NOW) is None
    # A revert is settled by the service (completed at once, or followed up after the task).
    assert logic.expected_change(None, logic.RequestReplicasChange("t", 2, differs=False), 7, NOW) is None


def test_gone_message_of_a_completed_change_is_not_shown_once_the_topic_exists_again() -> None:
    from datetime import UTC, datetime

    from events import ReplicasChangeRecord, TopicSpec
    from services.adapters.admin import PartitionInfo, TopicDescription
    from services.topic_reconciler import logic as rules

    gone = ReplicasChangeRecord(topic="t", state="completed", target_replicas=3,
                                message="Topic no longer exists; nothing left to change")
    actual = TopicDescription(name="t", partitions=(PartitionInfo(id=0, replicas=(1, 2)),))
    now = datetime.now(UTC)
    spec = TopicSpec(name="t", partitions=1, replicas=2)
    back = rules.build_status(name="t", spec=spec, generation=2, actual=actual, change=gone, error=None, warnings=[],
                              previous=None, now=now)
    assert back.replicas_change is not None and back.replicas_change.message is None
    missing = rules.build_status(name="t", spec=spec, generation=2, actual=None, change=gone, error=None, warnings=[],
                                 previous=None, now=now)
    assert missing.replicas_change is not None and "no longer exists" in (missing.replicas_change.message or "")


def test_withdrawing_the_spec_deletes_only_what_ballast_created_or_adopted() -> None:
    from services.adapters.admin import PartitionInfo, TopicDescription
    from services.topic_reconciler import logic as rules

    actual = TopicDescription(name="t", partitions=(PartitionInfo(id=0, replicas=(1, 2)),))
    assert [type(a).__name__ for a in rules.plan(None, actual, None, origin="created").actions] == ["DeleteTopic"]
    assert [type(a).__name__ for a in rules.plan(None, actual, None, origin="adopted").actions] == ["DeleteTopic"]
    assert rules.plan(None, actual, None, origin=None).actions == []


def test_a_spec_adopts_an_existing_topic_only_when_it_says_so() -> None:
    from events import TopicSpec
    from services.adapters.admin import PartitionInfo, TopicDescription
    from services.topic_reconciler import logic as rules

    actual = TopicDescription(name="t", partitions=(PartitionInfo(id=0, replicas=(1, 2)),))
    assert rules.origin_now(None, TopicSpec(name="t", partitions=1, replicas=2), actual) is None
    assert rules.origin_now(None, TopicSpec(name="t", partitions=1, replicas=2, adopt=True), actual) == "adopted"
    assert rules.origin_now("created", None, None) is None  # gone: a later topic of that name is not ours


def test_an_rf_above_the_alive_brokers_is_held_with_a_condition() -> None:
    from events import TopicSpec
    from services.adapters.admin import PartitionInfo, TopicDescription
    from services.topic_reconciler import logic as rules

    actual = TopicDescription(name="t", partitions=(PartitionInfo(id=0, replicas=(1, 2)),))
    held = rules.plan(TopicSpec(name="t", partitions=1, replicas=7), actual, None, alive_brokers=6)
    assert held.actions == [] and held.warnings[0].type == "ReplicasChangeBlocked"
    sent = rules.plan(TopicSpec(name="t", partitions=1, replicas=6), actual, None, alive_brokers=6)
    assert [type(a).__name__ for a in sent.actions] == ["RequestReplicasChange"]


def test_the_status_predicts_the_change_with_the_replicas_change_services_own_rule() -> None:
    from datetime import UTC, datetime

    from events import ReplicasChangeCommand, ReplicasChangeRecord
    from services.domain.replicas_change import on_command
    from services.topic_reconciler import logic as rules

    now = datetime.now(UTC)
    request = rules.RequestReplicasChange("t", 3)
    for current in (None,
                    ReplicasChangeRecord(topic="t", state="completed", target_replicas=2, generation=1),
                    ReplicasChangeRecord(topic="t", state="pending", target_replicas=3, generation=1),
                    ReplicasChangeRecord(topic="t", state="pending", target_replicas=4, generation=1)):
        predicted = rules.expected_change(current, request, 5, now)
        recorded = on_command(current, ReplicasChangeCommand(topic="t", target_replicas=3, generation=5), now, None)
        assert predicted == recorded, current


def test_a_topic_whose_partitions_are_moving_is_neither_drifted_nor_changed() -> None:
    """A rebalance (or another tool) moving a topic lists old and new replicas together: RF 4 in the middle of a
    move of an RF 3 topic is not a change made outside Ballast, and no RF change is asked for until it ends."""
    mid_move = desc("t", rf=4, config={"retention.ms": "1"})
    wanted = spec(replicas=3, retention_ms="1")
    plan = logic.plan(wanted, mid_move, None, applied=True, moving=3)
    assert plan.drift is None and plan.actions == []
    (held,) = plan.warnings
    assert held.type == "PartitionsMoving" and held.reason == "Reassigning"
    assert held.message == ("3 of 3 partition(s) are being reassigned, which lists old and new replicas together "
                            "(4 now): the replication factor is compared with the spec (3) once the move ends")
    # Not applied yet (a new generation during the move): no change asked for either.
    assert logic.plan(wanted, mid_move, None, moving=1).actions == []
    # The config is still set back meanwhile: only the replica count says nothing.
    plan = logic.plan(spec(replicas=3, retention_ms="2"), mid_move, None, applied=True, moving=3)
    assert plan.actions == [logic.AlterConfig("t", {"retention.ms": "2"})] and plan.drift_kinds == ("config",)
    # Once the move ends, the same difference is drift, once seen at two looks: a move that ended between the
    # description and the list of reassignments shows old and new replicas with nothing in flight, for a moment.
    assert logic.differing_count(wanted, mid_move, 0) == (4, 3) and logic.differing_count(wanted, mid_move, 3) is None
    first = logic.plan(wanted, mid_move, None, applied=True, count_seen_before=False)
    assert first.drift is None and first.actions == [] and first.warnings == []
    assert logic.plan(wanted, mid_move, None, applied=True).drift_kinds == ("replicas",)
    # A move that keeps the count the spec's says nothing at all.
    assert logic.plan(wanted, desc("t", rf=3, config={"retention.ms": "1"}), None, applied=True, moving=3).warnings == []
    # Ballast's own change in flight is followed as before: its record says what the move is for.
    running = ReplicasChangeRecord(topic="t", state="ongoing", target_replicas=3, session_id="s")
    assert logic.plan(wanted, mid_move, running, applied=True, moving=3).warnings == []
    reverted = ReplicasChangeRecord(topic="t", state="ongoing", target_replicas=4, session_id="s")
    assert logic.plan(wanted, mid_move, reverted, applied=True, moving=3).actions == [
        logic.RequestReplicasChange("t", 3)]
    # Only topics whose count differs from their spec's are asked about.
    assert logic.replicas_in_question(wanted, mid_move) and not logic.replicas_in_question(wanted, desc("t"))
    assert not logic.replicas_in_question(None, mid_move) and not logic.replicas_in_question(wanted, None)


def test_a_refused_topic_waits_out_the_backoff_unless_its_spec_or_the_plan_changes() -> None:
    from services.topic_reconciler import refusals

    alter = logic.AlterConfig("t", {"min.cleanable.dirty.ratio": "2"})
    first = refusals.refused(None, [alter], "AlterConfig failed: Invalid value 2", 5, NOW, initial_s=30, max_s=100)
    assert (first.attempts, first.next_attempt_at) == (1, NOW + timedelta(seconds=30))
    assert first.message == ("AlterConfig failed: Invalid value 2 (refused: tried again after 2026-11-22T12:00:30Z, "
                             "or at once when the spec changes)")
    assert refusals.may_act(None, 5, [alter], NOW)
    assert not refusals.may_act(first, 5, [alter], NOW + timedelta(seconds=10)), "the next resync leaves it"
    assert refusals.may_act(first, 5, [alter], NOW + timedelta(seconds=30)), "the backoff has passed"
    assert refusals.may_act(first, 6, [alter], NOW + timedelta(seconds=1)), "a new spec is acted on at once"
    # The cluster changed under the refusal (the topic deleted meanwhile): what is planned now was not refused.
    assert refusals.may_act(first, 5, [logic.CreateTopic("t", 3, 3, {})], NOW + timedelta(seconds=1))
    assert refusals.may_act(first, 5, [], NOW + timedelta(seconds=1))
    # Refused again: twice the wait, up to the cap; a new generation's first refusal starts over.
    later = NOW + timedelta(seconds=30)
    second = refusals.refused(first, [alter], "AlterConfig failed: Invalid value 2", 5, later, initial_s=30, max_s=100)
    assert (second.attempts, second.next_attempt_at) == (2, later + timedelta(seconds=60))
    third = refusals.refused(second, [alter], "x", 5, later, initial_s=30, max_s=100)
    assert third.next_attempt_at == later + timedelta(seconds=100)
    assert refusals.refused(third, [alter], "x", 6, later, initial_s=30, max_s=100).attempts == 1


def test_a_temporary_failure_says_it_is_tried_again_at_the_next_resync() -> None:
    from services.topic_reconciler import refusals

    assert refusals.temporary("CreateTopic failed: cluster admin unreachable: ConnectError") == (
        "CreateTopic failed: cluster admin unreachable: ConnectError (temporary: tried again at the next resync)")


def test_a_withdrawn_spec_whose_topic_never_existed_says_so() -> None:
    """Issue 30, defect 10: it said "topic removed" (and the CLI "topic retained") of a topic that never was."""
    status = logic.build_status(name="t", spec=None, generation=2, actual=None, change=None, error=None,
                                warnings=[], previous=None, now=NOW)
    assert status.deleted and status.partitions is None
    assert status.condition("Ready").message == "spec deleted; the topic is not in the cluster"


def test_a_paused_or_unmanaged_spec_changes_nothing_and_says_so() -> None:
    from events import conditions

    drifted = desc("t", partitions=3, rf=2, config={"retention.ms": "1"})
    paused = spec(partitions=6, replicas=3, retention_ms="5").model_copy(update={"paused": True})
    plan = logic.plan(paused, drifted, None, applied=True)
    assert plan.actions == [] and [c.type for c in plan.warnings] == [conditions.RECONCILIATION_PAUSED]
    assert logic.plan(paused, None, None).actions == []  # not even created
    status = logic.build_status(name="t", spec=paused, generation=3, actual=None, change=None, error=None,
                                warnings=plan.warnings, previous=None, now=NOW)
    assert not status.ready and status.condition(conditions.READY).reason == "Paused"
    assert "not created: reconciliation paused" in status.condition(conditions.READY).message
    # Resumed (a new spec, paused false): the next plan does all of it.
    resumed = paused.model_copy(update={"paused": False})
    assert len(logic.plan(resumed, drifted, None).actions) == 3

    let_go = paused.model_copy(update={"paused": False, "managed": False})
    plan = logic.plan(let_go, drifted, None, applied=True)
    assert plan.actions == [] and [c.type for c in plan.warnings] == [conditions.UNMANAGED]
    # Let go of: even a topic Ballast created stays when the spec is withdrawn.
    assert logic.origin_now("created", let_go, drifted) is None
    assert logic.plan(None, drifted, None, origin=None).actions == []


def test_what_differs_from_an_applied_spec_is_drift_corrected_or_reported() -> None:
    from events import TopicStatus, conditions

    wanted = spec(replicas=3, retention_ms="604800000")
    changed_by_hand = desc("t", rf=3, config={"retention.ms": "1000"})
    # Not applied yet (a new spec): a plain change, not drift.
    plan = logic.plan(wanted, changed_by_hand, None, applied=False)
    assert plan.drift is None and plan.actions == [logic.AlterConfig("t", {"retention.ms": "604800000"})]
    # Applied: the same difference is drift, set back and said.
    plan = logic.plan(wanted, changed_by_hand, None, applied=True)
    assert plan.actions == [logic.AlterConfig("t", {"retention.ms": "604800000"})] and plan.drift_kinds == ("config",)
    assert plan.drift is not None and plan.drift in plan.warnings and plan.drift.reason == "Corrected"
    assert plan.drift.message == ("changed outside Ballast: retention.ms=1000 (spec 604800000); set back to the spec")
    # Reported only: nothing is done.
    plan = logic.plan(wanted, changed_by_hand, None, applied=True, drift_mode="report")
    assert plan.actions == [] and plan.drift is not None and plan.drift.reason == "Reported"
    assert plan.drift.message.endswith("left as it is (drift: report)")
    # The spec's own choice wins over the setting, either way.
    reporting = wanted.model_copy(update={"drift": "report"})
    assert logic.plan(reporting, changed_by_hand, None, applied=True).actions == []
    correcting = wanted.model_copy(update={"drift": "correct"})
    assert logic.plan(correcting, changed_by_hand, None, applied=True, drift_mode="report").actions != []

    # The RF: drift only when no change of Ballast's explains it.
    shrunk = desc("t", rf=2)
    plan = logic.plan(spec(replicas=3), shrunk, None, applied=True)
    assert plan.drift_kinds == ("replicas",) and plan.actions == [logic.RequestReplicasChange("t", 3)]
    assert "replication factor 2 (spec 3)" in (plan.drift.message or "")
    done = ReplicasChangeRecord(topic="t", state="completed", target_replicas=3)
    assert logic.plan(spec(replicas=3), shrunk, done, applied=True).drift_kinds == ("replicas",)
    running = ReplicasChangeRecord(topic="t", state="ongoing", target_replicas=3, session_id="s")
    assert logic.plan(spec(replicas=3), shrunk, running, applied=True).drift is None

    # Applied means: a status of this generation said ready.
    ready = TopicStatus(topic="t", ready=True, generation=4, observed_generation=4)
    assert logic.spec_applied(ready, 4) and not logic.spec_applied(ready, 5)
    assert not logic.spec_applied(ready.model_copy(update={"ready": False}), 4)
    assert not logic.spec_applied(None, 4)


def test_a_spec_without_partitions_or_replicas_takes_the_clusters_defaults_then_keeps_what_the_topic_has() -> None:
    """Strimzi's KafkaTopic may leave both out: the topic is created with the brokers' num.partitions and
    default.replication.factor, and neither is changed afterwards (issue 56, Strimzi's users at home)."""
    from services.adapters.admin import TopicDefaults

    bare = TopicSpec(name="t", config={"retention.ms": "1"})
    defaults = TopicDefaults(partitions=6, replication_factor=3)
    assert logic.needs_defaults(bare, None) and not logic.needs_defaults(bare, desc("t"))
    created = logic.effective_spec(bare, None, None, defaults)
    assert logic.plan(created, None, None).actions == [logic.CreateTopic("t", 6, 3, {"retention.ms": "1"})]
    assert logic.effective_spec(bare, None, None, None) is None  # the defaults are not known: nothing to create
    # The topic exists: its own counts, whatever the defaults (grown or changed by hand: no drift, no change).
    grown = desc("t", partitions=12, rf=2, config={"retention.ms": "1"})
    kept = logic.effective_spec(bare, grown, None, defaults)
    assert (kept.partitions, kept.replicas) == (12, 2)
    assert logic.plan(kept, grown, None, applied=True).actions == [] and logic.plan(kept, grown, None).drift is None
    # Placeholders waiting for brokers: the replication factor it was created for, so they are still filled.
    waiting = PlaceholderRecord(topic="t", replication_factor=3, assignment=[[1, 2, -1]])
    assert logic.effective_spec(bare, desc("t", partitions=1, rf=2), waiting, None).replicas == 3
    # One count given, the other left: only the one left is filled.
    half = logic.effective_spec(bare.model_copy(update={"partitions": 4}), None, None, defaults)
    assert (half.partitions, half.replicas) == (4, 3)


def test_with_config_ownership_all_a_config_the_spec_does_not_name_is_removed() -> None:
    """As Strimzi's Topic Operator owns a topic's configs (an option; by default those not named stay). The
    replication throttles' lists are never the spec's."""
    wanted = spec(retention_ms="1")
    actual = TopicDescription("t", desc("t").partitions, {
        "retention.ms": "1", "cleanup.policy": "compact", "min.insync.replicas": "2",
        "leader.replication.throttled.replicas": "0:1"}, overrides=frozenset({
            "retention.ms", "cleanup.policy", "leader.replication.throttled.replicas"}))
    assert logic.plan(wanted, actual, None).actions == []
    plan = logic.plan(wanted, actual, None, config_ownership="all")
    # min.insync.replicas is the brokers' (inherited, not set on the topic): not the spec's to remove.
    assert plan.actions == [logic.AlterConfig("t", {"cleanup.policy": None})]
    plan = logic.plan(wanted, actual, None, applied=True, config_ownership="all")
    assert plan.drift is not None and plan.drift.message == (
        "changed outside Ballast: cleanup.policy=compact (not in the spec); set back to the spec")


def test_the_throttles_lists_in_a_spec_are_left_out_and_said_so() -> None:
    """Cruise Control and the throttle controller set them during moves; a spec setting them back would fight both
    (Strimzi's Topic Operator ignores them too, with a warning)."""
    wanted = spec(retention_ms="1", **{"leader_replication_throttled_replicas": "*"})
    plan = logic.plan(wanted, desc("t"), None)
    assert plan.actions == [logic.AlterConfig("t", {"retention.ms": "1"})]
    (ignored,) = plan.warnings
    assert ignored.type == "ConfigIgnored" and ignored.message.startswith("leader.replication.throttled.replicas: ")


def test_a_topic_is_ballasts_once_the_cluster_made_it_or_may_have() -> None:
    """Its status says it is Ballast's before the creation request goes; the answer settles it."""
    from services.adapters.admin import ClusterUnavailable, OperationRefused, TopicAlreadyExists
    from services.placement.model import PlacementError

    assert logic.origin_after_creation(None) == "created"
    # The answer lost (a timeout after the controller committed it): the topic may be there, and is Ballast's.
    assert logic.origin_after_creation(ClusterUnavailable("request timed out")) == "created"
    # Refused: there is no topic of Ballast's making (a topic already there is someone else's).
    assert logic.origin_after_creation(TopicAlreadyExists("topic 't' already exists")) is None
    assert logic.origin_after_creation(OperationRefused("replication factor larger than available brokers")) is None
    # Never asked for: no placement was possible.
    assert logic.origin_after_creation(PlacementError("not enough racks")) is None


def test_a_created_topic_is_shown_once_the_cluster_has_every_partition_it_was_created_with() -> None:
    created = {"a": 3, "b": 2, "c": 1}
    assert logic.shown(created, {"a": 3, "b": 1, "c": 0}) == ["a"]
    assert logic.shown(created, {"b": 2, "c": 4}) == ["b", "c"]
    assert logic.shown(created, {}) == []


def test_a_topic_shown_before_and_absent_now_is_confirmed_at_the_next_look() -> None:
    spec = TopicSpec(name="t", partitions=1, replicas=1)
    shown = desc("t", partitions=1, rf=1)
    assert logic.absence_unconfirmed(spec, shown, None, absent_before=False)
    assert not logic.absence_unconfirmed(spec, shown, None, absent_before=True)  # the second look agrees
    assert not logic.absence_unconfirmed(spec, None, None, absent_before=False)  # never shown: created at once
    assert not logic.absence_unconfirmed(None, shown, None, absent_before=False)  # withdrawn: its deletion is said
