"""Cordoned log directories (issue 55, KIP-1066) on the real Kafka 4.3.1 cluster: every directory of one broker
cordoned with `ballast brokers cordon`, and one directory of another through Kafka's own broker config
``cordoned.log.dirs`` (IncrementalAlterConfigs, as kafka-configs.sh sets it); the topics Ballast creates then have no
replica on the first (as Kafka's own placer gives none) and none in the second's cordoned directory, with either
placer; uncordoned, the broker takes new replicas again."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import pytest

from events import TOPICS, BrokerStatus
from events.conditions import LOG_DIRS_CORDONED
from services.common import busio
from services.adapters.admin import CORDONED_LOG_DIRS
from services.adapters.admin.kafka import KafkaClusterAdmin
from services.local.kafka_cluster import LocalKafka
from services.local.stack import LocalStack
from tests.integration.harness import Ballast, spec
from tests.kafka.conftest import decommission, eventually, kill_when_quiet
from tests.kafka.test_log_dirs_cli import ballast as cli

FULL, PARTLY = 4, 1  # the broker cordoned whole, and the one with one directory cordoned


@pytest.fixture
async def cordons(kafka_stack: LocalStack, admin: KafkaClusterAdmin) -> AsyncIterator[str]:
    """Broker 4 cordoned whole and one directory of broker 1 (the other kept), removed again whatever happens: the
    cluster is shared with the package's other tests and with the bus."""
    dirs = sorted(d.path for d in await admin.describe_log_dirs([PARTLY], replicas=False))
    kept, cordoned = dirs[0], dirs[1]
    try:
        said = cli(kafka_stack, "brokers", "cordon", str(FULL), "--yes").stdout
        assert f"broker {FULL}: cordoned.log.dirs: none -> *" in said, said
        await admin.alter_broker_configs(PARTLY, {CORDONED_LOG_DIRS: cordoned})
        shown = {(d.broker, d.path): d.cordoned for d in await admin.describe_log_dirs([FULL, PARTLY], replicas=False)}
        assert shown[(PARTLY, cordoned)] and not shown[(PARTLY, kept)]
        assert all(c for (broker, _), c in shown.items() if broker == FULL)
        yield kept
    finally:
        for broker in (FULL, PARTLY):
            await admin.alter_broker_configs(broker, {CORDONED_LOG_DIRS: None})


@pytest.mark.timeout(600)
async def test_no_new_replica_lands_on_a_cordoned_broker_or_directory_and_uncordoned_it_is_used_again(
        kafka_stack: LocalStack, ballast: Ballast, admin: KafkaClusterAdmin, cordons: str, name: str) -> None:
    kept = cordons
    # Said within a look of the rebalancer's (BALLAST_REBALANCER__OBSERVE_INTERVAL_S), set by whoever set it.
    bus = kafka_stack.settings().bus

    async def said() -> BrokerStatus | None:
        status = busio.latest(bus, TOPICS.broker_status, timeout_s=30).get(str(FULL))
        told = status.condition(LOG_DIRS_CORDONED) if status is not None else None
        return status if told is not None and told.reason == "AllCordoned" else None

    status = await eventually(said, f"broker {FULL}'s status saying it is cordoned")
    assert all(d.cordoned for d in status.log_dirs)
    striped = spec(f"{name}-s", 3, partitions=8)
    multi = spec(f"{name}-m", 3, partitions=8).model_copy(update={"placer": "multi-level"})
    ballast.apply(striped, multi)
    for topic in (striped.name, multi.name):
        ballast.watcher.wait_status(topic, lambda s: s.ready, "ready")

    async def placed() -> dict | None:
        """Each topic's replicas, once the brokers list every replica on broker 1 in a directory (a replica just
        made may not be in DescribeLogDirs' answer yet)."""
        described = await admin.describe_topics([striped.name, multi.name])
        found = {topic: ([p.replicas for p in d.partitions],
                         {r.log_dir for p in d.partitions for r in p.replica_info if r.broker == PARTLY})
                 for topic, d in described.items() if d is not None}
        return found if len(found) == 2 and all(None not in dirs for _, dirs in found.values()) else None

    for topic, (replicas, dirs) in (await eventually(placed, "every replica's directory described")).items():
        assert all(FULL not in r for r in replicas), topic
        assert dirs == {kept}, topic
    for broker in (FULL, PARTLY):
        await admin.alter_broker_configs(broker, {CORDONED_LOG_DIRS: None})
    later = spec(f"{name}-u", 3, partitions=8)
    ballast.apply(later)
    ballast.watcher.wait_status(later.name, lambda s: s.ready, "ready")
    [after] = (await admin.describe_topics([later.name])).values()
    assert after is not None and any(FULL in p.replicas for p in after.partitions)


@pytest.mark.timeout(600)
async def test_a_broker_is_decommissioned_end_to_end_and_an_rf_raise_meanwhile_keeps_off_it(
        kafka_stack: LocalStack, kafka: LocalKafka, ballast: Ballast, admin: KafkaClusterAdmin, name: str) -> None:
    """`ballast brokers decommission N --wait` on a broker added for the test (the package's other topics, some at
    RF 4, could not all leave one of the first four): cordoned, drained by its remove-brokers rebalance, said safe to
    remove; an RF raise asked meanwhile is held (Cruise Control's proposal would use the drained broker, the
    emptiest) and goes through once the broker has left."""
    broker = kafka.add_broker("/dc2/r2")
    raised = spec(f"{name}-r", 2, partitions=6)
    drained = f"{name}-d"
    try:
        await eventually(lambda: _alive(admin, broker), f"broker {broker} alive")
        # Not Ballast's: the drain moves every replica off the broker, whoever's topic it is.
        await admin.create_topic(drained, 4, 2, assignment=[[broker, 1], [2, broker], [broker, 3], [4, broker]])
        ballast.apply(raised)
        ballast.watcher.wait_status(raised.name, lambda s: s.ready, "ready")
        # Cordoned by hand first (kafka-configs would do the same): `describe` marks the replicas it holds, and the
        # decommission finds the cordon there already.
        await admin.alter_broker_configs(broker, {CORDONED_LOG_DIRS: "*"})
        shown = json.loads(cli(kafka_stack, "describe", drained, "-o", "json").stdout)
        details = [r for p in shown["cluster"]["partitionDetails"] for r in p["replicaDetails"]]
        assert {r["broker"] for r in details if r["cordoned"]} == {broker}
        assert all(r["cordoned"] for r in details if r["broker"] == broker)
        done = cli(kafka_stack, "brokers", "decommission", str(broker), "--yes", "--wait", "--timeout", "240")
        assert "cordoned.log.dirs already *" in done.stdout, done.stdout
        assert f"broker {broker}: safe to remove: it hosts no replica" in done.stdout, done.stdout
        hosted = [t for t, parts in (await admin.assignments()).items() for r in parts if broker in r]
        assert hosted == [], f"broker {broker} still hosts replicas of {sorted(set(hosted))}"
        ballast.apply(raised.model_copy(update={"replicas": 3}))
        held = ballast.watcher.wait_status(
            raised.name, lambda s: s.replicas_change is not None and "cordoned" in (s.replicas_change.message or ""),
            "its RF raise held by the cordon")
        assert held.replicas_change is not None and held.replicas_change.state == "pending"
        [now] = (await admin.describe_topics([raised.name])).values()
        assert now is not None and all(broker not in p.replicas for p in now.partitions)
    finally:
        await admin.delete_topic(drained)
        # It leaves cordoned. Uncordoned first, it could take the held RF raise in the moment before it stopped
        # (Cruise Control's proposal puts new replicas on the emptiest broker), and a reassignment onto a broker that
        # then leaves never ends: every later execution would be refused as ongoing. Its cordon stays in the metadata
        # under its id, which the local cluster never gives another broker.
        decommission(kafka, ballast.settings.bus, broker)
        # Cruise Control keeps a removed broker out of later optimizations for two weeks
        # (removal.history.retention.time.ms); a restart forgets it, for the package's other tests.
        ballast.fault("cruise-control/restart", {"downSeconds": 0.5})
    ballast.watcher.wait_status(raised.name, lambda s: s.ready and s.replicas == 3, "raised to RF 3 once it left")


async def _alive(admin: KafkaClusterAdmin, broker: int) -> bool:
    return any(b.id == broker and b.alive for b in await admin.brokers())


@pytest.mark.timeout(600)
async def test_placeholders_for_a_killed_broker_are_filled_when_it_returns_and_never_on_a_cordoned_one(
        kafka: LocalKafka, ballast: Ballast, admin: KafkaClusterAdmin, name: str) -> None:
    """Broker 3 killed, broker 4 cordoned: an RF 3 topic has only brokers 1 and 2 to be placed on now, so it is
    created with a placeholder kept for broker 3 (seed 002, enabled_prefer_observed), filled when 3 returns; broker
    4, alive but cordoned, gets nothing (without the cordon the three alive brokers would have taken it whole). The
    package's ``brokers_back`` starts broker 3 again if the test fails first."""
    await admin.alter_broker_configs(FULL, {CORDONED_LOG_DIRS: "*"})
    await kill_when_quiet(kafka, admin, 3)
    try:
        topic = spec(name, 3, partitions=4).model_copy(update={"placer": "multi-level"})
        ballast.apply(topic)
        status = ballast.watcher.wait_status(name, lambda s: s.ready, "created under-replicated")
        assert status.condition("UnderReplicated").status == "True"
        [created] = (await admin.describe_topics([name])).values()
        assert created is not None and all(sorted(p.replicas) == [1, 2] for p in created.partitions)
        kafka.start_broker(3)

        async def filled():  # noqa: ANN202
            [now] = (await admin.describe_topics([name])).values()
            return now if now is not None and all(len(p.replicas) == 3 for p in now.partitions) else None

        after = await eventually(filled, "the placeholders filled")
        assert all(sorted(p.replicas) == [1, 2, 3] for p in after.partitions), after.partitions
    finally:
        await admin.alter_broker_configs(FULL, {CORDONED_LOG_DIRS: None})
