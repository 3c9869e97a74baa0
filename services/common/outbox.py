"""The bus as a service shell sees it: publish an event, read a compacted topic to its end. The services take an
outbox the way they take the cluster-admin port and the Cruise Control client: ``FaustOutbox`` on the running
app's producer, ``MemoryOutbox`` in unit tests (no broker)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

import faust

from events import Decoded, decode, encode
from events.limits import MAX_RECORD_BYTES, bounded
from events.models import Event
from events.topics import BusTopic
from services.common.busio import Stored, check_key, read_compacted_async
from services.common.metrics import events_out
from services.common.settings import BusSettings

E = TypeVar("E", bound=Event)
KeyFilter = Callable[[bytes | None], bool]


class Outbox(Protocol):
    async def publish(self, topic: BusTopic[Any], event: Event, *, correlation_id: str | None = None,
                      event_id: str | None = None) -> asyncio.Future[Any]:
        """Hand the event to the producer (keyed by its own key); await the result for the acknowledgement.
        ``event_id``: the envelope's id, where it names the event's origin (``serde.envelope_for``)."""

    async def read_compacted(self, topic: BusTopic[E], *, keys: KeyFilter | None = None) -> dict[str, Stored[E]]:
        """The latest valid event per key of a compacted topic (only keys ``keys`` accepts, when given)."""


async def send(outbox: Outbox, topic: BusTopic[Any], event: Event, *, correlation_id: str | None = None,
               event_id: str | None = None) -> None:
    """Publish and wait for the acknowledgement: what follows may rely on the record being durable."""
    await (await outbox.publish(topic, event, correlation_id=correlation_id, event_id=event_id))


class RecordTooLarge(Exception):
    """An event Ballast built is over what the bus takes; the caller splits or summarises it (a bug if it does not)."""


class FaustOutbox:
    def __init__(self, app: faust.App, bus: BusSettings) -> None:
        self._app = app
        self._bus = bus

    async def publish(self, topic: BusTopic[Any], event: Event, *, correlation_id: str | None = None,
                      event_id: str | None = None) -> asyncio.Future[Any]:
        """Goes to faust's producer directly rather than through ``Topic.send``: the same producer and batching,
        without the channel machinery that cost a third of the CPU of a burst of status events. A record over the
        bus's limit raises ``RecordTooLarge`` here, with what it was, rather than deep in the producer."""
        key, value = event.key, encode(event, correlation_id=correlation_id, event_id=event_id)
        if len(value) > MAX_RECORD_BYTES:
            raise RecordTooLarge(f"a {len(value):,}-byte record for {topic.name} (key {bounded(key, 200)!r}) is over "
                                 f"the {MAX_RECORD_BYTES:,} bytes a record may take")
        events_out(topic.name).inc()
        return await self._app.producer.send(topic.name, key.encode(), value, partition=None, timestamp=None,
                                             headers=None)

    async def read_compacted(self, topic: BusTopic[E], *, keys: KeyFilter | None = None) -> dict[str, Stored[E]]:
        return await read_compacted_async(self._bus, topic, keys=keys)


@dataclass
class Published:
    topic: str
    key: str
    event: Event
    correlation_id: str | None
    event_id: str | None = None


@dataclass
class MemoryOutbox:
    """Keeps what is published; compacted topics answer ``read_compacted`` with the latest record per key (seed them
    with ``put``). Every record goes through encode and decode, as on the bus."""

    published: list[Published] = field(default_factory=list)
    _compacted: dict[str, dict[str, Stored[Any]]] = field(default_factory=dict)
    _offsets: dict[str, int] = field(default_factory=dict)

    def put(self, topic: BusTopic[Any], event: Event, *, correlation_id: str | None = None,
            event_id: str | None = None) -> int:
        """Record ``event`` on ``topic`` as if produced; returns its offset."""
        raw = encode(event, correlation_id=correlation_id, event_id=event_id)
        decoded: Decoded[Any] = decode(raw, topic=topic)
        check_key(event.key.encode(), decoded.event)
        offset = self._offsets.get(topic.name, 0)
        self._offsets[topic.name] = offset + 1
        self.published.append(Published(topic.name, event.key, decoded.event, decoded.envelope.correlation_id,
                                        decoded.envelope.id))
        if topic.compacted:
            self._compacted.setdefault(topic.name, {})[event.key] = Stored(decoded, 0, offset)
        return offset

    def on(self, topic: BusTopic[E]) -> list[E]:
        """The events published on ``topic``, in order."""
        return [p.event for p in self.published if p.topic == topic.name]

    async def publish(self, topic: BusTopic[Any], event: Event, *, correlation_id: str | None = None,
                      event_id: str | None = None) -> asyncio.Future[Any]:
        self.put(topic, event, correlation_id=correlation_id, event_id=event_id)
        done: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        done.set_result(None)
        return done

    async def read_compacted(self, topic: BusTopic[E], *, keys: KeyFilter | None = None) -> dict[str, Stored[E]]:
        stored = self._compacted.get(topic.name, {})
        # As on the bus: records of other types (or other keys) are skipped.
        return {k: v for k, v in stored.items()
                if isinstance(v.decoded.event, topic.events) and (keys is None or keys(k.encode()))}
