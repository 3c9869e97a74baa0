"""The bus for faust services: the app factory tuned for both Tansu and Kafka, raw topics and dead letters.
Publishing is the outbox's (``outbox.FaustOutbox``); plain-client reads and writes (a service's rebuild, the CLI)
are in ``busio``; the bus topics' creation is in ``bus_topics``."""

from __future__ import annotations

import asyncio
import logging
import ssl
from typing import Any, TypeVar

import faust
from events import TOPICS, DeadLetter, Decoded, InvalidEvent, decode
from events.models import Event
from events.topics import BusTopic, group
from services.common.busio import check_key
from services.common.faust_stream import BatchingStream
from services.common.faust_transport import BallastApp
from services.common.logging import get_logger, quiet_libraries
from services.common.metrics import dead_lettered, events_in
from services.common.outbox import Outbox
from services.common.settings import BusSettings, Settings

log = get_logger(__name__)
E = TypeVar("E", bound=Event)

# How long an agent's ``take_events`` waits, after a batch's first event, for more to join it (``faust_stream``).
BATCH_WAIT_S = 0.02


def consumer_group(service: str) -> str:
    """The consumer group of a service's faust app (its committed offsets)."""
    return group(service)


def make_app(service: str, settings: Settings, *, web_port: int, group: str | None = None) -> faust.App:
    """The service's faust app; its consumer group is ``consumer_group(service)`` unless ``group`` names another."""
    bus = settings.bus
    credentials: Any = None
    if bus.security_protocol.startswith("SASL"):
        credentials = faust.SASLCredentials(
            username=bus.sasl_username,
            password=bus.password(),
            mechanism=bus.sasl_mechanism or "PLAIN",
            ssl_context=(ssl.create_default_context(cafile=str(bus.ssl_cafile) if bus.ssl_cafile else None)
                         if bus.security_protocol == "SASL_SSL" else None),
        )
    elif bus.security_protocol == "SSL":
        credentials = faust.SSLCredentials(ssl.create_default_context(cafile=str(bus.ssl_cafile)))
    datadir = settings.data_dir / service
    datadir.parent.mkdir(parents=True, exist_ok=True)
    app = BallastApp(
        group or consumer_group(service),
        fetch_max_wait_ms=bus.fetch_max_wait_ms,
        broker=[f"kafka://{server}" for server in bus.bootstrap_servers.split(",")],
        broker_credentials=credentials,
        # Short group timeouts: a restarted worker is back in seconds, on Tansu as on Kafka.
        broker_session_timeout=bus.group_session_timeout_ms / 1000,
        broker_heartbeat_interval=1,
        broker_rebalance_timeout=bus.group_session_timeout_ms / 1000,
        table_standby_replicas=0,
        topic_partitions=bus.topic_partitions,
        topic_replication_factor=bus.topic_replication_factor,
        producer_acks=-1,
        # Statuses are small and come in bursts: pack them into few large produce requests (the producer keeps one
        # request in flight per broker, so 16 KB batches made a burst of 10,000 statuses wait on ~300 round trips).
        producer_max_batch_size=512 * 1024,
        producer_linger=0.005,
        consumer_auto_offset_reset="earliest",
        store="memory://",
        web_enabled=True,
        # faust binds ``web_bind`` (0.0.0.0 by default) and only advertises ``web_host``: bind where configured.
        web_host=settings.web_host,
        web_bind=settings.web_host,
        web_port=web_port,
        web_in_thread=False,
        datadir=str(datadir),
        # Ballast's state lives in compacted topics it reads itself; no faust tables or changelogs.
        topic_allow_declare=True,
        Stream=BatchingStream,
    )

    @app.task
    async def quiet() -> None:
        # Runs once the worker has set up logging, which would otherwise undo this.
        quiet_libraries(logging.DEBUG if settings.log_level == "debug" else logging.WARNING)

    return app


def raw_topic(app: faust.App, topic: BusTopic, settings: BusSettings, *more: BusTopic) -> faust.TopicT:
    """``topic`` as faust reads it (with ``more``: one stream over several topics of the same kind)."""
    return app.topic(
        topic.name, *(t.name for t in more),
        key_type=bytes,
        value_type=bytes,
        key_serializer="raw",
        value_serializer="raw",
        partitions=settings.topic_partitions,
        config=topic.config or None,
    )


class DeadLetters:
    """Sends what could not be accepted to the dead-letter topic, with the reason. Never raises on bad input.

    Letters are handed to the producer at once and their acknowledgements awaited together by ``flush`` (the
    agent's guard calls it after each batch): a burst of bad records no longer holds the valid ones behind it for a
    round trip each."""

    def __init__(self, outbox: Outbox, service: str) -> None:
        self._outbox = outbox
        self._service = service
        self._unacknowledged: list[asyncio.Future] = []

    async def send(self, *, source: str, key: bytes | None, value: bytes | None, reason: str,
                   partition: int | None = None, offset: int | None = None,
                   copy_to: BusTopic[DeadLetter] | None = None) -> None:
        """``copy_to``: a second dead-letter topic that gets the letter too (a tenant's own, which it may read)."""
        letter = DeadLetter.of_record(source_topic=source, partition=partition, offset=offset, key=key, value=value,
                                      reason=reason, service=self._service)
        dead_lettered(source).inc()
        # The value's size and hash, never the value: one 10 MB record once wrote 60 MB of logs.
        log.warning("dead letter", source_topic=source, partition=partition, offset=offset, reason=letter.reason,
                    value_bytes=letter.value_size, value_sha256=letter.value_sha256)
        self._unacknowledged.append(await self._outbox.publish(TOPICS.dead_letters, letter))
        if copy_to is not None:
            self._unacknowledged.append(await self._outbox.publish(copy_to, letter))

    async def flush(self) -> None:
        pending, self._unacknowledged = self._unacknowledged, []
        if pending:
            await asyncio.gather(*pending)

    async def reject(self, event: faust.EventT, reason: str, *, copy_to: BusTopic[DeadLetter] | None = None) -> None:
        message = event.message
        await self.send(source=message.topic, key=raw_bytes(event.key), value=raw_bytes(event.value), reason=reason,
                        partition=message.partition, offset=message.offset, copy_to=copy_to)

    async def decode_or_reject(self, event: faust.EventT, topic: BusTopic[E], *, report: bool = True,
                               copy_to: BusTopic[DeadLetter] | None = None) -> Decoded[E] | None:
        """The record's event, or None once it is dead-lettered: not a valid event of these types, or keyed
        otherwise than the event says (a spec keyed ``a`` naming topic ``b`` would be managed by one name while
        running and by the other after a restart). With ``report`` false an invalid record is only skipped
        (several instances read it, and another reports it)."""
        events_in(topic.name).inc()
        try:
            decoded = decode(event.value, topic=topic)
            check_key(raw_bytes(event.key), decoded.event)
        except InvalidEvent as exc:
            if report:
                await self.reject(event, exc.reason, copy_to=copy_to)
            return None
        return decoded


def raw_bytes(data: Any) -> bytes | None:
    """A record's key or value as faust hands it over (raw topics give bytes), as bytes."""
    if data is None or isinstance(data, bytes):
        return data
    return str(data).encode()
