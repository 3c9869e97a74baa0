"""A refused topic_configuration request: the refusal is pinned on the changes it is about, and only they wait."""

from datetime import UTC, datetime, timedelta

from events import ReplicasChangeRecord
from services.adapters.cruise_control.topic_names import topic_regex
from services.replicas_change import isolation
from services.replicas_change.logic import PENDING

NOW = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)
LATER = NOW + timedelta(seconds=4)
RETRY = {"initial_s": 4.0, "max_s": 60.0}  # a first refusal waits 4 s
RF_REFUSED = ("Error processing POST request '/topic_configuration' due to: 'com.linkedin.kafka.cruisecontrol."
              "exception.KafkaCruiseControlException: java.lang.RuntimeException: Unable to change replication factor "
              "(RF) of topics [poison] to 7 since there are only 6 alive brokers in the cluster. Requested RF cannot "
              "be more than number of alive brokers.'.")


def records(*topics: str, target: int = 3, **fields: object) -> dict[str, ReplicasChangeRecord]:
    return {t: ReplicasChangeRecord(topic=t, state=PENDING, target_replicas=target, batch_id="b1", **fields)
            for t in topics}


def test_an_rf_refusal_is_pinned_on_its_rf_group_and_the_rest_go_again_at_once() -> None:
    groups = {3: ["a", "b", "c", "d"], 7: ["poison"]}
    refusal = isolation.pin(RF_REFUSED, groups, "b1")
    assert refusal.culprits == {"poison"} and refusal.label == "rf:7"
    held = {**records("a", "b", "c", "d"), **records("poison", target=7)}
    after = {r.topic: r for r in isolation.on_refused(held, refusal, held, "Request failed (500), Unable ...", NOW,
                                                      batch_id="b1", **RETRY)}
    assert after["poison"].message and after["poison"].next_attempt_at == LATER and after["poison"].group == "rf:7"
    for topic in "abcd":
        assert after[topic].message is None and after[topic].next_attempt_at is None and after[topic].group is None
        assert after[topic].batch_id is None
    assert [r.topic for r in isolation.next_request(after.values())] == ["a", "b", "c", "d"]


def test_a_pattern_that_matches_nothing_is_pinned_on_its_group() -> None:
    groups = {2: ["gone"], 3: ["a", "b"]}
    refusal = isolation.pin(f"There is no topic in cluster matching pattern '{topic_regex(['gone'])}'.", groups, "b1")
    assert refusal.culprits == {"gone"}


def test_an_unexplained_refusal_splits_the_request_until_the_culprit_is_alone() -> None:
    held = records("a", "b", "c", "d")
    refusal = isolation.pin("Request failed (500), something odd", {3: list(held)}, "b1")
    assert refusal.culprits == set() and refusal.halves == (("a", "b"), ("c", "d"))
    after = {r.topic: r for r in isolation.on_refused(held, refusal, held, "odd", NOW, batch_id="b1", **RETRY)}
    assert {t: r.group for t, r in after.items()} == {"a": "b1.a", "b": "b1.a", "c": "b1.b", "d": "b1.b"}
    assert all(r.message is None for r in after.values())
    first = isolation.next_request(after.values())
    assert [r.topic for r in first] == ["a", "b"]  # one half at a time, never mixed with the other
    # The half with the culprit is refused again and splits again; a single change refused is pinned on itself.
    alone = isolation.pin("odd", {3: ["b"]}, "b2")
    assert alone.culprits == {"b"}
    (b,) = isolation.on_refused({"b": after["b"]}, alone, ["b"], "odd", NOW, batch_id="b2", **RETRY)
    assert b.group == "solo:b" and b.message == "odd" and b.next_attempt_at == LATER and b.attempts == 1


def test_a_refusal_about_the_whole_cluster_is_shared_by_every_change() -> None:
    held = records("a", "b")
    refusal = isolation.pin("Topic partition x-0 has offline replicas on brokers [5].", {3: ["a", "b"]}, "b1")
    after = isolation.on_refused(held, refusal, held, "offline replicas", NOW, batch_id="b1", **RETRY)
    assert all(r.message == "offline replicas" and r.group is None and r.next_attempt_at == LATER for r in after)


def test_free_changes_go_before_isolated_groups() -> None:
    due = [*records("x", group="b1.b").values(), *records("y").values(), *records("z", group="b1.a").values()]
    assert [r.topic for r in isolation.next_request(due)] == ["y"]
    assert [r.topic for r in isolation.next_request([r for r in due if r.topic != "y"])] == ["z"]
