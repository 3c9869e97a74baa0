"""How long a test waits for a condition, or for a process it started, before it calls it stuck.

Generous on purpose: a loaded machine (two suites side by side on two cores) is slow, not stuck, and a test that
returns as soon as its condition holds loses nothing by a long deadline. Seen on such a machine: a Python child that
imports Ballast's service modules took more than 30 s to start and exit.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

WAIT_S = 180.0


def until(what: str, look: Callable[[], T | None], timeout_s: float = WAIT_S, interval_s: float = 0.3) -> T:
    """What ``look`` finds (anything but None), looked for again every ``interval_s`` until ``timeout_s`` runs out."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if (found := look()) is not None:
            return found
        time.sleep(interval_s)
    raise AssertionError(f"not within {timeout_s:.0f} s: {what}")
