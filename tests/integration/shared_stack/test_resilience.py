"""Failures of Cruise Control and of Ballast itself: nothing lost, nothing submitted twice."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import httpx

from events import TOPICS, ReplicasChangeBatch
from services.common import busio
from services.adapters.cruise_control import CruiseControlClient
from services.common.settings import CruiseControlSettings
from tests.integration.harness import WAIT_S, Ballast, change_sessions, is_ongoing, pending_with, spec
from tests.patience import until


def test_cruise_control_down_then_back(ballast: Ballast, name: str) -> None:
    topic = f"{name}-t"
    ballast.apply(spec(topic, 3))
    ballast.watcher.wait_rf(topic, 3)
    ballast.fault("cruise-control/stop")
    ballast.apply(spec(topic, 2))
    pending = ballast.watcher.wait_status(topic, pending_with("Connection failed"), "connection failure")
    assert pending.ready and ballast.cluster_rf(topic) == 3
    ballast.fault("cruise-control/start")
    ballast.watcher.wait_rf(topic, 2)


def test_doctor_tells_a_stopped_cruise_control_from_a_healthy_one(ballast: Ballast) -> None:
    """Issue 30, feature 6: one table of everything Ballast needs, with an exit code for scripts."""
    def doctor() -> tuple[int, dict[str, dict[str, str]]]:
        done = subprocess.run([sys.executable, "-m", "services.cli", "doctor", "-o", "json"], capture_output=True,
                              text=True, env={**os.environ, **ballast.stack.env}, timeout=WAIT_S)
        return done.returncode, {c["name"]: c for c in map(json.loads, done.stdout.splitlines())}

    code, checks = doctor()
    assert code == 0, checks
    assert list(checks) == ["bus", "cluster", "cruise-control", "topic-reconciler", "replicas-change", "rebalancer",
                            "load-collector", "throttle", "spark-aggregates"]
    # The optional parts this stack does not run are said to be off, which is not a failure.
    assert {n: c["health"] for n, c in checks.items() if c["health"] != "ok"} == {"throttle": "off",
                                                                                  "spark-aggregates": "off"}
    assert checks["cruise-control"]["detail"].startswith("ready (executor ")
    assert checks["topic-reconciler"]["detail"].startswith("active (holds the lease), backlog ")
    assert checks["topic-reconciler"]["detail"].endswith(", shards [0] of 1")
    ballast.fault("cruise-control/stop")
    try:
        code, checks = doctor()
    finally:
        ballast.fault("cruise-control/start")
    assert code == 1 and checks["cruise-control"]["health"] == "down", checks
    assert [n for n, c in checks.items() if c["health"] not in ("ok", "off")] == ["cruise-control"]
    assert doctor()[0] == 0


def test_unauthorized_then_fixed(ballast: Ballast, name: str) -> None:
    topic = f"{name}-t"
    ballast.apply(spec(topic, 3))
    ballast.watcher.wait_rf(topic, 3)
    ballast.fault("cruise-control/auth", {"username": "admin", "password": "rotated"})
    ballast.apply(spec(topic, 2))
    ballast.watcher.wait_status(topic, pending_with("Authorization error"), "401 in status")
    assert ballast.cluster_rf(topic) == 3
    ballast.fault("cruise-control/auth", {})  # the operator fixes the credentials
    ballast.watcher.wait_rf(topic, 2)


def test_servlet_full_keeps_the_change_and_retries(ballast: Ballast, name: str) -> None:
    topic, other = f"{name}-t", f"{name}-other"
    ballast.apply(spec(topic, 3), spec(other, 3))
    ballast.watcher.wait_rf(topic, 3)
    ballast.watcher.wait_rf(other, 3)
    ballast.tune(proposal_s=4.0, max_block_s=0.05)
    port = ballast.stack.ports.cruise_control
    for _ in range(5):  # another team fills Cruise Control's five active task slots with dry runs
        answer = httpx.post(f"http://127.0.0.1:{port}/kafkacruisecontrol/topic_configuration",
                            params={"topic": other, "replication_factor": "2", "dryrun": "true", "json": "true"})
        if answer.status_code != 202:  # full already: a service of the shared stack holds one of the five
            assert answer.status_code == 500 and "servlet capacity" in answer.text, answer.text
            break
    served = ballast.sim.get("/faults/stats").json()["requestsServed"]
    ballast.apply(spec(topic, 2))
    # Refused while the slots are full (issue 28): asked again quietly, no status says "servlet capacity".
    ballast.watcher.wait("refused requests", lambda: ballast.sim.get("/faults/stats").json()["requestsServed"]
                         >= served + 2, 30)
    ballast.tune(proposal_s=0.1, max_block_s=10.0)
    ballast.watcher.wait_rf(topic, 2)
    assert ballast.cluster_rf(other) == 3, "dry runs change nothing"
    assert not any(s.replicas_change and "servlet" in (s.replicas_change.message or "")
                   for s in ballast.watcher.history[topic])


def test_a_request_answered_202_is_followed_and_gives_its_slot_back(ballast: Ballast, name: str) -> None:
    # Proposals that take longer than Cruise Control lets a request block: it answers 202, and the task holds the
    # service's only slot of Cruise Control's user tasks until its answer is asked for (a poll would be a task too).
    topic = f"{name}-t"
    ballast.apply(spec(topic, 3))
    ballast.watcher.wait_rf(topic, 3)
    ballast.tune(proposal_s=1.0, max_block_s=0.05)
    for rf in (2, 3):
        ballast.apply(spec(topic, rf))
        # Unfollowed, the slot would come back after 3 minutes, and the change with it.
        ballast.watcher.wait_rf(topic, rf)


def test_ongoing_execution_of_another_client(ballast: Ballast, name: str) -> None:
    topic, foreign = f"{name}-t", f"{name}-foreign"
    ballast.apply(spec(topic, 3))
    ballast.watcher.wait_rf(topic, 3)
    ballast.sim.post("/admin/topics", json={"name": foreign, "partitions": 6, "replicationFactor": 2})
    ballast.tune(min_execution_s=4.0)
    port = ballast.stack.ports.cruise_control
    answer = httpx.post(f"http://127.0.0.1:{port}/kafkacruisecontrol/topic_configuration",
                        params={"topic": foreign, "replication_factor": "3", "dryrun": "false", "json": "true"})
    assert answer.status_code == 200
    ballast.apply(spec(topic, 2))
    ballast.watcher.wait_status(topic, pending_with("Another task is executing"), "ongoing execution")
    ballast.watcher.wait_rf(topic, 2)


def test_cruise_control_restart_mid_change(ballast: Ballast, name: str) -> None:
    """Session 1 is lost with the restart; the change is resubmitted as session 2 (or completes if the cluster got
    there anyway), and a second topic changed meanwhile rides along. Nothing hangs."""
    first, second = f"{name}-a", f"{name}-b"
    ballast.apply(spec(first, 3), spec(second, 3))
    ballast.watcher.wait_rf(first, 3)
    ballast.watcher.wait_rf(second, 3)
    ballast.tune(min_execution_s=4.0)
    ballast.apply(spec(first, 2))
    lost_session = ballast.watcher.wait_passing(first, is_ongoing, "ongoing").replicas_change.session_id
    ballast.fault("cruise-control/restart", {"downSeconds": 0.5, "warmupSeconds": 1.0})
    ballast.apply(spec(second, 4))
    ballast.watcher.wait_rf(first, 2)
    ballast.watcher.wait_rf(second, 4)
    history = ballast.watcher.history[first]
    assert any(s.replicas_change and s.replicas_change.message
               and f"no longer knows task {lost_session}" in s.replicas_change.message for s in history) or \
        history[-1].replicas_change.session_id is None
    assert ballast.cluster_rf(first) == 2 and ballast.cluster_rf(second) == 4


def test_kill_9_of_replicas_change_mid_change(ballast: Ballast, name: str) -> None:
    topic = f"{name}-t"
    ballast.apply(spec(topic, 3))
    ballast.watcher.wait_rf(topic, 3)
    ballast.tune(min_execution_s=5.0)
    ballast.apply(spec(topic, 2))
    session = ballast.watcher.wait_passing(topic, is_ongoing, "ongoing").replicas_change.session_id
    tasks_before = len(ballast.topic_configuration_tasks())
    ballast.stack.kill("replicas-change", signal.SIGKILL)
    ballast.stack.start_process("replicas-change")
    ballast.stack.wait_http(ballast.stack.health_url("replicas-change"), "replicas-change")
    done = ballast.watcher.wait_rf(topic, 2)
    assert done.replicas_change.target_replicas == 2
    sessions = {s.replicas_change.session_id for s in ballast.watcher.history[topic]
                if s.replicas_change and s.replicas_change.session_id}
    assert sessions == {session}, "the restarted service resumed the known session instead of resubmitting"
    assert len(ballast.topic_configuration_tasks()) == tasks_before


def open_batch_with(ballast: Ballast, topic: str, timeout: float = WAIT_S) -> ReplicasChangeBatch:
    """Wait for the replicas-change service's in-flight batch carrying ``topic``, as written on the bus."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        # The topic may hold anyone's records (the reliability run writes hostile ones there): events skips them.
        for batch in busio.events(ballast.stack.settings().bus, TOPICS.replicas_batches, follow=False, idle_s=0.3):
            if isinstance(batch, ReplicasChangeBatch) and batch.open and topic in batch.topics:
                return batch
    raise AssertionError(f"no open batch with {topic} within {timeout} s")


def test_kill_9_with_the_request_in_flight_resumes_the_task_it_created(ballast: Ballast, name: str) -> None:
    topic = f"{name}-t"
    ballast.apply(spec(topic, 3))
    before = ballast.watcher.wait_rf(topic, 3).generation
    tasks_before = len(ballast.topic_configuration_tasks())
    # Cruise Control makes the task at once but answers a minute late: the service dies after writing the batch and
    # sending the request, before it knows the task (once the task is there, however slow the machine).
    ballast.fault("latency", {"endpoint": "topic_configuration", "seconds": 60.0, "after": True})
    ballast.apply(spec(topic, 2))
    batch = open_batch_with(ballast, topic)
    deadline = time.monotonic() + WAIT_S
    while not any(f"reason={batch.batch_id}" in t["RequestURL"] for t in ballast.topic_configuration_tasks()):
        assert time.monotonic() < deadline, f"no task of batch {batch.batch_id} within {WAIT_S:.0f} s"
        time.sleep(0.2)
    ballast.stack.kill("replicas-change", signal.SIGKILL)
    ballast.fault("latency", {"endpoint": "topic_configuration", "seconds": 0.0})
    tasks = ballast.topic_configuration_tasks()
    (created,) = [t for t in tasks if f"reason={batch.batch_id}" in t["RequestURL"]]
    assert len(tasks) == tasks_before + 1
    ballast.stack.start_process("replicas-change")
    ballast.stack.wait_http(ballast.stack.health_url("replicas-change"), "replicas-change")
    done = ballast.watcher.wait_rf(topic, 2)
    assert done.replicas_change.state == "completed"
    sessions = change_sessions(ballast.settings, [topic], after_generation=before)[topic]
    assert sessions == {created["UserTaskId"]}, "the restart found the task by the batch id, not a new one"
    assert len(ballast.topic_configuration_tasks()) == tasks_before + 1


def test_kill_9_before_the_request_was_handled_submits_it_once_after_the_restart(ballast: Ballast, name: str) -> None:
    topic = f"{name}-t"
    ballast.apply(spec(topic, 3))
    ballast.watcher.wait_rf(topic, 3)
    tasks_before = len(ballast.topic_configuration_tasks())
    # Cruise Control would handle the request only after a minute: the service dies first, and the request with it
    # (the simulator drops a request held back whose client has hung up).
    ballast.fault("latency", {"endpoint": "topic_configuration", "seconds": 60.0})
    ballast.apply(spec(topic, 2))
    open_batch_with(ballast, topic)
    ballast.stack.kill("replicas-change", signal.SIGKILL)
    ballast.fault("latency", {"endpoint": "topic_configuration", "seconds": 0.0})
    assert len(ballast.topic_configuration_tasks()) == tasks_before  # nothing reached Cruise Control
    ballast.stack.start_process("replicas-change")
    ballast.stack.wait_http(ballast.stack.health_url("replicas-change"), "replicas-change")
    done = ballast.watcher.wait_rf(topic, 2)
    assert done.replicas_change.state == "completed"
    assert len(ballast.topic_configuration_tasks()) == tasks_before + 1  # submitted again, once


def test_kill_9_of_topic_reconciler_loses_no_spec(ballast: Ballast, name: str) -> None:
    topics = [f"{name}-{i}" for i in range(5)]
    ballast.apply(*(spec(t, 3) for t in topics))
    for t in topics:
        ballast.watcher.wait_rf(t, 3)
    ballast.stack.kill("topic-reconciler", signal.SIGKILL)
    ballast.apply(*(spec(t, 2) for t in topics))  # while the reconciler is down
    ballast.stack.start_process("topic-reconciler")
    for t in topics:
        ballast.watcher.wait_rf(t, 2)
        assert ballast.cluster_rf(t) == 2


def test_client_against_live_simulator_parses_state(ballast: Ballast) -> None:
    import asyncio

    async def read() -> str:
        async with CruiseControlClient(CruiseControlSettings(port=ballast.stack.ports.cruise_control)) as cc:
            state = await cc.state()
            cluster = await cc.kafka_cluster_state()
            assert cluster.broker_state["Summary"]["Brokers"] == 6
            return state.executor.state

    assert asyncio.run(read()) in ("NO_TASK_IN_PROGRESS", "INTER_BROKER_REPLICA_MOVEMENT_TASK_IN_PROGRESS")


def test_kill_9_in_the_middle_of_a_batch_of_500_creations_loses_and_duplicates_nothing(ballast: Ballast,
                                                                                       name: str) -> None:
    """Issue 52: the reconciler creates a look's topics in one request; killed with part of them made and none of
    their statuses published, its restart makes the rest, once each, and keeps the ones it made as its own."""
    topics = [f"{name}-{i:03d}" for i in range(500)]
    made_before = 200
    settings = ballast.stack.settings()

    def on_cluster() -> dict[str, dict]:
        answer = ballast.sim.post("/admin/topics/describe", json={"names": topics})
        return {t["name"]: t for t in answer.json()["topics"]}

    # The cluster makes 200 of the topics (the specs reach the reconciler in one or more batches, each one request)
    # and then holds the answer of the request it is in the middle of: the reconciler waits inside that creation,
    # with some of its topics made and none of their ready statuses published, however fast or slow the machine is.
    ballast.fault("admin/cut-batch", {"afterTopics": made_before})
    try:
        ballast.apply(*(spec(t, 3) for t in topics))
        deadline = time.monotonic() + WAIT_S
        while (held := ballast.sim.get("/faults/stats").json())["heldCreations"] == 0:
            assert time.monotonic() < deadline, f"no creation request held within {WAIT_S:.0f} s"
            time.sleep(0.1)
        assert held["heldCreations"] == 1 and held["heldTopicsMade"] > 0, held
        before = on_cluster()
        assert made_before <= len(before) < len(topics), "some but not all of the batch exist when the reconciler dies"
        ballast.stack.kill("topic-reconciler", signal.SIGKILL)
    finally:
        ballast.fault("reset")
        if ballast.stack.processes["topic-reconciler"].poll() is not None:
            ballast.stack.start_process("topic-reconciler")
    ballast.stack.wait_http(ballast.stack.health_url("topic-reconciler"), "topic-reconciler")

    # The shared stack's spec topic also holds other tests' records, hostile ones with keys that are not UTF-8.
    ours = set(topics)
    generations = {key: record.offset + 1
                   for record, _ in busio.records_with_events(settings.bus, TOPICS.specs, follow=False, idle_s=1.0)
                   if (key := busio.record_key(record.key)) in ours}
    for topic in topics:
        ballast.watcher.wait_status(topic, lambda s, g=generations[topic]: s.ready and s.generation == g,
                                    "ready for its spec")
    after = on_cluster()
    assert sorted(after) == topics
    for topic, described in after.items():
        assert [len(set(p["replicas"])) for p in described["partitions"]] == [3, 3, 3], described
    for topic, described in before.items():  # the topics made before the kill are the same ones, not made again
        assert [p["replicas"] for p in after[topic]["partitions"]] == [p["replicas"] for p in described["partitions"]]
    for topic in topics:
        for status in ballast.watcher.history[topic]:
            # Never an error (TopicAlreadyExists, say) or a warning on the way: only "creating" and ready.
            assert [(c.type, c.reason) for c in status.conditions] in ([("Ready", None)], [("Ready", "Creating")]), \
                status
        assert ballast.watcher.latest[topic].origin == "created", ballast.watcher.describe(topic)
    assert not [d for d in ballast.watcher.dead_letters if (d.record_key or "").startswith(name)]
    def placements() -> dict[str, int] | None:
        placed: dict[str, int] = {}
        for event in busio.events(settings.bus, TOPICS.placements, follow=False, idle_s=1.0):
            if event.topic.startswith(name) and event.reason == "create":
                placed[event.topic] = placed.get(event.topic, 0) + 1
        return placed if set(placed) >= set(topics) - set(before) else None

    # The placements follow the ready statuses (the reconciler tells users first).
    placed = until("a placement for every topic made after the restart", placements)
    assert set(placed.values()) == {1}, "no topic's placement recorded twice"
    assert set(placed) >= set(topics) - set(before), "every topic made after the restart has its placement"

    # Ownership kept: withdrawing the specs deletes every topic, those made just before the kill included.
    ballast.delete(*topics)
    for topic in topics:
        ballast.watcher.wait_status(topic, lambda s: s.deleted and s.partitions is None, "deleted")
    assert on_cluster() == {}
