"""Shards of a service's work, and handing them over between instances without two acting on one at once.

A sharded service (the topic reconciler) splits its keys into as many shards as the bus topics have partitions:
a key's shard is the partition Kafka's default partitioner gives it (murmur2, as Java clients, aiokafka and
``ballast apply`` produce), computed from the key itself so that a record produced with any other partitioner
still has exactly one owner. Who owns which shard is the lease's business (``services.common.lease``); this module
is the bridge from the lease's thread to the service's event loop.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from aiokafka.partitioner import murmur2

from services.common.logging import get_logger

log = get_logger(__name__)

# How long the lease's thread waits for the service to stop acting on its shards before it gives up and exits
# (the group's rebalance waits for it meanwhile; max.poll.interval.ms is 10 s).
PAUSE_TIMEOUT_S = 4.5
RETRY_S = 2.0


def shard_of(key: bytes | None, shards: int) -> int:
    """The shard of a record key among ``shards``: Kafka's default partition for it (keyless records: shard 0)."""
    if shards == 1 or key is None:
        return 0
    return (murmur2(key) & 0x7FFFFFFF) % shards


class Handover:
    """Called from the lease's thread: ``pause`` blocks until the service acts on no shard (before the group may
    give one to another instance), ``assign`` hands the shards this instance owns now to the service, which loads
    the ones it gains and starts acting on them again. A pause cancels a load still running."""

    def __init__(self, loop: asyncio.AbstractEventLoop, *, pause: Callable[[], Awaitable[None]],
                 take: Callable[[frozenset[int]], Awaitable[None]]) -> None:
        self._loop = loop
        self._pause = pause
        self._take = take
        self._taking: asyncio.Task | None = None

    def pause(self) -> None:
        asyncio.run_coroutine_threadsafe(self._paused(), self._loop).result(timeout=PAUSE_TIMEOUT_S)

    def assign(self, shards: frozenset[int]) -> None:
        self._loop.call_soon_threadsafe(self.take, shards)

    def take(self, shards: frozenset[int]) -> None:
        """On the service's loop: (re)start loading and taking ``shards``."""
        if self._taking is not None:
            self._taking.cancel()
        self._taking = self._loop.create_task(self._retrying(shards), name="take-shards")

    async def _retrying(self, shards: frozenset[int]) -> None:
        # Loading reads the bus: while it cannot be read the service waits (its health says not ready), then loads.
        while True:
            try:
                await self._take(shards)
                return
            except Exception as exc:  # noqa: BLE001 - anything but a cancellation (a pause) is retried
                log.warning("cannot take shards yet; will retry", shards=sorted(shards), error=repr(exc))
                await asyncio.sleep(RETRY_S)

    async def _paused(self) -> None:
        if self._taking is not None:
            self._taking.cancel()
        await self._pause()
