"""From capacity and live traffic to a rate: the headroom, the safety share, the floor and the ceiling, a ramp up
that is gradual and a way down that is immediate. Pure."""

from __future__ import annotations

from services.domain.throttle_limits import Limits


def headroom(capacity: int, live: float) -> int:
    return max(0, int(capacity - live))


def target(headroom_bytes: int, limits: Limits) -> int:
    rate = int(headroom_bytes * limits.share)
    if limits.ceiling is not None:
        rate = min(rate, limits.ceiling)
    return max(limits.floor, rate)


def next_rate(in_force: int | None, wanted: int, limits: Limits) -> int:
    """Down at once; up by at most ``ramp_up`` a look, so that a traffic figure that lags (Cruise Control's windows)
    or a burst right after a dip does not send the copy straight to the top."""
    if in_force is None or wanted <= in_force:
        return wanted
    return min(wanted, max(int(in_force * limits.ramp_up), in_force + 1))


def worth_changing(in_force: int | None, rate: int, limits: Limits) -> bool:
    if in_force is None:
        return True
    if rate < in_force and rate == limits.floor:
        return True  # a back-off, or no headroom left: always
    return abs(rate - in_force) >= in_force * limits.min_change
