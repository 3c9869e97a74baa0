"""The simulated Cruise Control executing on the real cluster: replication-factor changes requested through Ballast
become real partition reassignments, checked on the partitions Kafka describes."""

from __future__ import annotations

import asyncio
import contextlib
import re
import signal
import time
from collections import Counter
from collections.abc import AsyncIterator

import httpx

from events import RebalanceState as S
from services.adapters.admin import AdminError
from services.adapters.admin.kafka import KafkaClusterAdmin
from services.local.kafka_cluster import LocalKafka
from services.local.stack import LocalStack
from services.adapters.cruise_control.client import without_session
from tests.integration.harness import Ballast, is_ongoing, spec
from tests.integration.rebalancing import Rebalancing
from tests.kafka.conftest import decommission, eventually, fill, kill_when_quiet, only


async def _replication(admin: KafkaClusterAdmin, topic: str) -> Counter[int]:
    described = (await admin.describe_topics([topic]))[topic]
    assert described is not None, topic
    return Counter(len(p.replicas) for p in described.partitions)


async def _in_sync(admin: KafkaClusterAdmin, topic: str, rf: int) -> bool:
    """Every partition has ``rf`` replicas, all in sync, led by its first replica's broker or another in sync."""
    described = (await admin.describe_topics([topic]))[topic]
    return described is not None and all(
        len(p.replicas) == rf and set(p.isr) == set(p.replicas) and p.leader in p.replicas
        for p in described.partitions)


async def test_round_trip_3_2_3_on_the_real_partitions(ballast: Ballast, admin: KafkaClusterAdmin, name: str) -> None:
    ballast.apply(spec(name, 3, partitions=4))
    ballast.watcher.wait_rf(name, 3)
    assert await _replication(admin, name) == Counter({3: 4})

    ballast.apply(spec(name, 2, partitions=4))
    ongoing = ballast.watcher.wait_passing(name, is_ongoing, "ongoing")
    assert ongoing.replicas_change.session_id
    ballast.watcher.wait_rf(name, 2)
    assert await _replication(admin, name) == Counter({2: 4})
    await eventually(lambda: _in_sync(admin, name, 2), "2 replicas in sync everywhere")

    ballast.apply(spec(name, 3, partitions=4))
    ballast.watcher.wait_rf(name, 3)
    assert await _replication(admin, name) == Counter({3: 4})
    await eventually(lambda: _in_sync(admin, name, 3), "3 replicas in sync everywhere")
    sessions = {s.replicas_change.session_id for s in ballast.watcher.history[name]
                if s.replicas_change and s.replicas_change.session_id}
    assert len(sessions) == 2, "one Cruise Control task per change"



async def test_fifty_mixed_changes_in_one_request_touch_only_the_named_topics(
        ballast: Ballast, admin: KafkaClusterAdmin, kafka_stack: LocalStack, name: str) -> None:
    # ``a.c`` changes and ``abc`` (which the regex a.c would match) must not; the rest go to 1, 2 or stay at 3.
    topics = [f"{name}.a.c", f"{name}.abc"] + [f"{name}-t{i:02d}" for i in range(48)]
    ballast.apply(*(spec(t, 3, partitions=1) for t in topics))
    for t in topics:
        ballast.watcher.wait_rf(t, 3)
    before = {t["UserTaskId"] for t in ballast.topic_configuration_tasks()}
    targets = {topics[0]: 2, topics[1]: 3} | {t: (1, 2, 3)[i % 3] for i, t in enumerate(topics[2:])}
    # The changes wait for the replicas-change service until all are planned, so that one request takes them all
    # however the machine's load spreads them (the live burst batched in one request: test_replication_factor).
    kafka_stack.kill("replicas-change")
    try:
        ballast.apply(*(spec(t, rf, partitions=1) for t, rf in targets.items()))
        for t in targets:
            ballast.watcher.wait_status(t, lambda s: s.generation >= 2, "the new spec planned")
    finally:
        kafka_stack.start_process("replicas-change")
        kafka_stack.wait_http(kafka_stack.health_url("replicas-change"), "replicas-change")
    for t, rf in targets.items():
        ballast.watcher.wait_rf(t, rf)
    described = await admin.describe_topics(topics)
    assert {t: len(d.partitions[0].replicas) for t, d in described.items()} == targets
    new_tasks = [t for t in ballast.topic_configuration_tasks() if t["UserTaskId"] not in before]
    assert len(new_tasks) == 1, f"expected one topic_configuration request, saw {len(new_tasks)}"
    assert ballast.watcher.latest[topics[1]].replicas_change is None, "abc was never part of a change"
    for t, rf in targets.items():
        await eventually(lambda t=t, rf=rf: _in_sync(admin, t, rf), f"{t} in sync at RF {rf}")


@contextlib.asynccontextmanager
async def slowed(admin: KafkaClusterAdmin, topic: str, bytes_per_s: int) -> AsyncIterator[None]:
    """Replication of ``topic`` throttled by hand (as an operator may), so that a reassignment runs for a while."""
    brokers = [b.id for b in await admin.brokers() if b.alive]
    rate = {k: str(bytes_per_s) for k in THROTTLE_CONFIGS}
    for broker in brokers:
        await admin.alter_broker_configs(broker, rate)
    await admin.alter_configs(topic, dict.fromkeys(THROTTLED_REPLICAS, "*"))
    try:
        yield
    finally:
        for broker in brokers:
            await admin.alter_broker_configs(broker, dict.fromkeys(THROTTLE_CONFIGS))
        await admin.alter_configs(topic, dict.fromkeys(THROTTLED_REPLICAS))


async def test_cruise_control_restart_while_kafka_moves_converges_without_resubmitting(
        ballast: Ballast, kafka: LocalKafka, admin: KafkaClusterAdmin, name: str) -> None:
    ballast.apply(spec(name, 2, partitions=2))
    ballast.watcher.wait_rf(name, 2)
    fill(kafka.bootstrap_servers, name, 2, 2)
    async with slowed(admin, name, 200_000):
        ballast.apply(spec(name, 3, partitions=2))
        ballast.watcher.wait_passing(name, is_ongoing, "ongoing")
        await eventually(lambda: _reassigning(admin, name), "a real reassignment in flight")
        ballast.fault("cruise-control/restart", {"downSeconds": 0.5})
        # Cruise Control forgot the task; Kafka still moves. Ballast concludes nothing while it does.
        await asyncio.sleep(4)
        assert await _reassigning(admin, name), "still moving: the test needs a slow reassignment"
        assert ballast.topic_configuration_tasks() == [], "no resubmission while Kafka moves the replicas"
    ballast.watcher.wait_rf(name, 3)
    await eventually(lambda: _in_sync(admin, name, 3), "3 replicas in sync")
    assert ballast.topic_configuration_tasks() == [], "converged without submitting the change again"
    assert (await _replication(admin, name)) == Counter({3: 2})


async def test_kill_9_of_replicas_change_while_kafka_moves_resumes_the_task(
        ballast: Ballast, kafka: LocalKafka, kafka_stack: LocalStack, admin: KafkaClusterAdmin, name: str) -> None:
    ballast.apply(spec(name, 2, partitions=2))
    ballast.watcher.wait_rf(name, 2)
    fill(kafka.bootstrap_servers, name, 2, 2)
    async with slowed(admin, name, 300_000):
        ballast.apply(spec(name, 3, partitions=2))
        session = ballast.watcher.wait_passing(name, is_ongoing, "ongoing").replicas_change.session_id
        await eventually(lambda: _reassigning(admin, name), "a real reassignment in flight")
        tasks_before = len(ballast.topic_configuration_tasks())
        kafka_stack.kill("replicas-change", signal.SIGKILL)
        kafka_stack.start_process("replicas-change")
        kafka_stack.wait_http(kafka_stack.health_url("replicas-change"), "replicas-change")
    done = ballast.watcher.wait_rf(name, 3)
    assert done.replicas_change is None or done.replicas_change.target_replicas == 3
    sessions = {s.replicas_change.session_id for s in ballast.watcher.history[name]
                if s.replicas_change and s.replicas_change.session_id}
    assert sessions == {session}, "the restarted service resumed the known session instead of resubmitting"
    assert len(ballast.topic_configuration_tasks()) == tasks_before
    await eventually(lambda: _in_sync(admin, name, 3), "3 replicas in sync")


# -- rebalances ------------------------------------------------------------------------------------------------

THROTTLE_CONFIGS = ("leader.replication.throttled.rate", "follower.replication.throttled.rate")
THROTTLED_REPLICAS = ("leader.replication.throttled.replicas", "follower.replication.throttled.replicas")


async def _throttles_left(admin: KafkaClusterAdmin, topic: str) -> dict[str, object]:
    brokers = {b.id: await admin.broker_configs(b.id) for b in await admin.brokers() if b.alive}
    rates = {b: {k: v for k, v in c.items() if k in THROTTLE_CONFIGS} for b, c in brokers.items()}
    described = (await admin.describe_topics([topic]))[topic]
    assert described is not None
    replicas = {k: v for k, v in described.config.items() if k in THROTTLED_REPLICAS and v}
    return {"brokers": {b: r for b, r in rates.items() if r}, "topic": replicas}


async def _no_throttles(admin: KafkaClusterAdmin, topic: str) -> bool:
    return await _throttles_left(admin, topic) == {"brokers": {}, "topic": {}}


async def _hosted(admin: KafkaClusterAdmin, topic: str) -> Counter[int]:
    described = (await admin.describe_topics([topic]))[topic]
    assert described is not None
    return Counter(b for p in described.partitions for b in p.replicas)


async def test_add_then_remove_a_broker_moves_real_data_under_the_throttle(
        rb: Rebalancing, kafka_stack: LocalStack, kafka: LocalKafka, admin: KafkaClusterAdmin, name: str) -> None:
    await admin.create_topic(name, 8, 2, assignment=[[1 + i % 4, 1 + (i + 1) % 4] for i in range(8)])
    fill(kafka.bootstrap_servers, name, 8, 1.5)
    before = await _hosted(admin, name)
    new = kafka.add_broker("/dc2/r3")
    try:
        throttle = 1_000_000
        rb.request(name=f"{name}-up", mode="add-brokers", brokers=[new], replication_throttle=throttle,
                   excluded_topics=only(name))
        proposal = rb.wait_state(f"{name}-up", S.PROPOSAL_READY)
        assert proposal.summary is not None and proposal.summary.data_to_move_mb >= 2, proposal.summary
        rb.act(f"{name}-up", "approve")

        # While it runs: the throttle is on the brokers, and the new broker's disk fills at most at its rate.
        samples: list[tuple[float, int]] = []
        throttled_seen = False
        while rb.latest[f"{name}-up"].state != S.READY:
            assert rb.latest[f"{name}-up"].state in (S.PROPOSAL_READY, S.REBALANCING), rb.latest[f"{name}-up"]
            try:
                dirs = await admin.describe_log_dirs([new])
            except AdminError:  # this client's metadata may not know the new broker for a moment
                dirs = None
            if dirs is not None:
                samples.append((time.monotonic(),
                                sum(r.size_bytes for d in dirs for r in d.replicas if r.topic == name)))
            throttled_seen = throttled_seen or bool((await _throttles_left(admin, name))["brokers"])
            assert len(samples) < 400, "the execution did not end within ~2 minutes"
            await asyncio.sleep(0.25)
        assert throttled_seen, "the replication throttle was never seen on the brokers"
        moving = [(t, size) for t, size in samples if 0 < size]
        copied = moving[-1][1] - moving[0][1]
        elapsed = moving[-1][0] - moving[0][0]
        assert copied > 1_000_000, samples
        rate = copied / elapsed
        assert rate < throttle * 1.25, f"{rate:.0f} B/s copied with a throttle of {throttle} B/s"

        after = await _hosted(admin, name)
        assert after[new] > 0 and all(after[b] <= before[b] for b in before), (before, after)
        # The approval was checked against the proposal Cruise Control computed for the execution (defect 10): on
        # data at rest it is the approved one, recorded beside it.
        up = rb.latest[f"{name}-up"]
        assert up.executed_summary is not None and up.summary is not None
        assert up.executed_summary.num_replica_movements == up.summary.num_replica_movements, up
        assert any("within 20% of the approved one" in (s.message or "") for s in rb.history[f"{name}-up"])
        assert sum(after.values()) == sum(before.values())
        # Removed before the task completed; DescribeConfigs answers from a broker's metadata, which may lag a moment.
        await eventually(lambda: _no_throttles(admin, name), "throttles removed afterwards", 30)
        await eventually(lambda: _in_sync(admin, name, 2), "every replica in sync")

        rb.request(name=f"{name}-down", mode="remove-brokers", brokers=[new], replication_throttle=throttle,
                   excluded_topics=only(name), auto_approve=True)
        done = rb.wait_for(f"{name}-down", lambda s: s.condition("BrokersRemovable") is not None, "removability",
                           timeout=120)
        assert done.state == S.READY and done.condition("BrokersRemovable").status == "True", done
        assert (await _hosted(admin, name))[new] == 0
        await eventually(lambda: _no_throttles(admin, name), "throttles removed after the scale-down", 30)
    finally:
        decommission(kafka, kafka_stack.settings().bus, new)
    assert new not in {b.id for b in await admin.brokers()}
    await eventually(lambda: _in_sync(admin, name, 2), "every replica in sync on the original brokers")


async def test_stop_during_a_real_execution_rolls_back_what_is_in_flight(
        rb: Rebalancing, kafka: LocalKafka, admin: KafkaClusterAdmin, name: str) -> None:
    # Everything on brokers 1 and 2: a full rebalance has real data to move to 3 and 4, slowly.
    await admin.create_topic(name, 6, 2, assignment=[[1, 2], [2, 1]] * 3)
    fill(kafka.bootstrap_servers, name, 6, 2)
    before = {p.id: p.replicas for p in (await admin.describe_topics([name]))[name].partitions}
    rb.request(name=name, auto_approve=True, excluded_topics=only(name), replication_throttle=300_000,
               concurrent_partition_movements_per_broker=1)
    rb.wait_state(name, S.REBALANCING)
    await eventually(lambda: _reassigning(admin, name), "a real reassignment in flight")
    rb.act(name, "stop")
    stopped = rb.wait_state(name, S.STOPPED)
    assert "stopped" in (stopped.message or "").lower()

    await eventually(lambda: _not_reassigning(admin, name), "the in-flight reassignments cancelled")
    after = (await admin.describe_topics([name]))[name]
    moved = [p.id for p in after.partitions if set(p.replicas) != set(before[p.id])]
    assert len(moved) < len(before), "stopped part-way, not after everything moved"
    for p in after.partitions:
        assert len(p.replicas) == 2 and p.leader in p.replicas, p
    await eventually(lambda: _in_sync(admin, name, 2), "a consistent cluster: every partition fully in sync")
    # Cruise Control answers the stop at once, and rolls back (STOPPING_EXECUTION) before it takes the throttles off.
    await eventually(lambda: _no_throttles(admin, name), "throttles removed after the stop")
    await eventually(lambda: _async(rb.executor()["state"] == "NO_TASK_IN_PROGRESS"), "the executor idle")
    executed = [t for t in rb.tasks() if "/rebalance" in t["RequestURL"] and "dryrun=false" in t["RequestURL"]]
    assert executed and executed[-1]["Status"] == "CompletedWithError", "a stopped execution ends with an error"


async def test_a_throttled_rebalance_stopped_after_cruise_control_was_killed_leaves_no_throttle_of_its_own(
        rb: Rebalancing, kafka: LocalKafka, kafka_stack: LocalStack, admin: KafkaClusterAdmin, name: str) -> None:
    """Cruise Control killed mid-execution (kill -9 of the simulator) leaves its replication throttle on the brokers
    and the topic, as the real one does: only its executor's loop takes it off. The rebalance is stopped; once Kafka
    has finished the move it had in flight, Ballast removes what that execution set, and nothing of anyone else's."""
    rate = 300_000
    await admin.create_topic(name, 6, 2, assignment=[[1, 2], [2, 1]] * 3)
    fill(kafka.bootstrap_servers, name, 6, 2)
    other = f"{name}-other"
    await admin.create_topic(other, 1, 2, assignment=[[3, 4]])
    someone_elses = "0:3,0:4"
    await admin.alter_configs(other, dict.fromkeys(THROTTLED_REPLICAS, someone_elses))
    operator_broker = None
    try:
        rb.request(name=name, auto_approve=True, excluded_topics=only(name), replication_throttle=rate,
                   concurrent_partition_movements_per_broker=1)
        rb.wait_state(name, S.REBALANCING)
        await eventually(lambda: _throttled(admin, name, rate), "a reassignment in flight under Cruise Control's "
                                                                 "throttle, on brokers and topic")
        kafka_stack.kill("cluster-sim")
        left = await _throttles_left(admin, name)
        assert left["topic"], left
        # An operator changes one of those brokers' rates meanwhile: that one is someone else's now.
        operator_broker = min(b for b, r in left["brokers"].items() if r.get(THROTTLE_CONFIGS[0]) == str(rate))
        await admin.alter_broker_configs(operator_broker, {THROTTLE_CONFIGS[0]: "777777"})
        rb.act(name, "stop")
        kafka_stack.start_process("cluster-sim")
        kafka_stack.wait_http(f"{kafka_stack.sim_url}/health", "cluster-sim")
        rb.wait_state(name, S.STOPPED)

        async def none_of_its_own() -> bool:
            now = await _throttles_left(admin, name)
            rates = {v for r in now["brokers"].values() for v in r.values()}
            return str(rate) not in rates and now["topic"] == {}

        await eventually(none_of_its_own, "the stopped execution's throttle removed", 120)
        assert (await admin.broker_configs(operator_broker)).get(THROTTLE_CONFIGS[0]) == "777777"
        assert {k: v for k, v in (await admin.topic_configs([other]))[other].items()
                if k in THROTTLED_REPLICAS} == dict.fromkeys(THROTTLED_REPLICAS, someone_elses)
        stopped = rb.wait_for(name, lambda s: s.cruise_control_throttle is None, "the throttle's record settled")
        condition = stopped.condition("ReplicationThrottleLeft")
        assert condition is not None and (condition.status, condition.reason) == ("False", "Removed"), stopped
        assert "Ballast removed it" in (stopped.message or "") and stopped.message.startswith("Stopped;"), stopped
        assert f"broker {operator_broker}: 777777 B/s, someone else's" in (condition.message or ""), condition
    finally:
        sim = kafka_stack.processes.get("cluster-sim")
        if sim is None or sim.poll() is not None:
            kafka_stack.start_process("cluster-sim")
            kafka_stack.wait_http(f"{kafka_stack.sim_url}/health", "cluster-sim")
        if operator_broker is not None:
            await admin.alter_broker_configs(operator_broker, dict.fromkeys(THROTTLE_CONFIGS))
        await admin.alter_configs(other, dict.fromkeys(THROTTLED_REPLICAS))


async def _throttled(admin: KafkaClusterAdmin, topic: str, rate: int) -> bool:
    left = await _throttles_left(admin, topic)
    return bool(left["topic"]) and any(str(rate) in r.values() for r in left["brokers"].values()) \
        and await _reassigning(admin, topic)


async def _reassigning(admin: KafkaClusterAdmin, topic: str) -> bool:
    return bool(await admin.list_reassignments([topic]))


async def _not_reassigning(admin: KafkaClusterAdmin, topic: str) -> bool:
    return not await admin.list_reassignments([topic])


async def _async(value: bool) -> bool:
    return value


# -- what Cruise Control reads -----------------------------------------------------------------------------------


async def test_load_partition_load_and_cluster_state_are_the_real_clusters(
        kafka_stack: LocalStack, kafka: LocalKafka, admin: KafkaClusterAdmin, name: str) -> None:
    await admin.create_topic(name, 2, 2, assignment=[[3, 4], [4, 3]])
    cc = without_session(httpx.AsyncClient(
        base_url=f"http://127.0.0.1:{kafka_stack.ports.cruise_control}/kafkacruisecontrol", timeout=15))
    try:
        async def partitions() -> dict[int, dict] | None:
            answer = (await cc.get("/partition_load", params={"json": "true", "topic": re.escape(name)})).json()
            found = {r["partition"]: r for r in answer["records"]}
            return found if len(found) == 2 and all(r["disk"] >= 2 for r in found.values()) else None

        # Data written now shows as disk (MB) and, while it grows, as bytes in.
        stop = asyncio.Event()

        async def produce() -> None:
            while not stop.is_set():
                await asyncio.to_thread(fill, kafka.bootstrap_servers, name, 2, 0.5)
                await asyncio.sleep(0.2)

        producing = asyncio.create_task(produce())
        try:
            loaded = await eventually(partitions, "partition_load: each partition's real size", timeout_s=60)
            rising = await eventually(
                lambda: _inbound(cc, name), "partition_load: a bytes-in rate from the growing sizes", timeout_s=60)
        finally:
            stop.set()
            await producing
        assert {r["leader"] for r in loaded.values()} <= {3, 4} and rising > 0
        described = (await admin.describe_topics([name]))[name]
        sizes = {p.id: max(r.size_bytes or 0 for r in p.replica_info) for p in described.partitions}
        assert all(sizes[p] / 2**20 >= loaded[p]["disk"] - 1 for p in sizes), (sizes, loaded)

        brokers = {b["Broker"]: b for b in (await cc.get("/load", params={"json": "true"})).json()["brokers"]}
        assert brokers[3]["DiskMB"] >= loaded[0]["disk"] and brokers[3]["Replicas"] > 0

        await kill_when_quiet(kafka, admin, 4)

        async def offline() -> dict | None:
            state = await _finished(cc, "/kafka_cluster_state", {"json": "true"})
            ours = [p for p in state["KafkaPartitionState"]["urp"] if p["topic"] == name]
            return state if len(ours) == 2 and all(p["offline"] == [4] for p in ours) else None

        state = await eventually(offline, "kafka_cluster_state: broker 4's replicas offline", timeout_s=30)
        assert state["KafkaBrokerState"]["OfflineReplicaCountByBrokerId"]["4"] >= 2
        # A dead broker's directories are not known: the real Cruise Control says "broker_dead" in both lists.
        assert state["KafkaBrokerState"]["OnlineLogDirsByBrokerId"]["4"] == ["broker_dead"]
        assert len(state["KafkaBrokerState"]["OnlineLogDirsByBrokerId"]["3"]) == 2
    finally:
        await cc.aclose()


async def _finished(cc: httpx.AsyncClient, path: str, params: dict[str, str]) -> dict:
    """The answer once its user task is done: under load Cruise Control (the simulator too) answers 202 with the
    task's progress, and the task's id is asked again for its answer (a new request would start another task)."""
    answer = await cc.get(path, params=params)
    while answer.status_code == 202:
        await asyncio.sleep(0.5)
        answer = await cc.get(path, params=params, headers={"User-Task-ID": answer.headers["User-Task-ID"]})
    return answer.json()


async def _inbound(cc: httpx.AsyncClient, topic: str) -> float | None:
    answer = (await cc.get("/partition_load", params={"json": "true", "topic": re.escape(topic)})).json()
    inbound = sum(r["networkInbound"] for r in answer["records"])
    return inbound if inbound > 0 else None
