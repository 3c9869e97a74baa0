"""Which bursts (``events.bursts``) a batch in the making holds, and whether the batch may go or should wait.

A batch that holds only records of bursts now complete may go at once: the publisher said there is no more to wait
for. A batch that holds a burst not yet complete waits for its rest, past the quiet period and the window, for at
most ``wait_s`` from its first event: a publisher that stopped half-way, or a consumer that started in the middle of
a burst, costs that wait once and loses nothing. Records without a burst keep the quiet period and the window,
unless they share a batch with a burst not yet complete, whose wait they then share.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import Any

from events.bursts import burst_of

# Bursts whose rest has not come (a publisher that stopped half-way) are forgotten oldest first beyond this many; as
# many complete ones are remembered, so that a record delivered twice does not open its burst again.
MAX_BURSTS = 256


class BurstGathering:
    def __init__(self, wait_s: float) -> None:
        self.wait_s = wait_s
        # Every burst not yet complete: its size and the records of it seen so far, across batches (a burst larger
        # than a batch goes on in the next one).
        self._open: OrderedDict[str, tuple[int, int]] = OrderedDict()
        self._complete: OrderedDict[str, None] = OrderedDict()
        self._waiting: set[str] = set()  # the batch's bursts not yet complete
        self._marked = 0
        self._unmarked = 0

    def note(self, headers: Sequence[tuple[str, bytes | None]] | Mapping[str, bytes | None] | None) -> None:
        """One more event in the batch, with its record's headers."""
        burst = burst_of(headers)
        if burst is None:
            self._unmarked += 1
            return
        self._marked += 1
        if burst.id in self._complete:
            return  # delivered again
        size, seen = self._open.pop(burst.id, (burst.size, 0))
        if seen + 1 >= size:
            self._waiting.discard(burst.id)
            self._remember(self._complete, burst.id, None)
            return
        self._remember(self._open, burst.id, (size, seen + 1))
        self._waiting.add(burst.id)

    def _remember(self, bursts: OrderedDict[str, Any], burst_id: str, value: object) -> None:
        bursts[burst_id] = value
        while len(bursts) > MAX_BURSTS:
            # A forgotten open burst no longer holds a batch.
            self._waiting.discard(bursts.popitem(last=False)[0])

    def holding(self) -> bool:
        """The batch holds a burst whose rest has not come."""
        return bool(self._waiting)

    def done(self) -> bool:
        """The batch holds records of bursts only, every one of them complete: nothing more to wait for."""
        return bool(self._marked) and not self._unmarked and not self._waiting

    def taken(self) -> None:
        """The batch went: bursts still open go on counting in the next."""
        self._waiting.clear()
        self._marked = self._unmarked = 0
