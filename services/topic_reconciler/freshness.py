"""How long the placers may go on with what they read of the whole cluster (every topic's assignment, every log
directory's replicas) before reading it again, and who waits for that read.

Both reads grow with the cluster: at 2,747 topics on the local Kafka they took 1.1 s and 2.2 s, the second mostly on
the brokers (each sums the size of every log it hosts). Made before a placement, they were most of the time of a
batch that followed a quiet spell. So a read older than ``max_age_s`` is still used as it is, with every placement
Ballast made since added to it, and read again soon after, off the placement's path (``due``, read by the
reconciler's timer). Only one older than ``stale_max_s``, or none at all, is read before placing. What must be
current for every placement (which brokers are alive, cordoned or failed directories) is read apart from these,
cheaply, each time."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Freshness:
    max_age_s: float
    stale_max_s: float
    read_at: float | None = None
    # Used while older than max_age_s since it was read: read again at the next chance.
    due: bool = False

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
