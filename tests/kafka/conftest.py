"""The real-Kafka suite: one real KRaft cluster (a controller and 4 brokers in /dc1/r1, /dc1/r2, /dc2/r1, /dc2/r2,
two log directories each) per test run, with the services on it as their bus and managed cluster, and the simulated
Cruise Control beside it. Tests share it, so each uses topic names of its own and puts back any broker it stops."""

from __future__ import annotations

import asyncio
import os
import re
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import TypeVar

import pytest
from confluent_kafka import Producer

from events import TOPICS, BrokerForgotten
from services.adapters.admin.kafka import KafkaClusterAdmin
from services.common import busio
from services.common.settings import BusSettings
from services.local.kafka_cluster import LocalKafka
from services.local.stack import LocalStack
from tests.integration.conftest import TEST_ENV
from tests.integration.harness import Ballast
from tests.integration.rebalancing import Rebalancing

T = TypeVar("T")

KAFKA_ENV = {
    **TEST_ENV,
    # Creating topics while a broker is down (seed 002) is tested here on real brokers.
    "BALLAST_PLACEMENT__UNDER_REPLICATED": "enabled_prefer_observed",
    # The brokers are asked for every second, not every 5 s: a stopped broker is noticed within a second or so.
    "BALLAST_PLACEMENT__OBSERVE_INTERVAL_S": "1",
    # Placement reads the cluster's assignments and log directories afresh for every test's topics, before placing.
    "BALLAST_PLACEMENT__VIEW_MAX_AGE_S": "1",
    "BALLAST_PLACEMENT__VIEW_STALE_MAX_S": "1",
    # Failed disks (seed 004) are reported within a look at the brokers (remediation is tested with a rebalancer of
    # its own: on here, it would act on every test that fails a disk). A look describes every log directory of every
    # broker, and the brokers size every partition for it: every 2 s, not every second, with the hundreds of
    # partitions the tests leave.
    "BALLAST_REBALANCER__OBSERVE_INTERVAL_S": "2",
    # The simulator reads the model afresh before every answer that needs it; its own reads in between only sample
    # the sizes its load rates come from (a 60 s window). Every 2 s, with the hundreds of topics the tests leave, they
    # took a tenth of a core in the simulator and as much again in the brokers.
    "BALLAST_SIMULATOR__SYNC_INTERVAL_S": "10",
    # A burst of specs reaches the replicas-change service spread over more than the default 0.3 s batch window when
    # this 2-core machine is busy (seen: fifty changes in two requests); the batching test counts one.
    "BALLAST_REPLICAS_CHANGE__BATCH_QUIET_S": "0.3",
    "BALLAST_REPLICAS_CHANGE__BATCH_WINDOW_S": "1.5",
}

# The shared cluster holds hundreds of partitions by the end of the run, and each follower asks each leader for them
# twice a second while idle: idle, with 150 topics, the cluster took 24-27 % of a core with Kafka's 500 ms wait and
# 18 % with 2 s. A leader answers a waiting follower as soon as a record arrives, so replication is as fast; only a
# follower's high watermark, and so what a consumer reading from that follower sees, can lag by up to the wait
# (test_follower_fetching waits on conditions, not on time).
#
# num.partitions is not Kafka's default (1), so that reading the brokers' topic defaults is told from falling back to
# Kafka's (test_admin; a KafkaTopic without partitions takes it).
KAFKA_OVERRIDES = {"replica.fetch.wait.max.ms": "2000", "num.partitions": "2"}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/kafka" in str(item.path):
            item.add_marker(pytest.mark.kafka)


# Package-scoped: the cluster stops when the last test of tests/kafka has run, not when the session ends (idle, it
# still takes a third of a core, which the tests that follow it in the same run need).
@pytest.fixture(scope="package")
def kafka_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalStack]:
    yield from started_stack(tmp_path_factory, "kafka-stack")


def started_stack(tmp_path_factory: pytest.TempPathFactory, name: str) -> Iterator[LocalStack]:
    """A real Kafka cluster with the simulator and Ballast's services on it, stopped when its user is done."""
    run_dir: Path = tmp_path_factory.mktemp(name)
    stack = LocalStack(run_dir, env=KAFKA_ENV, kafka=True, kafka_overrides=KAFKA_OVERRIDES)
    try:
        stack.start()
        yield stack
    finally:
        stack.stop()


@pytest.fixture(scope="package")
def kafka(kafka_stack: LocalStack) -> LocalKafka:
    assert kafka_stack.kafka is not None
    return kafka_stack.kafka


@pytest.fixture(scope="package")
def ballast(kafka_stack: LocalStack) -> Iterator[Ballast]:
    client = Ballast(kafka_stack)
    yield client
    client.close()


@pytest.fixture
async def admin(kafka: LocalKafka) -> AsyncIterator[KafkaClusterAdmin]:
    client = KafkaClusterAdmin({"bootstrap_servers": kafka.bootstrap_servers}, timeout_s=15)
    yield client
    await client.aclose()


@pytest.fixture(autouse=True)
def brokers_back(request: pytest.FixtureRequest) -> Iterator[None]:
    """A test that stops or kills a broker gets it back even when it fails, so the next test has the whole cluster."""
    yield
    if "kafka" in request.fixturenames:
        cluster: LocalKafka = request.getfixturevalue("kafka")
        for broker, node in list(cluster.brokers.items()):
            if not node.running:
                cluster.start_broker(broker)


@pytest.fixture(scope="module")
def rb(kafka_stack: LocalStack) -> Iterator[Rebalancing]:
    """Rebalance requests and actions on the bus, and the statuses that come back."""
    client = Rebalancing(kafka_stack)
    client.wait_brokers_known()
    yield client
    client.close()


def decommission(kafka: LocalKafka, bus: BusSettings, broker: int) -> None:
    """A broker a test added leaves for good: stopped, unregistered, and forgotten as an operator would (`ballast
    brokers forget`). Not forgotten, it stayed an observed broker, offline, and placement (enabled_prefer_observed)
    kept placeholders for it in every later test's topics on the shared cluster."""
    kafka.decommission_broker(broker)
    busio.publish(bus, TOPICS.observed_brokers, [BrokerForgotten(id=broker)])


@pytest.fixture
def name(request: pytest.FixtureRequest) -> str:
    return f"{request.node.name.removeprefix('test_')[:30].replace('_', '-')}-{uuid.uuid4().hex[:6]}"


def only(topic: str) -> str:
    """``excluded_topics`` for a rebalance that may move only ``topic`` (the cluster is shared with Ballast's bus)."""
    return f"(?!{re.escape(topic)}$).*"


def fill(bootstrap_servers: str, topic: str, partitions: int, mb_each: float) -> None:
    """Write ``mb_each`` MB of incompressible data to each partition of ``topic`` (real bytes for moves to copy)."""
    producer = Producer({"bootstrap.servers": bootstrap_servers, "linger.ms": 20, "compression.type": "none",
                         "acks": "all"})
    chunk = 100 * 1024
    for partition in range(partitions):
        for _ in range(int(mb_each * 1024 * 1024 / chunk)):
            producer.produce(topic, os.urandom(chunk), partition=partition)
            producer.poll(0)
    assert producer.flush(60) == 0, "records left unsent"


async def eventually(check: Callable[[], Awaitable[T | None]], what: str, timeout_s: float = 240.0,
                     interval_s: float = 0.25) -> T:
    """Poll ``check`` until it returns something other than None or False; fail with ``what`` and the last value.
    The deadline is generous: a cluster on a crowded machine is slow, not wrong (seen beside another suite: a
    placeholder filled after more than 60 s)."""
    deadline = time.monotonic() + timeout_s
    last: object = None
    while time.monotonic() < deadline:
        try:
            last = await check()
        except Exception as exc:  # noqa: BLE001 -- a cluster in motion answers with errors for a while
            last = exc
        else:
            if last is not None and last is not False:
                return last  # type: ignore[return-value]
        await asyncio.sleep(interval_s)
    raise AssertionError(f"timed out after {timeout_s:.0f} s waiting for {what}; last: {last!r}")


async def no_move_between_dirs(admin: KafkaClusterAdmin, broker: int) -> bool:
    """True once ``broker`` copies no replica between its directories. Kafka 4.3 killed in the middle of such a move can
    leave the replica in both directories, and then refuses to start ("Duplicate log directories ... replacing current
    replica with future replica"; seen once, a broker killed 4 s after a move the topic reconciler had asked for):
    a test that kills a broker to see something else waits for its moves to end first."""
    dirs = await admin.describe_log_dirs([broker])
    return not any(r.is_future for d in dirs for r in d.replicas)


async def kill_when_quiet(kafka: LocalKafka, admin: KafkaClusterAdmin, broker: int) -> None:
    """``kill_broker``, once the broker copies no replica between its directories (``no_move_between_dirs``)."""
    await eventually(lambda: no_move_between_dirs(admin, broker), f"broker {broker}'s moves between directories ended")
    kafka.kill_broker(broker)
