"""When to try again after a refusal or an unreachable moment: one rule for every service and every port (Cruise
Control's, the cluster admin's)."""

from __future__ import annotations

from datetime import timedelta


def backoff(attempts: int, *, initial_s: float, max_s: float) -> timedelta:
    """Capped exponential backoff after ``attempts`` failures: initial, 2x, 4x, ... up to max."""
    return timedelta(seconds=min(max_s, initial_s * 2 ** max(0, attempts - 1)))
