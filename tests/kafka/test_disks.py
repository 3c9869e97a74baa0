"""JBOD on the real cluster through the bus: a remove-disks rebalance (Strimzi's moveReplicasOffVolumes) empties a
directory of a real broker under Ballast's intra-broker throttle, and the directory stays empty until released."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator

import pytest

from events import RebalanceState as S
from services.common.admin import INTRA_BROKER_THROTTLE
from services.common.admin.kafka import KafkaClusterAdmin
from services.local.kafka_cluster import LocalKafka
from services.local.stack import LocalStack
from tests.integration.rebalancing import Rebalancing
from tests.kafka.conftest import eventually, fill

BROKER = 3


@pytest.fixture(scope="module")
def rb(kafka_stack: LocalStack) -> Iterator[Rebalancing]:
    client = Rebalancing(kafka_stack)
    client.wait_brokers_known()
    yield client
    client.close()


async def _dirs(admin: KafkaClusterAdmin, topic: str) -> dict[int, str]:
    """partition -> the directory of its replica on BROKER."""
    described = (await admin.describe_topics([topic]))[topic]
    assert described is not None
    return {p.id: dict(p.log_dirs).get(BROKER, "") for p in described.partitions}


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
        rb.wait_for(drain, lambda s: s.state in (S.REBALANCING, S.READY), "executing", timeout=60)
        # While it runs: the throttle on the broker, and the data arriving in data-0 at most at its rate.
        samples: list[tuple[float, int]] = []
        throttled_seen = False
        while rb.latest[drain].state != S.READY:
            assert rb.latest[drain].state == S.REBALANCING, rb.latest[drain]
            config = await admin.broker_configs(BROKER)
            throttled_seen = throttled_seen or config.get(INTRA_BROKER_THROTTLE) == str(throttle)
            dirs = await admin.describe_log_dirs([BROKER])
            samples.append((time.monotonic(), sum(r.size_bytes for d in dirs if d.path == data0
                                                  for r in d.replicas if r.topic == name)))
            assert len(samples) < 600, "the execution did not end within ~2 minutes"
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
        await admin.alter_replica_log_dirs(name, {(0, BROKER): data1})
        await eventually(lambda: _in(admin, name, 0, data1), "the replica landing in the drained directory")
        await eventually(lambda: _in(admin, name, 0, data0), "the replica moved off the drained directory", 60)
        kept = rb.wait_for(drain, lambda s: (c := s.condition("DisksEmpty")) is not None and c.status == "True",
                           "DisksEmpty", timeout=30)
        assert "keeps them empty" in (kept.condition("DisksEmpty").message or "")
    finally:
        rb.act(drain, "release")
    rb.wait_for(drain, lambda s: s.released, "released", timeout=30)
    await admin.alter_replica_log_dirs(name, {(1, BROKER): data1})
    await eventually(lambda: _in(admin, name, 1, data1), "a replica staying in the released directory")
    await asyncio.sleep(2)  # several of the rebalancer's looks (every 0.5 s)
    assert (await _dirs(admin, name))[1] == data1


async def _all_in(admin: KafkaClusterAdmin, topic: str, log_dir: str) -> bool:
    return set((await _dirs(admin, topic)).values()) == {log_dir}


async def _in(admin: KafkaClusterAdmin, topic: str, partition: int, log_dir: str) -> bool:
    return (await _dirs(admin, topic)).get(partition) == log_dir


async def _throttle_cleared(admin: KafkaClusterAdmin) -> bool:
    return INTRA_BROKER_THROTTLE not in await admin.broker_configs(BROKER)
