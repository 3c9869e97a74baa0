"""How long the placers may go on with what they read of the whole cluster (every topic's assignment, every log
directory's replicas) before reading it again, and who waits for that read.

Both reads grow with the cluster: at 2,747 topics on the local Kafka they took 1.1 s and 2.2 s, the second mostly on
the brokers (each sums the size of every log it hosts). Made before a placement, they were most of the time of a
batch that followed a quiet spell. So a read older than ``max_age_s`` is still used as it is, with every placement
Ballast made since added to it, and read again soon after, off the placement's path (``due``, read by the
reconciler's timer). Only one older than ``stale_max_s``, or none at all, is read before placing. What must be
current for every placement (which brokers are alive, cordoned or failed directories) is read apart from these,
cheaply, each time.

The timer's read does not hold the reconciler's lock: at thousands of topics, on brokers busy creating logs, it took
over 5 s, and a batch that came meanwhile waited for it. Placements go on during it, so the cache that reads keeps
what Ballast placed while the read was under way on top of what it read (the read may not show it yet)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field


@dataclass
class Freshness:
    max_age_s: float
    stale_max_s: float
    read_at: float | None = None
    # Used while older than max_age_s since it was read: read again at the next chance.
    due: bool = False
    reads: int = 0
    _reading: asyncio.Lock = field(default_factory=asyncio.Lock, repr=False)

    def __post_init__(self) -> None:
        # A window shorter than the age would serve nothing stale: read before use past the age, as before.
        self.stale_max_s = max(self.stale_max_s, self.max_age_s)

    def must_read(self, now: float) -> bool:
        """Read before using it (and mark it due when it may be used as it is, but is old)."""
        if self.read_at is None or now - self.read_at > self.stale_max_s:
            return True
        if now - self.read_at > self.max_age_s:
            self.due = True
        return False

    def was_read(self, now: float) -> None:
        self.read_at, self.due = now, False
        self.reads += 1

    async def read_once(self, read: Callable[[], Awaitable[bool]]) -> bool:
        """Run ``read`` (True: it read, and said ``was_read``) unless a read under way when this was asked finishes
        meanwhile: one read at a time, whoever asks (the timer between batches, a batch that must read first)."""
        reads = self.reads
        async with self._reading:
            return self.reads != reads or await read()
