"""The lease's rules: the owner is whoever holds partition 0; an owner that is given the partition away or dropped
from the group exits at once, except while it is stopping on its own."""

from __future__ import annotations

from confluent_kafka import TopicPartition

from events import TOPICS
from services.common.lease import Lease
from services.common.settings import BusSettings


def lease() -> tuple[Lease, list[str]]:
    exits: list[str] = []
    # No broker is contacted: librdkafka connects only when polled.
    return Lease(BusSettings(bootstrap_servers="127.0.0.1:1"), "svc", on_lost=lambda: exits.append("exit")), exits


def parts(*numbers: int) -> list[TopicPartition]:
    return [TopicPartition(TOPICS.leases.name, n) for n in numbers]


def test_partition_zero_makes_the_owner_and_keeping_it_across_rebalances_is_quiet() -> None:
    held, exits = lease()
    held._assigned(None, parts(1))
    assert not held.owner
    held._assigned(None, parts(0))
    held._assigned(None, parts(0))  # the next rebalance (eager: everything revoked first) gives it back
    assert held.owner and exits == []


def test_an_owner_given_away_or_dropped_exits() -> None:
    given, exits = lease()
    given._assigned(None, parts(0))
    given._assigned(None, parts())
    assert exits == ["exit"] and not given.owner
    dropped, exits = lease()
    dropped._assigned(None, parts(0))
    dropped._dropped(None, parts(0))
    assert exits == ["exit"]


def test_a_standby_dropped_from_the_group_does_not_exit() -> None:
    standby, exits = lease()
    standby._dropped(None, parts())
    assert exits == []
