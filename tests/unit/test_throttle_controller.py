"""What the controller takes from the bus: a rebalance that executes with a fixed throttle of its own fixes that kind
of throttle for as long as it executes; Cruise Control's newest load sample per broker is the one kept. And its looks
on a fake cluster at the admin port, under a fake clock: a back-off's hold is counted from when the floor is set."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from pydantic import ByteSize

from events import TOPICS, BrokerLoadSample, RebalanceRequest, RebalanceState, RebalanceStatus
from events.models import Event
from events.topics import BusTopic
from services.adapters.admin import BrokerInfo, LogDirInfo, PartitionInfo, Reassignment
from services.common.outbox import MemoryOutbox
from services.common.settings import ByteRates, ThrottleSettings
from services.throttle.controller import ThrottleController
from services.throttle.ownership import LEADER_RATE

NOW = datetime(2026, 11, 27, 12, 0, tzinfo=UTC)


def controller() -> ThrottleController:
    return ThrottleController(ThrottleSettings(), admin=None, outbox=MemoryOutbox())  # type: ignore[arg-type]


def rebalance(name: str, state: RebalanceState, **request: object) -> RebalanceStatus:
    return RebalanceStatus(name=name, state=state, request=RebalanceRequest(name=name, **request), updated_at=NOW)


def test_a_rebalance_executing_with_a_replication_throttle_fixes_the_inter_broker_kind() -> None:
    c = controller()
    c.take_rebalance(rebalance("r", RebalanceState.REBALANCING, replication_throttle=5_000_000))
    assert c.fixed_kinds() == {"inter-broker"}
    c.take_rebalance(rebalance("r", RebalanceState.READY, replication_throttle=5_000_000))
    assert c.fixed_kinds() == set()


def test_a_remove_disks_rebalance_with_an_intra_broker_throttle_fixes_that_kind_while_it_stops_too() -> None:
    c = controller()
    c.take_rebalance(rebalance("d", RebalanceState.STOPPING, mode="remove-disks", intra_broker_throttle=1_000_000,
                               move_replicas_off_volumes=[{"broker_id": 1, "volume_ids": [0]}]))
    assert c.fixed_kinds() == {"intra-broker"}


def test_a_rebalance_without_a_throttle_or_not_executing_fixes_nothing() -> None:
    c = controller()
    c.take_rebalance(rebalance("a", RebalanceState.REBALANCING))
    c.take_rebalance(rebalance("b", RebalanceState.PROPOSAL_READY, replication_throttle=5_000_000))
    assert c.fixed_kinds() == set()


def test_the_newest_load_sample_of_each_broker_is_kept() -> None:
    c = controller()
    newer = BrokerLoadSample(broker=1, sampled_at=NOW, bytes_in_kb_s=10.0)
    c.take_load(newer)
    c.take_load(BrokerLoadSample(broker=1, sampled_at=NOW - timedelta(seconds=30), bytes_in_kb_s=99.0))
    assert c.load == {1: newer}


class Clock:
    def __init__(self) -> None:
        self.now = NOW

    def __call__(self) -> datetime:
        return self.now

    def pass_s(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


class SlowCluster:
    """Brokers 1-3 at the admin port; topic ``moving`` copies from broker 1 to 3, and ``outside`` has a follower on
    broker 2. ``kill(2)`` stops that follower: the next partition read sees it out of the ISR, and takes ``read_s`` on
    the clock (a cluster busy with a broker dying)."""

    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self.alive = {1, 2, 3}
        self.read_s = 0.0
        self.configs: dict[int, dict[str, str]] = {1: {}, 2: {}, 3: {}}
        self.topics: dict[str, dict[str, str]] = {"moving": {}, "outside": {}}

    def kill(self, broker: int) -> None:
        self.alive.discard(broker)

    async def brokers(self) -> list[BrokerInfo]:
        return [BrokerInfo(b, alive=b in self.alive) for b in (1, 2, 3)]

    async def list_reassignments(self, names: Sequence[str] | None = None) -> list[Reassignment]:
        return [Reassignment("moving", 0, (1, 3), adding=(3,))]

    async def describe_log_dirs(self, brokers: Sequence[int] | None = None, *, replicas: bool = True
                                ) -> list[LogDirInfo]:
        return [LogDirInfo(b, "/data") for b in sorted(self.alive)]

    async def partition_states(self) -> dict[str, tuple[PartitionInfo, ...]]:
        self.clock.pass_s(self.read_s)
        outside = tuple(b for b in (1, 2) if b in self.alive)
        return {"moving": (PartitionInfo(0, (1, 3), leader=1, isr=(1,)),),
                "outside": (PartitionInfo(0, (1, 2), leader=1, isr=outside,
                                          offline=tuple(b for b in (1, 2) if b not in self.alive)),)}

    async def broker_configs(self, broker: int) -> dict[str, str]:
        return dict(self.configs[broker])

    async def alter_broker_configs(self, broker: int, config: Mapping[str, str | None]) -> None:
        for key, value in config.items():
            if value is None:
                self.configs[broker].pop(key, None)
            else:
                self.configs[broker][key] = value

    async def topic_configs(self, names: Sequence[str]) -> dict[str, dict[str, str]]:
        return {n: dict(self.topics[n]) for n in names}

    async def alter_list_config(self, name: str, key: str, *, add: Sequence[str] = (),
                                remove: Sequence[str] = ()) -> None:
        items = [i for i in self.topics[name].get(key, "").split(",") if i and i not in remove]
        self.topics[name][key] = ",".join(items + [i for i in add if i not in items])


async def test_a_back_off_holds_for_its_hold_from_when_the_floor_is_set_however_long_the_look_took() -> None:
    """A look that reads the partitions for longer than the hold (4.8 s of a 3 s hold, seen under load while a broker
    was dying): the next look, a second after it, still holds the rates at the floor and names the partition."""
    floor, hold_s = 100_000, 3.0
    clock = Clock()
    cluster = SlowCluster(clock)
    outbox = MemoryOutbox()
    settings = ThrottleSettings(interval_s=1, floor=ByteSize(floor), ceiling=ByteSize(8 * floor),
                                back_off_hold_s=hold_s, traffic_source="log-growth",
                                network_capacity=ByteRates(default=ByteSize(100 * floor)))
    c = ThrottleController(settings, cluster, outbox, clock=clock)  # type: ignore[arg-type]
    await c.start()
    for _ in range(3):  # the rate climbs from the floor while nothing lags
        await c.look()
        clock.pass_s(1)
    assert int(cluster.configs[1][LEADER_RATE]) > floor
    cluster.kill(2)
    cluster.read_s = hold_s + 1.8
    await c.look()
    assert cluster.configs[1][LEADER_RATE] == str(floor)
    cluster.read_s = 0.0
    clock.pass_s(1)
    await c.look()
    assert cluster.configs[1][LEADER_RATE] == str(floor), "the hold ended before the followers had it at the floor"
    assert c.status.back_off == "isr-back-off" and c.status.lagging_partitions == ["outside-0"], c.status
    published = outbox.on(TOPICS.throttle_status)[-1]
    assert published.back_off == "isr-back-off" and published.lagging_partitions == ["outside-0"], published
    clock.pass_s(hold_s)
    await c.look()
    assert int(cluster.configs[1][LEADER_RATE]) > floor, "the hold ended: the rate climbs again"
    assert c.status.back_off is None and c.status.lagging_partitions == []


class BusDown(Exception):
    pass


class FailingOutbox(MemoryOutbox):
    """A bus whose next status send fails (its partition's leader died), once ``fail_next_status`` is set."""

    fail_next_status = False

    async def publish(self, topic: BusTopic[Any], event: Event, *, correlation_id: str | None = None,
                      event_id: str | None = None) -> asyncio.Future[Any]:
        if topic == TOPICS.throttle_status and self.fail_next_status:
            self.fail_next_status = False
            raise BusDown("the status partition's leader is gone")
        return await super().publish(topic, event, correlation_id=correlation_id, event_id=event_id)


async def test_a_status_whose_send_failed_is_sent_at_the_next_look_though_nothing_changed_since() -> None:
    clock = Clock()
    cluster = SlowCluster(clock)
    outbox = FailingOutbox()
    settings = ThrottleSettings(interval_s=1, back_off_hold_s=60, traffic_source="log-growth",
                                network_capacity=ByteRates(default=ByteSize(100_000_000)))
    c = ThrottleController(settings, cluster, outbox, clock=clock)  # type: ignore[arg-type]
    await c.start()
    await c.look()
    assert outbox.on(TOPICS.throttle_status)[-1].back_off is None
    cluster.kill(2)
    outbox.fail_next_status = True
    clock.pass_s(1)
    with pytest.raises(BusDown):  # the service's timer logs it and looks again at its next tick
        await c.look()
    clock.pass_s(1)
    await c.look()  # the same back-off, the same rates: nothing changed since the status that was not sent
    published = outbox.on(TOPICS.throttle_status)[-1]
    assert published.back_off == "isr-back-off" and published.lagging_partitions == ["outside-0"], published
