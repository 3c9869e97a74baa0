"""JBOD on the real cluster through the bus: a remove-disks rebalance (Strimzi's moveReplicasOffVolumes) empties a
directory of a real broker under Ballast's intra-broker throttle, and the directory stays empty until released; a
disk that fails on a running broker is reported in its status, and its offline replicas are moved off."""

from __future__ import annotations

import asyncio
import time

import pytest

from events import TOPICS, BrokerStatus, Decoded, RebalanceStatus
from events import RebalanceState as S
from services.adapters.admin import INTRA_BROKER_THROTTLE
from services.adapters.admin.kafka import KafkaClusterAdmin
from services.adapters.cruise_control import CruiseControlClient
from services.common.outbox import MemoryOutbox
from services.local.kafka_cluster import LocalKafka
from services.local.stack import LocalStack
from tests.integration.harness import Follower
from tests.integration.rebalancing import Rebalancing
from services.rebalancer.app import RebalancerService
from tests.kafka.conftest import decommission, eventually, fill
from tests.unit.records import record

BROKER = 3


async def _dirs(admin: KafkaClusterAdmin, topic: str) -> dict[int, str]:
    """partition -> the directory of its replica on BROKER."""
    described = (await admin.describe_topics([topic]))[topic]
    assert described is not None
    return {p.id: dict(p.log_dirs).get(BROKER, "") for p in described.partitions}


@pytest.mark.timeout(600)
async def test_remove_disks_from_the_bus_empties_a_real_directory_under_the_throttle_and_keeps_it_empty(
        rb: Rebalancing, kafka: LocalKafka, admin: KafkaClusterAdmin, name: str) -> None:
    data0, data1 = (str(d) for d in kafka.log_dirs(BROKER))
    await admin.create_topic(name, 2, 2, assignment=[[BROKER, 1], [1, BROKER]])
    await admin.alter_replica_log_dirs(name, {(0, BROKER): data1, (1, BROKER): data1})
    await eventually(lambda: _all_in(admin, name, data1), f"{name}'s replicas on broker {BROKER} in {data1}")
    fill(kafka.bootstrap_servers, name, 2, 3.0)
    throttle = 1_000_000
    drain = f"{name}-drain"
    rb.request(name=drain, mode="remove-disks", auto_approve=True, intra_broker_throttle=throttle,
               move_replicas_off_volumes=[{"broker_id": BROKER, "volume_ids": [1]}])
    try:
        rb.wait_for(drain, lambda s: s.state in (S.REBALANCING, S.READY), "executing")
        # While it runs: the throttle on the broker, and the data arriving in data-0 at most at its rate.
        samples: list[tuple[float, int]] = []
        throttled_seen = False
        # The drain moves every replica in the directory, other tests' too on the shared cluster (79 in a fresh
        # clone's run): two minutes, and a second more for each.
        summary = rb.latest[drain].summary
        allowed_s = 120 + (summary.num_intra_broker_replica_movements if summary else 0)
        deadline = time.monotonic() + allowed_s
        while rb.latest[drain].state != S.READY:
            assert rb.latest[drain].state == S.REBALANCING, rb.latest[drain]
            config = await admin.broker_configs(BROKER)
            throttled_seen = throttled_seen or config.get(INTRA_BROKER_THROTTLE) == str(throttle)
            dirs = await admin.describe_log_dirs([BROKER])
            samples.append((time.monotonic(), sum(r.size_bytes for d in dirs if d.path == data0
                                                  for r in d.replicas if r.topic == name)))
            if time.monotonic() > deadline:
                raise AssertionError(f"the execution did not end within {allowed_s} s\n"
                                     + await _where_the_drain_is(rb, kafka, admin, drain, name))
            await asyncio.sleep(0.2)
        ready = rb.latest[drain]
        assert throttled_seen, "the intra-broker throttle was never seen on the broker"
        assert ready.summary is not None and ready.summary.num_intra_broker_replica_movements >= 2
        assert ready.summary.num_replica_movements == 0
        moving = [(t, size) for t, size in samples if size > 0]
        assert len(moving) >= 2, samples
        copied, elapsed = moving[-1][1] - moving[0][1], moving[-1][0] - moving[0][0]
        assert copied > 1_000_000 and copied / elapsed < throttle * 1.25, (copied, elapsed)
        assert set((await _dirs(admin, name)).values()) == {data0}
        # Checked on the broker itself: data-1 holds nothing, and the throttle is gone.
        described = {d.path: d for d in await admin.describe_log_dirs([BROKER])}
        assert [r for r in described[data1].replicas if not r.is_future] == []
        await eventually(lambda: _throttle_cleared(admin), "the intra-broker throttle removed")

        # A replica that lands there (Kafka's own choice, or anyone's move) is moved off again.
        seen = len(rb.history[drain])
        await admin.alter_replica_log_dirs(name, {(0, BROKER): data1})
        # The rebalancer says what it found there before it moves it (it may be gone again before a look from
        # here would see it).
        rb.wait(f"{drain}: the replica seen in the drained directory",
                lambda: any(_landed(s, data1) for s in rb.history[drain][seen:]), 60)
        await eventually(lambda: _in(admin, name, 0, data0), "the replica moved off the drained directory", 60)
        kept = rb.wait_for(drain, lambda s: (c := s.condition("DisksEmpty")) is not None and c.status == "True",
                           "DisksEmpty", timeout=30)
        assert "keeps them empty" in (kept.condition("DisksEmpty").message or "")
    finally:
        _give_back(rb, drain)
    await admin.alter_replica_log_dirs(name, {(1, BROKER): data1})
    await eventually(lambda: _in(admin, name, 1, data1), "a replica staying in the released directory")
    await asyncio.sleep(2)  # several of the rebalancer's looks (every 0.5 s)
    assert (await _dirs(admin, name))[1] == data1


async def _where_the_drain_is(rb: Rebalancing, kafka: LocalKafka, admin: KafkaClusterAdmin, drain: str,
                              topic: str) -> str:
    """What a drain that does not end shows: its status, Cruise Control's executor, the topic's replicas in the
    broker's directories (a future replica is the copy of a move), and what the broker logged of moves between its
    directories."""
    dirs = await admin.describe_log_dirs([BROKER])
    replicas = [(d.path, r.partition, r.is_future, r.size_bytes, r.offset_lag)
                for d in dirs for r in d.replicas if r.topic == topic]
    logged = [line for line in kafka.brokers[BROKER].log_file.read_text(errors="replace").splitlines()
              if "AlterLogDirs" in line or "future" in line.lower()]
    return "\n".join([f"status: {rb.latest[drain]}", f"executor: {rb.executor()}",
                      f"replicas (dir, partition, future, bytes, lag): {replicas}",
                      "broker log:", *(line[:300] for line in logged[-30:])])


def _give_back(rb: Rebalancing, drain: str) -> None:
    """Broker BROKER's data-1 back to the later tests of the shared cluster, however this test ended: a drain still
    executing when an assertion failed would go on to Ready and keep the directory empty for the rest of the run
    (a fresh clone's run then failed three other modules' JBOD tests, their replicas moved off data-1). Stopped if
    executing (a stopped drain keeps nothing empty), released if Ready."""
    asked: set[tuple[S, str]] = set()

    def settled() -> bool:
        status = rb.latest.get(drain)
        if status is None or status.released or status.state in (S.STOPPED, S.NOT_READY):
            return True
        action = {S.REBALANCING: "stop", S.READY: "release"}.get(status.state)
        if action is not None and (status.state, action) not in asked:
            asked.add((status.state, action))
            rb.act(drain, action)
        return False

    rb.wait(f"{drain}: released or stopped", settled)


def _landed(status: RebalanceStatus, log_dir: str) -> bool:
    empty = status.condition("DisksEmpty")
    return (empty is not None and empty.reason == "ReplicasLanded"
            and f"broker {BROKER} {log_dir}: 1 replica(s)" in (empty.message or ""))


async def _all_in(admin: KafkaClusterAdmin, topic: str, log_dir: str) -> bool:
    return set((await _dirs(admin, topic)).values()) == {log_dir}


async def _in(admin: KafkaClusterAdmin, topic: str, partition: int, log_dir: str) -> bool:
    return (await _dirs(admin, topic)).get(partition) == log_dir


async def _throttle_cleared(admin: KafkaClusterAdmin) -> bool:
    return INTRA_BROKER_THROTTLE not in await admin.broker_configs(BROKER)


class BrokerWatcher(Follower):
    def __init__(self, stack: LocalStack) -> None:
        self.latest: dict[int, BrokerStatus] = {}
        super().__init__(stack.settings(), [TOPICS.broker_status.name])

    def take(self, decoded: Decoded) -> None:
        if isinstance(decoded.event, BrokerStatus):
            self.latest[decoded.event.broker] = decoded.event


async def test_a_failed_disk_is_reported_the_broker_serves_the_other_and_its_replicas_are_moved_off(
        rb: Rebalancing, kafka_stack: LocalStack, kafka: LocalKafka, admin: KafkaClusterAdmin, name: str) -> None:
    watcher = BrokerWatcher(kafka_stack)
    new = kafka.add_broker("/dc2/r3")
    try:
        data0, data1 = (str(d) for d in kafka.log_dirs(new))
        await admin.create_topic(name, 4, 2, assignment=[[new, 1], [1, new], [new, 2], [2, new]])
        await admin.alter_replica_log_dirs(name, {(0, new): data0, (1, new): data0, (2, new): data1,
                                                 (3, new): data1})

        async def placed() -> bool:
            described = (await admin.describe_topics([name]))[name]
            return described is not None and [dict(p.log_dirs).get(new) for p in described.partitions] == \
                [data0, data0, data1, data1]

        await eventually(placed, "the new broker's replicas in data-0 (partitions 0, 1) and data-1 (2, 3)")
        fill(kafka.bootstrap_servers, name, 4, 0.5)
        watcher.wait("the new broker's status, all online", lambda: new in watcher.latest and
                     watcher.latest[new].condition("LogDirsOffline").status == "False", timeout=30)

        kafka.fail_log_dir(new, 0)  # returns once the broker itself reports data-0 offline
        watcher.wait("LogDirsOffline on the broker's status", lambda: watcher.latest[new].condition(
            "LogDirsOffline").status == "True", timeout=30)
        status = watcher.latest[new]
        assert [(d.path, d.online) for d in status.log_dirs] == [(data0, False), (data1, True)]
        assert data0 in status.condition("LogDirsOffline").message

        # The broker keeps serving the partitions on its healthy disk.
        described = (await admin.describe_topics([name]))[name]
        assert described is not None
        by_id = {p.id: p for p in described.partitions}
        assert all(new in by_id[i].isr for i in (2, 3)), described
        assert all(new not in by_id[i].isr for i in (0, 1)), described

        # Remediation, by a rebalancer of the test's own with it on (the stack's is off, so that other tests'
        # failed disks are left alone): a fix-offline-replicas rebalance moves the offline replicas elsewhere.
        done = await _remediate(kafka_stack, admin)
        assert done.summary is not None and done.summary.num_replica_movements == 2, done.summary

        async def healed() -> bool:
            described = (await admin.describe_topics([name]))[name]
            return described is not None and all(
                len(p.replicas) == 2 and set(p.isr) == set(p.replicas) and not p.offline
                and (p.id >= 2 or new not in p.replicas) for p in described.partitions)

        await eventually(healed, "partitions 0 and 1 re-replicated off the failed disk, everything in sync", 60)
    finally:
        watcher.stop()
        await admin.delete_topic(name)
        await eventually(lambda: _gone(admin, name), f"{name} deleted")
        decommission(kafka, kafka_stack.settings().bus, new)


async def _remediate(stack: LocalStack, admin: KafkaClusterAdmin) -> RebalanceStatus:
    settings = stack.settings()
    settings = settings.model_copy(update={
        "rebalancer": settings.rebalancer.model_copy(update={"remediate_failed_disks": True})})
    cc = CruiseControlClient(settings.cruise_control)
    outbox = MemoryOutbox()
    service = RebalancerService(settings, admin=admin, cruise_control=cc, outbox=outbox)
    rebalancer = service.rebalances
    try:
        await service.start()  # its first look at the brokers: the failed disk, and the request to fix it
        requests = [r for r in outbox.on(TOPICS.rebalance_requests) if r.mode == "fix-offline-replicas"]
        assert len(requests) == 1, outbox.on(TOPICS.rebalance_requests)
        assert requests[0].auto_approve
        await rebalancer.on_request_events([record(TOPICS.rebalance_requests, requests[0], 0)])
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            await rebalancer.tick()
            status = rebalancer.statuses[requests[0].name]
            if status.state in (S.READY, S.NOT_READY):
                break
            await asyncio.sleep(0.5)
        assert status.state == S.READY, status
        return status
    finally:
        await cc.aclose()


async def _gone(admin: KafkaClusterAdmin, topic: str) -> bool:
    return (await admin.describe_topics([topic]))[topic] is None
