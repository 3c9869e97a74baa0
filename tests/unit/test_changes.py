"""What `ballast diff` / `apply --dry-run` say a spec would change, and when `apply --wait` calls it settled
(issue 18, item 12): the rules, called directly."""

from __future__ import annotations

from datetime import UTC, datetime

from events import (
    Condition,
    RebalanceMode,
    RebalanceRequest,
    RebalanceState,
    RebalanceStatus,
    ReplicasChangeState,
    ReplicasChangeStatus,
    TopicSpec,
    TopicStatus,
)
from services.cli.changes import Outcome, Verdict, diff_topic, outcome, rebalance_diff
from services.adapters.admin.port import PartitionInfo, TopicDescription


def cluster_topic(partitions: int, rf: int, **config: str) -> TopicDescription:
    return TopicDescription("orders", tuple(PartitionInfo(i, tuple(range(1, rf + 1))) for i in range(partitions)),
                            {k.replace("_", "."): v for k, v in config.items()})


SPEC = TopicSpec(name="orders", partitions=6, replicas=3, config={"retention.ms": "60000"})


def test_a_topic_not_in_the_cluster_is_created() -> None:
    d = diff_topic(SPEC, None, None, alive_brokers=6)
    assert d.verdict is Verdict.CREATE and d.publish
    assert d.changes == ["create: 6 partitions, replication factor 3, retention.ms=60000"] and d.warnings == []


def test_the_same_spec_on_a_matching_topic_is_unchanged_and_not_published_again() -> None:
    d = diff_topic(SPEC, SPEC, cluster_topic(6, 3, retention_ms="60000"), alive_brokers=6)
    assert d.verdict is Verdict.UNCHANGED and not d.publish and d.changes == d.warnings == d.spec_changes == []


def test_changes_name_each_field_and_config_key() -> None:
    d = diff_topic(SPEC, SPEC.model_copy(update={"replicas": 2}),
                   cluster_topic(4, 2, retention_ms="1000", cleanup_policy="compact"), alive_brokers=6)
    assert d.verdict is Verdict.CHANGE and d.publish
    # Keys the spec does not name are left as they are (the reconciler only sets the spec's).
    assert d.changes == ["partitions 4 -> 6", "config retention.ms: 1000 -> 60000",
                         "replication factor 2 -> 3 (through Cruise Control)"]
    added = diff_topic(SPEC, SPEC, cluster_topic(6, 3), alive_brokers=6)
    assert added.changes == ["config retention.ms: (default) -> 60000"]


def test_a_spec_change_the_cluster_has_already_is_a_change_not_unchanged() -> None:
    """Issue 56, defect 5: partitions 4 -> 6 in the spec, on a topic that has 6 already, said `unchanged` while
    `apply` published a new generation."""
    on_the_bus = SPEC.model_copy(update={"partitions": 4, "replicas": 2, "config": {"retention.ms": "60000",
                                                                                    "cleanup.policy": "compact"}})
    d = diff_topic(SPEC, on_the_bus, cluster_topic(6, 3, retention_ms="60000", cleanup_policy="compact"),
                   alive_brokers=6)
    assert d.verdict is Verdict.CHANGE and d.publish and d.changes == []
    assert d.spec_changes == ["partitions: 4 -> 6 (the topic has 6)", "replicas: 2 -> 3 (the topic has 3)",
                              "config cleanup.policy: no longer in the spec (the topic keeps compact)"]
    changed = diff_topic(SPEC.model_copy(update={"config": {"retention.ms": "1"}}), SPEC,
                         cluster_topic(6, 3, retention_ms="1"), alive_brokers=6)
    assert changed.verdict is Verdict.CHANGE and changed.spec_changes == [
        "config retention.ms: 60000 -> 1 (the topic has it already)"]
    # What the cluster gets is said once, as a change, not again as a spec change.
    grown = diff_topic(SPEC, on_the_bus.model_copy(update={"replicas": 3}), cluster_topic(4, 3, retention_ms="1"),
                       alive_brokers=6)
    assert grown.changes == ["partitions 4 -> 6", "config retention.ms: 1 -> 60000"]
    assert grown.spec_changes == ["config cleanup.policy: no longer in the spec (the topic keeps (default))"]


def test_warnings_before_publishing() -> None:
    fewer = diff_topic(SPEC.model_copy(update={"partitions": 2, "replicas": 7}), SPEC,
                       cluster_topic(6, 3, retention_ms="60000"), alive_brokers=6)
    # The topic reconciler's own plan and words: it holds an RF the alive brokers cannot reach, so the cluster gets
    # nothing yet (issue 29: the CLI used to re-derive this, and disagreed).
    assert fewer.warnings == ["Kafka cannot remove partitions: the topic keeps 6 (spec asks for 2)",
                              "target replication factor 7 cannot be reached: only 6 broker(s) are alive; the change "
                              "is requested once enough are"]
    assert fewer.changes == [] and fewer.verdict is Verdict.CHANGE
    # A create is never held (Kafka, or the placement of an under-replicated topic, decides), but more replicas
    # than brokers alive is said before it is published, as for an RF change (issue 56, defect 5).
    big = diff_topic(SPEC.model_copy(update={"replicas": 7}), None, None, alive_brokers=6)
    assert big.verdict is Verdict.CREATE and big.warnings == [
        "replication factor 7 is more than the 6 broker(s) alive: the topic is created only where the cluster's "
        "placement creates topics under-replicated (placeholder replicas, filled when brokers return: "
        "BALLAST_PLACEMENT__UNDER_REPLICATED); otherwise its status says why not"]
    assert diff_topic(SPEC, None, None, alive_brokers=3).warnings == []
    assert diff_topic(SPEC, None, None, alive_brokers=None).warnings == []  # the cluster not asked: nothing known
    foreign = diff_topic(SPEC, None, cluster_topic(6, 3, retention_ms="60000"), alive_brokers=6)
    assert foreign.verdict is Verdict.CHANGE and "Ballast did not create it" in foreign.warnings[0]


def test_an_invalid_config_is_refused_and_nothing_published() -> None:
    bad = SPEC.model_copy(update={"config": {"retention.ms": "forever"}})
    d = diff_topic(bad, SPEC, cluster_topic(6, 3), alive_brokers=6)
    assert d.verdict is Verdict.REFUSED and not d.publish
    assert d.warnings == ["config: Invalid value forever for configuration retention.ms: Not a number of type LONG"]


def test_a_number_of_thousands_of_digits_is_refused_in_kafkas_words() -> None:
    """Issue 56, defect 3: more than 4,300 digits crashed the CLI (Python's own limit on reading an integer), and the
    simulator's refusal carried Python's text. Kafka says the value is not a number of its type; the same text here."""
    from events.topic_configs import topic_config_problem

    huge = "9" * 5_000
    d = diff_topic(SPEC.model_copy(update={"config": {"retention.ms": huge}}), SPEC, cluster_topic(6, 3), alive_brokers=6)
    assert d.verdict is Verdict.REFUSED
    assert d.warnings == [f"config: Invalid value {huge} for configuration retention.ms: Not a number of type LONG"]
    assert topic_config_problem({"min.insync.replicas": "-" + huge}) == (
        f"Invalid value -{huge} for configuration min.insync.replicas: Not a number of type INT")
    assert topic_config_problem({"min.insync.replicas": "0" * 5_000 + "2"}) is None  # leading zeros: the number 2


def test_a_change_of_placement_choices_alone_is_a_spec_change() -> None:
    d = diff_topic(SPEC.model_copy(update={"placer": "multi-level", "load_aware": False}), SPEC,
                   cluster_topic(6, 3, retention_ms="60000"), alive_brokers=6)
    assert d.verdict is Verdict.CHANGE and d.changes == []
    assert d.spec_changes == ["placer: (default) -> multi-level", "loadAware: true -> false"]


def status(generation: int, **fields: object) -> TopicStatus:
    return TopicStatus(**{"topic": "orders", "ready": True, "generation": generation,
                          "observed_generation": generation, "partitions": 6, "replicas": 3, **fields})


def test_settled_once_the_reconciler_acted_on_this_generation_and_the_topic_matches() -> None:
    assert outcome(SPEC, 5, None)[0] is Outcome.WAITING
    assert outcome(SPEC, 5, status(4))[0] is Outcome.WAITING  # an older generation's status
    assert outcome(SPEC, 5, status(5)) == (Outcome.READY, "ready")
    moving = status(5, replicas=2, replicas_change=ReplicasChangeStatus(state=ReplicasChangeState.ONGOING,
                                                                       target_replicas=3))
    assert outcome(SPEC, 5, moving) == (Outcome.WAITING, "replication factor 2 -> 3: ongoing")


def test_failed_when_the_reconciler_says_it_cannot_get_there() -> None:
    refused = status(5, ready=False, conditions=[Condition(type="Ready", status="False", reason="ReconcileError",
                                                           message="Unknown topic config name: x")])
    assert outcome(SPEC, 5, refused) == (Outcome.FAILED, "Unknown topic config name: x")
    # A tenant's spec refused by the gate (issue 53): its apply --wait ends, with the rule's words.
    for reason, message in (("NotOwner", "'orders' is not among the names of tenant 'a' (a.*)"),
                            ("QuotaExceeded", "policy rule quota.partitions: 6 partitions ... is above its 4")):
        gated = status(5, ready=False, conditions=[
            Condition(type="Ready", status="False", reason=reason, message=f"refused, nothing was changed: {message}"),
            Condition(type=reason, status="True", reason="owner", message=message)])
        assert outcome(SPEC, 5, gated) == (Outcome.FAILED, message)
    blocked = status(5, replicas=2, conditions=[
        Condition(type="Ready", status="True"),
        Condition(type="ReplicasChangeBlocked", status="True", reason="NotEnoughBrokers", message="only 2 alive")])
    # Issue 30, defect 10: the status said ready while apply --wait said failed; both now say what holds it.
    assert outcome(SPEC, 5, blocked) == (Outcome.BLOCKED, "ready at replication factor 2; only 2 alive")


def test_a_paused_or_unmanaged_spec_is_settled_once_its_status_says_so() -> None:
    paused = SPEC.model_copy(update={"paused": True})
    said = status(5, replicas=2, conditions=[Condition(type="Ready", status="True"), Condition(
        type="ReconciliationPaused", status="True", reason="Paused", message="reconciliation paused: ...")])
    assert outcome(paused, 5, said) == (Outcome.READY, "reconciliation paused: ...")
    assert outcome(paused, 5, status(5, replicas=2))[0] is Outcome.WAITING
    let_go = SPEC.model_copy(update={"managed": False})
    said = status(5, replicas=2, conditions=[Condition(type="Unmanaged", status="True", message="managed: false")])
    assert outcome(let_go, 5, said) == (Outcome.READY, "managed: false")
    # Issue 56, defect 6: paused before its topic was ever created, the status says not ready; so does --wait
    # (settled, but not ready: exit 1), with the status's own words.
    never = status(5, ready=False, partitions=None, replicas=None, conditions=[
        Condition(type="Ready", status="False", reason="Paused",
                  message="the topic does not exist and is not created: reconciliation paused: ..."),
        Condition(type="ReconciliationPaused", status="True", reason="Paused", message="reconciliation paused: ...")])
    assert outcome(paused, 5, never) == (
        Outcome.HELD, "the topic does not exist and is not created: reconciliation paused: ...")


def test_an_unmanaged_topic_with_the_same_settings_says_what_changes() -> None:
    """Issue 30, defect 9: it said "change", listed nothing, and exited 1. Applying the spec does change one thing:
    Ballast manages the topic from then on."""
    foreign = diff_topic(SPEC, None, cluster_topic(6, 3, retention_ms="60000"), alive_brokers=6)
    assert foreign.verdict is Verdict.CHANGE and foreign.changes == []
    assert foreign.spec_changes == ["added: Ballast reconciles this existing topic from now on"]


NOW = datetime(2026, 11, 26, tzinfo=UTC)
SCALE_UP = RebalanceRequest(name="scale-up", mode=RebalanceMode.ADD_BROKERS, brokers=[7, 8])


def test_a_rebalance_never_requested_is_created_and_says_what_comes_next() -> None:
    """Issue 30, defect 2: `ballast diff -f rebalance.yaml` printed nothing and exited 0."""
    d = rebalance_diff(SCALE_UP, None, NOW)
    assert d.verdict is Verdict.CREATE and d.label == "rebalance scale-up"
    assert d.changes == ["mode add-brokers, brokers 7, 8: Cruise Control computes a proposal, executed once "
                         "approved (ballast rebalance approve scale-up)"]
    assert d.document() == {"rebalance": "scale-up", "verdict": "create", "changes": d.changes, "warnings": []}
    auto = rebalance_diff(SCALE_UP.model_copy(update={"auto_approve": True}), None, NOW)
    assert auto.changes[0].endswith("executed as soon as it is ready (auto-approved)")


def test_the_same_rebalance_request_is_unchanged_and_a_changed_one_starts_over_or_waits() -> None:
    ready = RebalanceStatus(name="scale-up", state=RebalanceState.PROPOSAL_READY, request=SCALE_UP, updated_at=NOW)
    same = rebalance_diff(SCALE_UP, ready, NOW)
    assert same.verdict is Verdict.UNCHANGED and same.changes == ["the same request is ProposalReady"]
    wider = SCALE_UP.model_copy(update={"brokers": [7, 8, 9]})
    over = rebalance_diff(wider, ready, NOW)
    assert over.verdict is Verdict.CHANGE
    assert over.changes == ["mode add-brokers, brokers 7, 8, 9: starts over (ProposalReady -> New), Cruise Control "
                            "computes a new proposal, executed once approved (ballast rebalance approve scale-up)"]
    running = ready.model_copy(update={"state": RebalanceState.REBALANCING})
    waits = rebalance_diff(wider, running, NOW)
    assert waits.verdict is Verdict.CHANGE and "the execution goes on with the previous request" in waits.changes[0]
    # While it executes with another request waiting: that one again changes nothing, the running one drops it.
    pending = running.model_copy(update={"pending_request": wider})
    again = rebalance_diff(wider, pending, NOW)
    assert again.verdict is Verdict.UNCHANGED and again.changes == [
        "the same request is waiting: the execution goes on with the previous one until a refresh"]
    back = rebalance_diff(SCALE_UP, pending, NOW)
    assert back.verdict is Verdict.CHANGE and back.changes == [
        "mode add-brokers, brokers 7, 8: the request waiting for a refresh is dropped; the execution goes on with "
        "this one"]


def test_prune_withdraws_the_specs_the_files_no_longer_name_saying_what_happens_to_each_topic() -> None:
    """Issue 30, feature 5: the files as the whole desired state."""
    from services.cli.changes import Withdrawal, prune, withdrawal

    statuses = {"ours": TopicStatus(topic="ours", ready=True, partitions=3, origin="created"),
                "theirs": TopicStatus(topic="theirs", ready=True, partitions=3),
                "never": TopicStatus(topic="never", ready=False)}
    assert [withdrawal(statuses[n]) for n in ("ours", "theirs", "never")] == [
        Withdrawal.DELETES, Withdrawal.RETAINS, Withdrawal.NO_TOPIC]
    pruned = prune(["kept", "ours", "theirs", "never"], named=["kept"], statuses=statuses)
    assert [(d.name, d.verdict, d.changes) for d in pruned] == [
        ("never", Verdict.WITHDRAW, ["spec withdrawn: there is no such topic in the cluster"]),
        ("ours", Verdict.WITHDRAW, ["spec withdrawn: the topic is deleted with its data"]),
        ("theirs", Verdict.WITHDRAW, ["spec withdrawn: the topic stays (Ballast neither created nor adopted it)"])]
    assert prune(["kept"], named=["kept", "new"], statuses={}) == []
