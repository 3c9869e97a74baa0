"""What reaches the topic reconciler from the bus, and which of it this instance acts on.

Instances share the work by shards (``services.common.shards``): a topic belongs to the shard of its name, and an
instance keeps memory of, and acts on, only the shards its lease holds. Every instance reads every record of its
input topics, skips those of other shards before decoding them, and rebuilds a shard from the compacted topics when
it gains it. Records read again (after a start or a handover) are skipped by offset or age. With several shards an
instance reads from the beginning at each start (its consumer group is its own), so it reports the invalid records
of its shards to the dead-letter topic again; with one shard the service's group keeps its offsets.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Any, Protocol

from events import TOPICS, ReplicasChangeBatch
from events.topics import not_ours, reserved_topic
from services.common.bus import DeadLetters, raw_bytes
from services.common.busio import record_key
from services.common.garbage_collection import FrozenGrowth
from services.common.lease import Lease
from services.common.logging import get_logger
from services.common.shards import Handover, shard_of
from services.topic_reconciler.reconciler import CHUNK, Reconciler

log = get_logger(__name__)
# Placement requests are answered by the instance holding the request's shard; one older than this, read again after
# a restart, was answered before or given up by whoever asked.
PLACEMENT_REQUEST_MAX_AGE_S = 300


class SpecFollower(Protocol):
    def __call__(self, name: str, event: Any, event_id: str, *, latest: bool = False) -> None:
        """A spec record taken, as the agent reads it or (``latest``) the name's latest, as a shard's load reads it."""


class Intake:
    def __init__(self, reconciler: Reconciler, dead_letters: DeadLetters, *, shards: int, lease: Lease | None,
                 load_max_age_s: float, on_spec: SpecFollower | None = None,
                 on_take: Callable[[Callable[[bytes | None], bool] | None], Awaitable[None]] | None = None) -> None:
        self.reconciler = reconciler
        # Told of each spec record taken (name, event, envelope id), and of each take of shards (with the keys of
        # those gained from another instance, if any): the tenant gate follows the spec topic and the shards.
        self.on_spec = on_spec
        self.on_take = on_take
        self.memory = reconciler.memory
        self.dead_letters = dead_letters
        self.shards = shards
        self.lease = lease
        self.load_max_age_s = load_max_age_s
        # Shards whose memory is loaded, and those this instance acts on (none while a handover is under way).
        self.built: frozenset[int] = frozenset()
        self.owned: frozenset[int] = frozenset()
        self.handover: Handover | None = None
        # Topics of held shards whose work a handover's pause stopped: done first when the shards are taken again.
        self._deferred: set[str] = set()
        # Set while this instance acts on its shards; cleared from a handover's pause until the next are loaded.
        self.ready = asyncio.Event()
        # The topics' memory, once grown by a load or a burst, leaves the collector's generations: full collections
        # of a heap of 100,000 topics stalled the lease's thread (services.common.garbage_collection).
        self.frozen = FrozenGrowth()

    # -- records, as the agents hand them over (each handler may be called again on any part of its batch) --------

    async def on_spec_events(self, events: Sequence[Any]) -> None:
        names = []
        for event in events:
            if not self._built(event.key):
                continue  # another shard's
            offset = event.message.offset
            if (key := record_key(event.key)) is not None and not self.memory.is_new_spec(key, offset):
                continue  # already applied (read again after the shard was loaded)
            decoded = await self.dead_letters.decode_or_reject(event, TOPICS.specs)
            if decoded is None:
                continue
            if reason := reserved_topic(decoded.event.key) or not_ours(decoded.event):
                await self.dead_letters.reject(event, reason)
                continue
            self.memory.apply_spec(decoded.event.key, decoded.event, offset, decoded.envelope.correlation_id,
                                   decoded.envelope.id)
            if self.on_spec is not None:
                self.on_spec(decoded.event.key, decoded.event, decoded.envelope.id)
            names.append(decoded.event.key)
        if names:
            await self.reconciler.reconcile(sorted(set(names)))
            self.frozen.held(len(self.memory.topics))

    async def on_change_events(self, events: Sequence[Any]) -> None:
        records = []
        for event in events:
            if not self._built(event.key):
                continue
            offset = event.message.offset
            key = record_key(event.key)
            if key == ReplicasChangeBatch.KEY:
                continue  # written here by a release before the batch had its own topic: not a change's record
            if key is not None and not self.memory.is_new_change(key, offset):
                continue  # already applied
            decoded = await self.dead_letters.decode_or_reject(event, TOPICS.replicas_state)
            if decoded is not None:
                records.append(decoded.event)
                self.memory[decoded.event.topic].change_offset = offset
        for start in range(0, len(records), CHUNK):
            await self.reconciler.on_change_records(records[start:start + CHUNK])

    async def on_observed_events(self, events: Sequence[Any]) -> None:
        for event in events:
            # Every instance needs every broker; only the one holding the record's shard reports a bad record.
            decoded = await self.dead_letters.decode_or_reject(event, TOPICS.observed_brokers,
                                                               report=self._built(event.key))
            if decoded is not None:
                self.reconciler.placing.observed.apply(decoded.event)

    async def on_load_events(self, events: Sequence[Any]) -> None:
        oldest = time.time() - self.load_max_age_s
        for event in events:
            if event.message.timestamp < oldest:
                continue  # a window too old to count (read again after a restart)
            decoded = await self.dead_letters.decode_or_reject(event, TOPICS.load_aggregates,
                                                               report=self._built(event.key))
            if decoded is not None:
                self.reconciler.placing.recent_load.take(decoded.event)

    async def on_broker_status_events(self, events: Sequence[Any]) -> None:
        for event in events:
            decoded = await self.dead_letters.decode_or_reject(event, TOPICS.broker_status)
            if decoded is not None:
                self.reconciler.placing.ledger.take_broker_status(decoded.event)

    async def on_placement_requests(self, events: Sequence[Any]) -> None:
        oldest = time.time() - PLACEMENT_REQUEST_MAX_AGE_S
        for event in events:
            if not self.owns(event.key) or event.message.timestamp < oldest:
                continue
            decoded = await self.dead_letters.decode_or_reject(event, TOPICS.placement_requests)
            if decoded is None:
                continue
            response = await self.reconciler.placing.answer(decoded.event)
            outbox = self.reconciler.outbox
            await asyncio.gather(*[await outbox.publish(TOPICS.placement_responses, part,
                                                        correlation_id=decoded.envelope.correlation_id)
                                   for part in response.split()])

    # -- timers ----------------------------------------------------------------------------------------------------

    async def resync(self) -> None:
        if self.ready.is_set():
            await self.reconciler.resync()

    async def refresh_placement_reads(self) -> None:
        if self.ready.is_set():
            await self.reconciler.refresh_placement_reads()

    async def observe(self) -> None:
        if self.ready.is_set():
            # Every instance observes; the one holding shard 0 records new brokers on the bus.
            await self.reconciler.observe_brokers(record_news=0 in self.owned)

    # -- shards: start, handover -----------------------------------------------------------------------------------

    def _shard(self, key: object) -> int:
        return shard_of(raw_bytes(key), self.shards)

    def _built(self, key: object) -> bool:
        return self._shard(key) in self.built

    def owns(self, key: object) -> bool:
        """This instance acts on the shard of this record's key now."""
        return self._shard(key) in self.owned

    def holds(self, key: object) -> bool:
        """This instance holds the shard of this record's key (acting on it, or paused by a handover)."""
        return self._built(key)

    def fence(self, names: Iterable[str]) -> set[str]:
        """The names this instance may act on now; those of its shards that a pause holds back are deferred."""
        held = set()
        for name in names:
            shard = self._shard(name)
            if shard in self.owned:
                held.add(name)
            elif shard in self.built:
                self._deferred.add(name)
        return held

    async def start(self) -> None:
        observed = await self.reconciler.outbox.read_compacted(TOPICS.observed_brokers)
        for item in observed.values():
            self.reconciler.placing.observed.apply(item.decoded.event)
        for item in (await self.reconciler.outbox.read_compacted(TOPICS.broker_status)).values():
            self.reconciler.placing.ledger.take_broker_status(item.decoded.event)
        self.handover = Handover(asyncio.get_running_loop(), pause=self.pause, take=self.take)
        every = frozenset(range(self.shards))
        self.handover.take(self.lease.attach(self.handover) if self.lease is not None else every)

    async def pause(self) -> None:
        """Act on no shard from now on: once the lock is ours, no reconcile is half done."""
        self.ready.clear()
        async with self.reconciler.lock:
            self.owned = frozenset()

    async def take(self, shards: frozenset[int]) -> None:
        """Load the shards gained, forget those given away, and act on ``shards``."""
        first = not self.built
        gained, released = shards - self.built, self.built - shards
        if released:
            self.memory.forget(lambda name: self._shard(name) in released)
        if gained:
            await self._load(gained)
        self.frozen.held(len(self.memory.topics))  # only what the memory kept of the records read
        self.built = self.owned = shards
        log.info("acting on shards", shards=sorted(shards), of=self.shards, gained=sorted(gained),
                 released=sorted(released), **self.memory.counts())
        self.ready.set()
        if self.on_take is not None:
            # A first take reads every record from the start (or from the service's offsets, with one shard).
            await self.on_take(None if first or not gained else lambda raw: shard_of(raw, self.shards) in gained)
        if first:
            await self.reconciler.observe_brokers(record_news=0 in self.owned)
        deferred, self._deferred = self._deferred, set()
        specified = self.memory.specified()
        await self.reconciler.resync(deferred.intersection(specified))
        await self.reconciler.resync(n for n in specified if self._shard(n) in gained)

    async def _load(self, shards: frozenset[int]) -> None:
        """The compacted topics' records of these shards, remembered one topic at a time, each topic's records dropped
        before the next is read: the four held at once took three times what the memory keeps of them (273 MB at
        their peak for 30,000 topics, 90 MB kept), and the process kept the peak."""
        outbox, memory = self.reconciler.outbox, self.memory

        def mine(raw: bytes | None) -> bool:
            return shard_of(raw, self.shards) in shards

        memory.remember_placeholders(await outbox.read_compacted(TOPICS.placeholders, keys=mine))
        specs = await outbox.read_compacted(TOPICS.specs, keys=mine)
        memory.remember_specs(specs)
        if self.on_spec is not None:
            # Before acting on them: what another instance forwarded for the gained shards while this one's spec
            # agent passed their records by (the tenant gate's claims and forwards would be stale otherwise).
            for name, item in specs.items():
                self.on_spec(name, item.decoded.event, item.decoded.envelope.id, latest=True)
        del specs
        memory.remember_statuses(await outbox.read_compacted(TOPICS.status, keys=mine))
        memory.remember_changes(await outbox.read_compacted(TOPICS.replicas_state, keys=mine))
