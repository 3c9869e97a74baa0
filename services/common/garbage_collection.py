"""Garbage-collector thresholds for long-running services, and a warning for each long collection.

A service holds a few objects per topic it knows (spec, description, status, change record), and replaces them as
events arrive. With CPython's default thresholds (700, 10, 10) the replaced objects count as new long-lived ones, so
a full collection runs every second or two under load, and each one walks everything the service holds: measured
0.2-0.26 s pauses every 1-2 s in the topic reconciler with 10,000 topics at 1,000 spec events/s (BENCHMARKS.md), far
longer with more topics. Nearly all of that memory is freed by reference counting anyway; the collector only has
cycles to find. Larger thresholds make the young collections rarer but still cheap, and the full ones rare.
"""

from __future__ import annotations

import gc
import time
from typing import Any

from services.common.logging import get_logger

log = get_logger(__name__)

# Young objects before a generation-0 collection; generation-0 collections per generation-1 collection;
# generation-1 collections per full collection (which also waits until a quarter of the old objects are new).
THRESHOLDS = (10_000, 10, 100)
# A collection this long stalls every agent of the service; say so in the log.
SLOW_S = 0.1


def tune_garbage_collection() -> None:
    gc.set_threshold(*THRESHOLDS)
    started = 0.0

    def report_slow(phase: str, info: dict[str, Any]) -> None:
        nonlocal started
        if phase == "start":
            started = time.perf_counter()
        elif (took := time.perf_counter() - started) >= SLOW_S:
            log.warning("slow garbage collection", generation=info["generation"], seconds=round(took, 3),
                        collected=info["collected"])

    gc.callbacks.append(report_slow)
