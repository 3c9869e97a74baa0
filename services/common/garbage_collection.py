"""Garbage-collector thresholds for long-running services, and a warning for each long collection.

A service holds a few objects per topic it knows (spec, description, status, change record), and replaces them as
events arrive. With CPython's default thresholds (700, 10, 10) the replaced objects count as new long-lived ones, so
a full collection runs every second or two under load, and each one walks everything the service holds: measured
0.2-0.26 s pauses every 1-2 s in the topic reconciler with 10,000 topics at 1,000 spec events/s (BENCHMARKS.md), far
longer with more topics. Nearly all of that memory is freed by reference counting anyway; the collector only has
cycles to find. Larger thresholds make the young collections rarer but still cheap, and the full ones rare.

Rare is not enough once the heap is large: a full collection walks every object the service holds, and the topic
reconciler holds tens of objects per topic. At 60,000-85,000 topics it logged 0.1-0.9 s collections (185 of them
while 100,000 topics were being created; the machine's load 10-35), each holding the GIL and so stalling the lease's
thread and faust's consumer thread. So a service that has just taken on many long-lived objects (its memory loaded
from the compacted topics, or a burst of new topics) freezes them (``FrozenGrowth``: ``gc.freeze``, which moves
every tracked object to a permanent generation in constant time): from then on a full collection walks only what
came after. The price: a cycle among frozen objects that later becomes garbage is never collected (reference
counting still frees everything else, and the topic memory's records hold no cycles); freezing only after large
growth, not after every batch, keeps that to what was in flight at a few moments.
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
# Long-lived objects (counted as what the service holds: e.g. topics known) taken on since the last freeze that call
# for the next.
FREEZE_EVERY = 2_000


def freeze_due(held: int, held_at_last_freeze: int, every: int = FREEZE_EVERY) -> bool:
    """Whether what a service holds has grown enough since the last freeze to freeze again (shrinking never is)."""
    return held - held_at_last_freeze >= every


def freeze() -> None:
    """The young garbage collected, then every object still tracked frozen (out of all later collections)."""
    gc.collect(1)
    gc.freeze()


class FrozenGrowth:
    """Freezes the heap each time what the service holds has grown by ``every`` (``freeze_due``)."""

    def __init__(self, every: int = FREEZE_EVERY) -> None:
        self.every = every
        self.held_at_last_freeze = 0

    def held(self, count: int) -> bool:
        """What the service holds now; True when that froze the heap."""
        if not freeze_due(count, self.held_at_last_freeze, self.every):
            if count < self.held_at_last_freeze:
                self.held_at_last_freeze = count  # shards given away: grow from here
            return False
        started = time.perf_counter()
        freeze()
        log.info("long-lived objects frozen out of garbage collection", held=count,
                 frozen_objects=gc.get_freeze_count(), seconds=round(time.perf_counter() - started, 3))
        self.held_at_last_freeze = count
        return True


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
