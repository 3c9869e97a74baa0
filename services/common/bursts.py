"""Which bursts (``events.bursts``) a batch in the making holds, and whether the batch may go or should wait.

A batch that holds only records of bursts now complete may go at once: the publisher said there is no more to wait
for. A batch that holds a burst not yet complete waits for its rest, past the quiet period and the window, for at
most ``wait_s`` from its first event: a publisher that stopped half-way, or a consumer that started in the middle of
a burst, costs that wait once and loses nothing. Records without a burst keep the quiet period and the window.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence

from events.bursts import burst_of

# Bursts whose rest has not come (a publisher that stopped half-way) are forgotten oldest first beyond this many.
MAX_OPEN_BURSTS = 256


class BurstGathering:
    def __init__(self, wait_s: float) -> None:
        self.wait_s = wait_s
        # Every burst not yet complete: its size and the records of it seen so far, across batches (a burst larger
        # than a batch goes on in the next one).
        self._open: OrderedDict[str, tuple[int, int]] = OrderedDict()
        self._in_batch: set[str] = set()
        self._unmarked = 0

    def note(self, headers: Sequence[tuple[str, bytes | None]] | None) -> None:
        """One more event in the batch, with its record's headers."""
        burst = burst_of(headers)
        if burst is None:
            self._unmarked += 1
            return
        size, seen = self._open.pop(burst.id, (burst.size, 0))
        self._open[burst.id] = (size, seen + 1)
        self._in_batch.add(burst.id)
        while len(self._open) > MAX_OPEN_BURSTS:
            self._open.popitem(last=False)

    def _complete(self, burst_id: str) -> bool:
        size, seen = self._open.get(burst_id, (0, 0))
        return seen >= size

    def holding(self) -> bool:
        """The batch holds a burst whose rest has not come."""
        return any(not self._complete(b) for b in self._in_batch)

    def done(self) -> bool:
        """The batch holds records of bursts only, every one of them complete: nothing more to wait for."""
        return bool(self._in_batch) and not self._unmarked and not self.holding()

    def taken(self) -> None:
        """The batch went: bursts it completed are forgotten, those still open go on counting in the next."""
        for burst_id in self._in_batch:
            if self._complete(burst_id):
                self._open.pop(burst_id, None)
        self._in_batch.clear()
        self._unmarked = 0
