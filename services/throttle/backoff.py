"""When the controller drops every rate it sets to the floor: a partition outside the moves out of its ISR (a
follower that cannot keep up is what a too-high rate causes first), or the probe's produce latency past its limit.
It stays down until the cause has been gone for the hold, counted from when the floor is in force. Pure."""

from __future__ import annotations

from collections.abc import Mapping, Sequence, Set
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Literal

from services.adapters.admin import PartitionInfo

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
    # None while the cause was seen in the current look and the floor is not yet in force; then when the hold ends.
    until: datetime | None
    lagging: tuple[str, ...] = ()  # the partitions whose ISR caused it (an isr-back-off's), for every status it lasts


def back_off(current: BackOff | None, *, lagging: Sequence[str], latency_high: bool, now: datetime) -> BackOff | None:
    """The back-off in force after this look's reads: renewed (its hold not started yet) while a cause is seen, ended
    once its hold has passed."""
    if lagging:
        return BackOff("isr-back-off", None, tuple(lagging))
    if latency_high:
        return BackOff("latency-back-off", None)
    if current is not None and (current.until is None or now < current.until):
        return current
    return None


def held(current: BackOff | None, *, at: datetime, hold_s: float) -> BackOff | None:
    """The back-off once the floor is in force at ``at``: its hold counts from then.

    Not from the cause's sighting: the hold is the time the followers are given at the floor to catch up, and a look
    can take seconds between reading the partitions and setting the rates (4.8 s of a 3 s hold, seen on a loaded
    machine while a broker was dying, so the rates climbed again 1.3 s after they reached the floor). A look that
    fails before the rates are set leaves the hold unstarted: the next look sets the floor and starts it."""
    if current is None or current.until is not None:
        return current
    return replace(current, until=at + timedelta(seconds=hold_s))
