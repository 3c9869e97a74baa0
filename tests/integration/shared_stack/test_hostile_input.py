"""Hostile input on the real local stack (issue 12): nothing lost, nothing unmanaged touched, no crash.

Each test sends what a user once could break Ballast with, and checks the outcome a user sees: the valid specs
around the bad record converge, the bad record is a dead letter with its reason, the services stay healthy and
start again."""

from __future__ import annotations

import json
import time
from pathlib import Path

from confluent_kafka import Consumer, TopicPartition

from events import TOPICS, ReplicasChangeCommand, ReplicasChangeRecord, TopicSpec, decode, encode
from services.common import busio
from services.common.bus import consumer_group
from tests.integration.harness import WAIT_S, Ballast, spec
from tests.integration.shared_stack.test_bus import cli
from tests.patience import until

SERVICES = ("topic-reconciler", "replicas-change", "rebalancer")


def healthy(ballast: Ballast, service: str) -> bool:
    return ballast.stack.http.get(ballast.stack.health_url(service), timeout=5).status_code == 200


def raw_spec(name: str, **fields: object) -> bytes:
    payload = {"name": name, "partitions": 1, "replicas": 2, **fields}
    return json.dumps({"schema": "ballast.TopicSpec", "version": 1, "payload": payload}).encode()


def letters_for(ballast: Ballast, before: int, count: int, timeout: float = WAIT_S) -> list:
    ballast.watcher.wait(f"{count} dead letters", lambda: len(ballast.watcher.dead_letters) >= before + count,
                         timeout=timeout)
    return ballast.watcher.dead_letters[before:]


def test_an_oversized_bad_record_loses_none_of_the_specs_behind_it(ballast: Ballast, name: str) -> None:
    """600 KB of garbage then ten valid specs, in one produce call: before, 0 of 10 were acted on."""
    before = len(ballast.watcher.dead_letters)
    garbage = b'{"schema": "ballast.TopicSpec", "version": 1, "payload": {"name": "' + b"x" * 600_000 + b'"}}'
    valid = [spec(f"{name}-{i}", 2, partitions=1) for i in range(10)]
    busio.produce(ballast.settings.bus, [(TOPICS.specs.name, f"{name}-big".encode(), garbage, None)]
                  + [(TOPICS.specs.name, s.key.encode(), encode(s), None) for s in valid])
    for s in valid:
        ballast.watcher.wait_rf(s.name, 2)
    (letter,) = [d for d in letters_for(ballast, before, 1) if d.record_key == f"{name}-big"]
    assert letter.value_size == len(garbage) and letter.value_truncated and letter.value_sha256
    assert len(letter.reason) < 2_100
    assert healthy(ballast, "topic-reconciler")


def test_a_large_valid_topic_does_not_stop_the_specs_after_it(ballast: Ballast, name: str) -> None:
    """A 30,000-partition topic's placement is megabytes: it goes in parts and the specs after it converge."""
    big = TopicSpec(name=f"{name}-big", partitions=30_000, replicas=3)
    after = [spec(f"{name}-after-{i}", 2, partitions=1) for i in range(5)]
    ballast.apply(big, *after)
    for s in after:
        ballast.watcher.wait_rf(s.name, 2)
    status = ballast.watcher.wait_rf(big.name, 3)
    assert status.partitions == 30_000
    def placement() -> list | None:
        placed = [r for r in busio.consume(ballast.settings.bus, [TOPICS.placements.name], follow=False, idle_s=1.0)
                  if r.key == big.name.encode()]
        return placed if sum(len(decode(r.value).event.placed) for r in placed) >= 90_000 else None

    # The placement follows the ready status (the reconciler tells users first).
    placed = until("the big topic's placement on the bus", placement)
    replicas = sum(len(decode(r.value).event.placed) for r in placed)  # type: ignore[attr-defined]
    assert len(placed) > 1 and replicas == 90_000
    ballast.delete(big.name)
    ballast.watcher.wait_status(big.name, lambda s: s.deleted and s.partitions is None, "deleted")


def test_non_utf8_keys_are_dead_letters_and_services_start_again(ballast: Ballast, name: str) -> None:
    """Before, the start-up rebuild decoded every key and every restart exited 1 while the record stayed."""
    before = len(ballast.watcher.dead_letters)
    ballast.produce_raw(TOPICS.specs.name, b"\xff\xfe" + name.encode(), raw_spec(f"{name}-k"))
    ballast.produce_raw(TOPICS.scaling.name, b"\xc3\x28", b'{"schema": "ballast.BrokerRemovalRequested"}')
    letters = letters_for(ballast, before, 2)
    assert {d.key_encoding for d in letters} == {"base64"}
    assert any("not UTF-8" in d.reason for d in letters)
    for service in ("topic-reconciler", "rebalancer"):
        ballast.stack.restart_service(service)  # waits for health 200; raises if the process exits
    ballast.apply(spec(f"{name}-after", 2, partitions=1))
    ballast.watcher.wait_rf(f"{name}-after", 2)


def test_loose_values_are_dead_letters_and_change_nothing(ballast: Ballast, name: str) -> None:
    """``"replicas": true`` once cut a topic to one replica; config null became the string "None"."""
    topic = f"{name}-t"
    ballast.apply(spec(topic, 3, partitions=1))
    ballast.watcher.wait_rf(topic, 3)
    bad = [raw_spec(topic, replicas=True), raw_spec(topic, replicas="1"), raw_spec(topic, config={"a.b": None}),
           raw_spec(topic, config={"cleanup.policy": {"compact": True}})]
    before = len(ballast.watcher.dead_letters)
    for value in bad:
        ballast.produce_raw(TOPICS.specs.name, topic.encode(), value)
    letters = letters_for(ballast, before, len(bad))
    reasons = " | ".join(d.reason for d in letters)
    assert "replicas: Input should be a valid integer" in reasons and "not null" in reasons
    assert "not an object" in reasons
    ballast.apply(spec(f"{name}-marker", 2, partitions=1))  # handled after the bad records
    ballast.watcher.wait_rf(f"{name}-marker", 2)
    assert ballast.cluster_rf(topic) == 3
    assert "a.b" not in ballast.cluster_topic(topic)["config"]


def test_a_key_that_is_not_the_spec_name_is_a_dead_letter(ballast: Ballast, name: str) -> None:
    before = len(ballast.watcher.dead_letters)
    ballast.produce_raw(TOPICS.specs.name, f"{name}-key".encode(), raw_spec(f"{name}-name"))
    (letter,) = letters_for(ballast, before, 1)
    assert f"the event's key is '{name}-name'" in letter.reason
    ballast.apply(spec(f"{name}-marker", 2, partitions=1))
    ballast.watcher.wait_rf(f"{name}-marker", 2)
    assert ballast.cluster_topic(f"{name}-name") is None and ballast.cluster_topic(f"{name}-key") is None


def test_internal_and_bus_topics_are_never_managed(ballast: Ballast, name: str) -> None:
    before = len(ballast.watcher.dead_letters)
    for target in ("__consumer_offsets", TOPICS.status.name):
        ballast.produce_raw(TOPICS.specs.name, target.encode(), raw_spec(target))
    letters = letters_for(ballast, before, 2)
    assert all("Ballast never manages it" in d.reason for d in letters)
    ballast.produce_raw(TOPICS.specs.name, b"__consumer_offsets",
                        json.dumps({"schema": "ballast.TopicSpecDeleted", "version": 1,
                                    "payload": {"name": "__consumer_offsets"}}).encode())
    letters_for(ballast, before, 3)


def test_admin_answers_that_are_not_json_do_not_crash_the_reconciler(ballast: Ballast, name: str) -> None:
    """A proxy's 502 page once crashed the app with a JSONDecodeError."""
    ballast.fault("admin/errors", {"endpoint": "*", "status": 502, "body": "<html>Bad Gateway</html>", "count": 6})
    topic = f"{name}-t"
    ballast.apply(spec(topic, 2, partitions=1))
    ballast.watcher.wait_rf(topic, 2)
    assert healthy(ballast, "topic-reconciler")
    for status in ballast.watcher.history[topic]:
        ready = status.condition("Ready")
        if ready is not None and ready.reason == "ReconcileError":
            assert "HTTP 502" in (ready.message or "")


def test_an_impossible_rf_waits_alone_and_the_others_change(ballast: Ballast, name: str) -> None:
    """RF 7 on six brokers once refused every change sent with it, forever."""
    valid = [f"{name}-{i}" for i in range(4)]
    poison = f"{name}-poison"
    ballast.apply(*[spec(t, 2, partitions=1) for t in [*valid, poison]])
    for t in [*valid, poison]:
        ballast.watcher.wait_rf(t, 2)
    ballast.apply(*[spec(t, 3, partitions=1) for t in valid], spec(poison, 7, partitions=1))
    for t in valid:
        ballast.watcher.wait_rf(t, 3)
    blocked = ballast.watcher.wait_status(
        poison, lambda s: s.condition("ReplicasChangeBlocked") is not None, "blocked by too few brokers")
    assert "only 6 broker(s) are alive" in (blocked.condition("ReplicasChangeBlocked").message or "")
    assert ballast.cluster_rf(poison) == 2
    for t in valid:
        assert not any("poison" in (s.replicas_change.message or "") for s in ballast.watcher.history[t]
                       if s.replicas_change)


def test_cruise_control_refusing_one_change_holds_back_only_that_one(ballast: Ballast, name: str) -> None:
    """The replicas-change service alone, on commands such as a reconciler with a stale view of the brokers would
    send: Cruise Control refuses the whole request (a pattern matching no topic, an RF above the alive brokers),
    the refusal is pinned on its change, and the others go through without it."""
    valid = [f"{name}-{i}" for i in range(4)]
    poison, missing = f"{name}-poison", f"{name}-never-created"
    for topic in (*valid, poison):
        ballast.sim.post("/admin/topics", json={"name": topic, "partitions": 1, "replicationFactor": 2}
                         ).raise_for_status()
    commands = [ReplicasChangeCommand(topic=t, target_replicas=3) for t in valid]
    commands += [ReplicasChangeCommand(topic=poison, target_replicas=7),
                 ReplicasChangeCommand(topic=missing, target_replicas=4)]
    busio.publish(ballast.settings.bus, TOPICS.replicas_commands, commands)
    try:
        check_pinned(ballast, valid, poison)
    finally:
        ballast.sim.delete(f"/admin/topics/{poison}")  # its change then completes as gone, and stops retrying


def check_pinned(ballast: Ballast, valid: list[str], poison: str) -> None:
    def recorded_done() -> bool:
        latest = busio.latest(ballast.settings.bus, TOPICS.replicas_state)
        return all(getattr(latest.get(t), "state", None) == "completed" for t in valid)

    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and (any(ballast.cluster_rf(t) != 3 for t in valid) or not recorded_done()):
        time.sleep(0.5)
    assert [ballast.cluster_rf(t) for t in valid] == [3] * 4
    records = busio.latest(ballast.settings.bus, TOPICS.replicas_state)
    held = records[poison]
    assert isinstance(held, ReplicasChangeRecord) and held.state == "pending"
    assert "Unable to change replication factor (RF) of topics [" in (held.message or "")
    assert held.group in ("rf:7", f"solo:{poison}")  # pinned on its RF group, then sent alone
    for t in valid:
        record = records[t]
        assert isinstance(record, ReplicasChangeRecord) and record.state == "completed" and record.message is None
    assert ballast.cluster_rf(poison) == 2


def test_withdrawing_a_spec_whose_topic_was_never_created_says_there_is_no_topic(ballast: Ballast, name: str) -> None:
    """Issue 30, defect 10: the CLI said "topic retained" and the status "topic removed" of a topic that never was."""
    never = f"{name}-never"
    # A config the cluster refuses (the CLI would refuse it before publishing): the create fails, no topic exists.
    ballast.apply(TopicSpec(name=never, partitions=1, replicas=2, config={"retention.ms": "forever"}))
    refused = ballast.watcher.wait_status(
        never, lambda s: (c := s.condition("Ready")) is not None and c.reason == "ReconcileError", "refused")
    assert refused.partitions is None
    result = cli(ballast.stack, "delete", "--yes", never)
    assert result.returncode == 0, result.stderr
    assert f"topic spec {never}: withdrawn (there is no topic)" in result.stdout
    gone = ballast.watcher.wait_status(never, lambda s: s.deleted, "spec withdrawn")
    assert gone.condition("Ready").message == "spec deleted; the topic is not in the cluster"


def test_delete_touches_only_what_ballast_created_or_adopted(ballast: Ballast, name: str, tmp_path: Path) -> None:
    foreign, adopted, own = f"{name}-foreign", f"{name}-adopted", f"{name}-own"
    for topic in (foreign, adopted):
        ballast.sim.post("/admin/topics", json={"name": topic, "partitions": 1, "replicationFactor": 2}
                         ).raise_for_status()
    ballast.apply(spec(foreign, 2, partitions=1), TopicSpec(name=adopted, partitions=1, replicas=2, adopt=True),
                  spec(own, 2, partitions=1))
    for topic in (foreign, adopted, own):
        ballast.watcher.wait_rf(topic, 2)
    assert ballast.watcher.latest[own].origin == "created" and ballast.watcher.latest[adopted].origin == "adopted"
    assert ballast.watcher.latest[foreign].origin is None
    for refused, said in ((["__consumer_offsets"], "internal topic"), ([TOPICS.specs.name], "bus topics"),
                          ([f"{name}-never-existed"], "no spec for topic"), ([own], "pass --yes")):
        result = cli(ballast.stack, "delete", *refused)
        assert result.returncode == 1 and said in result.stderr, result.stderr
    assert ballast.cluster_topic(own) is not None
    result = cli(ballast.stack, "delete", "--yes", foreign, adopted, own)
    assert result.returncode == 0, result.stderr
    assert "(topic retained)" in result.stdout
    for topic in (adopted, own):
        ballast.watcher.wait_status(topic, lambda s: s.deleted and s.partitions is None, "deleted")
    retained = ballast.watcher.wait_status(foreign, lambda s: s.deleted, "spec withdrawn")
    assert "retained" in (retained.condition("Ready").message or "")
    time.sleep(2.5)  # a resync later, the topic Ballast did not create is still there
    assert ballast.cluster_topic(foreign) is not None
    assert ballast.cluster_topic(adopted) is None and ballast.cluster_topic(own) is None


def test_a_policy_refuses_an_rf_1_spec_in_diff_apply_and_from_a_raw_bus_record(ballast: Ballast, name: str,
                                                                                 tmp_path: Path) -> None:
    """Issue 30, feature 4: one policy file, read by the CLI before publishing and by the reconciler (which follows
    its edits) on every spec from the bus."""
    policy = Path(ballast.stack.env["BALLAST_POLICY_FILE"])
    policy.write_text("replicas: {min: 2}\ndeletionProtection: ['-kept$']\n")
    try:
        manifest = tmp_path / "rf1.yaml"
        manifest.write_text(f"name: {name}-rf1\npartitions: 1\nreplicas: 1\n")
        diff = cli(ballast.stack, "diff", "-f", str(manifest))
        assert diff.returncode == 2
        assert diff.stdout.splitlines() == [f"{name}-rf1: refused",
                                            "  warning: policy rule replicas.min: replicas 1 is below the minimum 2"]
        applied = cli(ballast.stack, "apply", "-f", str(manifest))
        assert applied.returncode == 2 and "nothing published" in applied.stderr
        assert f"refused: {name}-rf1: policy rule replicas.min" in applied.stderr

        # Produced by hand, past the CLI: the reconciler refuses it, saying which rule, and creates nothing.
        ballast.apply(spec(f"{name}-raw", 1))
        status = ballast.watcher.wait_status(f"{name}-raw", lambda s: s.condition("PolicyViolation") is not None,
                                             "refused by the policy")
        assert not status.ready and "policy rule replicas.min" in status.condition("PolicyViolation").message
        assert ballast.cluster_topic(f"{name}-raw") is None
        assert f"{name}-rf1" not in ballast.watcher.latest, "the CLI published nothing"

        # Deletion protection: `ballast delete` refuses, and so does the reconciler for a withdrawal by hand.
        ballast.apply(spec(f"{name}-kept", 2))
        ballast.watcher.wait_rf(f"{name}-kept", 2)
        refused = cli(ballast.stack, "delete", f"{name}-kept", "--yes")
        assert refused.returncode == 2 and "policy rule deletion-protection" in refused.stderr
        ballast.delete(f"{name}-kept")
        kept = ballast.watcher.wait_status(f"{name}-kept", lambda s: s.deleted, "withdrawn")
        assert "retained: policy rule deletion-protection" in kept.condition("Ready").message
        assert ballast.cluster_topic(f"{name}-kept") is not None
    finally:
        policy.write_text("")
    # The policy emptied, the raw spec is acted on at the next resync.
    ballast.watcher.wait_rf(f"{name}-raw", 1)


def test_services_listen_on_loopback_only(ballast: Ballast) -> None:
    """faust binds web_bind (0.0.0.0 by default), not web_host: its /router/ and /table/ pages were open."""
    ports = {getattr(ballast.stack.ports, s.replace("-", "_")) for s in SERVICES}
    listening: dict[int, str] = {}
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            local, state = line.split()[1], line.split()[3]
            address, port = local.rsplit(":", 1)
            if state == "0A" and int(port, 16) in ports:
                listening[int(port, 16)] = address
    assert set(listening) == ports
    assert set(listening.values()) == {"0100007F"}, listening


def test_a_restarted_reconciler_does_not_report_the_same_bad_records_again(ballast: Ballast, name: str) -> None:
    """One shard: the service's consumer group keeps its offsets, so a restart goes on from them (a group of its own
    per instance re-read the whole topic and dead-lettered every bad record once more)."""
    before = len(ballast.watcher.dead_letters)
    delivered: list[tuple[str, int, int]] = []
    busio.produce(ballast.settings.bus, [(TOPICS.specs.name, f"{name}-{i}".encode(), b"not json", None)
                                         for i in range(3)], delivered=delivered)
    letters_for(ballast, before, 3)
    # A kill -9 replays what the service had not committed yet (faust commits every few seconds): the test is about
    # what it had.
    deadline = time.monotonic() + 60
    while not all(_committed(ballast, consumer_group("topic-reconciler"), topic, partition) > offset
                  for topic, partition, offset in delivered):
        assert time.monotonic() < deadline, "the bad records' offsets were not committed within 60 s"
        time.sleep(0.5)
    ballast.stack.restart_service("topic-reconciler")
    ballast.apply(spec(f"{name}-after", 2, partitions=1))
    ballast.watcher.wait_rf(f"{name}-after", 2)  # the restarted service has read the specs topic past those records
    mine = [d for d in ballast.watcher.dead_letters[before:] if (d.record_key or "").startswith(f"{name}-")]
    assert len(mine) == 3, [d.record_key for d in mine]


def _committed(ballast: Ballast, group: str, topic: str, partition: int) -> int:
    """The offset ``group`` has committed on the partition (negative for none), read without joining the group."""
    consumer = Consumer({**ballast.settings.bus.confluent_config(), "group.id": group, "enable.auto.commit": False})
    try:
        [committed] = consumer.committed([TopicPartition(topic, partition)], timeout=10)
        return committed.offset
    finally:
        consumer.close()
