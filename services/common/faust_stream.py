"""faust's stream, with a ``take_events`` that sleeps while nothing arrives.

faust's own ``take_events(max_, within)`` wakes every ``within`` seconds whether or not an event came, and each wake
makes a handful of tasks and futures. The services take with ``within`` 0.02 s on about a dozen agents, so an idle
stack woke some 600 times a second: that, not any work, was most of an idle service's CPU (a profile of the
Kafka-backed stack at rest). Here the first event of a batch starts its ``within``; an idle agent waits on an event
and costs nothing; a batch still goes as soon as ``max_`` events are in, and a batch's events are acknowledged only
once the agent's body has handled them (taken the next batch), as in faust.

With ``quiet``, a batch goes once no event has come for that long (or at ``within``, or full): a burst that reaches
the consumer in several fetches (a user's `apply` of 300 topics came as 60 and 240) is then one batch, and handled as
one (one CreateTopics), where a fixed short window cut it in two and the second waited on the brokers for the first.

With ``bursts`` (``services.common.bursts``), a batch of complete bursts goes as soon as their last record is in, and
one that holds a burst not yet complete waits for the rest (up to the bursts' own wait) past the window and quiet.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator
from typing import Any

import faust
from faust.types import EventT
from mode.utils.times import Seconds, want_seconds

from services.common.bursts import BurstGathering


class BatchingStream(faust.Stream):
    def take_events(self, max_: int, within: Seconds,  # type: ignore[override]
                    quiet: Seconds | None = None, bursts: BurstGathering | None = None
                    ) -> AsyncGenerator[list[EventT], None]:
        batches = self._batches(max_, within, quiet, bursts)
        # faust closes a stream's batching generators when the stream stops.
        self._active_agens.add(batches)
        return batches

    async def _batches(self, max_: int, within: Seconds, quiet: Seconds | None, bursts: BurstGathering | None
                       ) -> AsyncGenerator[list[EventT], None]:
        loop = asyncio.get_running_loop()
        window = want_seconds(within) if within else 0.0
        lull = want_seconds(quiet) if quiet else None
        pending: list[EventT] = []
        first_at = 0.0
        arrived, full, taken = asyncio.Event(), asyncio.Event(), asyncio.Event()

        async def collect(value: Any) -> Any:
            nonlocal first_at
            # Back-pressure: a full batch is taken before more events are read.
            while len(pending) >= max_:
                taken.clear()
                if await self.wait_for_stopped(taken):
                    return value
            event = self.current_event
            if event is None:
                raise RuntimeError("an event was taken without its envelope (faust's current_event is None)")
            if not pending:
                first_at = loop.time()
            pending.append(event)
            if bursts is not None:
                bursts.note(event.message.headers)
            arrived.set()
            if len(pending) >= max_:
                full.set()
            return value

        acks_before = self.enable_acks
        # The events of a batch are acknowledged below, once handled.
        self.enable_acks = False
        self.add_processor(collect)
        self._enable_passive(aiter(self.channel))
        try:
            while not self.should_stop:
                await self.wait_for_stopped(arrived)
                await self._gathered(first_at, window, lull, arrived, full, bursts)
                batch, pending[:] = list(pending), []
                if bursts is not None:
                    bursts.taken()
                arrived.clear()
                full.clear()
                taken.set()
                if not batch:
                    continue
                try:
                    yield batch
                finally:
                    for event in batch:
                        await self.ack(event)
        finally:
            self.enable_acks = acks_before
            self._processors.remove(collect)

    async def _gathered(self, first_at: float, window: float, lull: float | None, arrived: asyncio.Event,
                        full: asyncio.Event, bursts: BurstGathering | None) -> None:
        """Wait until the batch is full, its window has passed, (given ``lull``) no event has arrived for that long,
        or (given ``bursts``) it holds complete bursts only; a burst not yet complete holds it up to their wait."""
        loop = asyncio.get_running_loop()
        while not full.is_set() and not self.should_stop:
            if bursts is not None and bursts.done():
                return
            holding = bursts is not None and bursts.holding()
            limit = max(window, bursts.wait_s) if bursts is not None and holding else window
            left = first_at + limit - loop.time()
            if left <= 0:
                return
            if lull is None and bursts is None:
                await self.wait_for_stopped(full, timeout=left)
                return
            # A burst not yet complete waits for its rest, however long the bus takes between its records.
            quiet = None if holding else lull
            arrived.clear()
            await self.wait_for_stopped(arrived, timeout=min(quiet, left) if quiet is not None else left)
            if quiet is not None and not arrived.is_set():
                return
