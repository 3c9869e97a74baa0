"""When the controller drops every rate it sets to the floor: a partition outside the moves out of its ISR (a
follower that cannot keep up is what a too-high rate causes first), or the probe's produce latency past its limit.
It stays down until the cause has been gone for the hold. Pure."""

from __future__ import annotations

from collections.abc import Mapping, Set
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Literal

from services.common.admin import PartitionInfo

Reason = Literal["isr-back-off", "latency-back-off"]


def lagging_partitions(states: Mapping[str, tuple[PartitionInfo, ...]],
                       before: Mapping[str, tuple[PartitionInfo, ...]], moving: Set[tuple[str, int]],
                       alive: Set[int]) -> list[str]:
    """Partitions outside the moves that lost an ISR member since the look ``before`` (whatever the cause: a follower
    that stopped keeping up, or its broker gone), or that have a replica out of the ISR on a broker that is up and
    online (a follower still behind). Replicas long out of the ISR on a dead broker do not count: that broker is not
    slowed by the moves, and counting them would hold the rates at the floor for as long as it is down."""
    was = {(topic, p.id): set(p.isr) for topic, partitions in before.items() for p in partitions}
    lagging = []
    for topic, partitions in states.items():
        for p in partitions:
            if (topic, p.id) in moving:
                continue
            out = set(p.replicas) - set(p.isr)
            newly_out = out & was.get((topic, p.id), set())
            behind = (out - set(p.offline)) & alive
            if newly_out or behind:
                lagging.append(f"{topic}-{p.id}")
    return sorted(lagging)


@dataclass(frozen=True)
class BackOff:
    reason: Reason
    until: datetime  # the cause was last seen at until - hold


def back_off(current: BackOff | None, *, lagging: bool, latency_high: bool, now: datetime,
             hold_s: float) -> BackOff | None:
    """The back-off in force after this look: renewed while a cause is seen, ended once the hold has passed."""
    if lagging or latency_high:
        return BackOff("isr-back-off" if lagging else "latency-back-off", now + timedelta(seconds=hold_s))
    if current is not None and now < current.until:
        return current
    return None
