"""The bus through plain confluent-kafka clients, for everything that is not a faust agent: producing with delivery
checks, following topics, and reading a compacted topic to its end (how services rebuild their memory, and what the
CLI, the Spark job, the benchmarks and the tests read). No consumer-group state is left behind.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from tenacity import Retrying, retry_if_exception, stop_after_delay, wait_exponential

from events import Decoded, InvalidEvent, decode, encode
from events.bursts import Burst
from events.limits import bounded
from events.models import Event
from events.topics import BusTopic
from services.common.settings import BusSettings

E = TypeVar("E", bound=Event)


class BusUnavailable(RuntimeError):
    """The bus could not be reached in time."""


class ClientRefused(BusUnavailable):
    """The brokers answered, and refused the client's credentials or its certificate check failed."""


class NoSuchTopic(LookupError):
    """A topic asked for by name does not exist on the bus."""


class NotAuthorized(RuntimeError):
    """The bus refused this client a topic: Kafka's ACLs do not let its principal read or write it."""


def not_authorized(bus: BusSettings, doing: str, topic: str, error: KafkaError) -> NotAuthorized:
    who = f"{bus.sasl_username!r}" if bus.sasl_username else "this client"
    # The broker's words for the code, not the error's own text: raised by produce() itself, librdkafka puts
    # "Unable to produce message: " before them, and the line would depend on which came first.
    return NotAuthorized(f"the bus at {bus.bootstrap_servers} refused to let {who} {doing} {topic}: "
                         f"{KafkaError(error.code()).str()} (Kafka's ACLs)")


def _refused_topic(bus: BusSettings, doing: str, topic: str, error: KafkaError | None) -> None:
    if error is not None and error.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED:
        raise not_authorized(bus, doing, topic, error)


class Refusal:
    """librdkafka's error callback, keeping the brokers' refusal of the client's credentials or certificate: the reason
    to give when nothing answers, which a wrong password otherwise looks like (librdkafka retries it quietly)."""

    CODES = frozenset({KafkaError._AUTHENTICATION, KafkaError.SASL_AUTHENTICATION_FAILED, KafkaError._SSL})
    # A connection that dropped during the SASL handshake comes as _AUTHENTICATION too, with this in its text: a broker
    # still starting, not a refusal (a fresh clone's run: the compose stack's replicas-change service exited on "SASL
    # SCRAM-SHA-512 mechanism handshake failed: Local: Broker transport failure", and its container restarted).
    CONNECTION_DROPPED = "Broker transport failure"

    def __init__(self, bus: BusSettings) -> None:
        self.bus = bus
        self.reason: str | None = None

    def __call__(self, error: KafkaError) -> None:
        if error.code() in self.CODES and self.CONNECTION_DROPPED not in error.str():
            self.reason = error.str()

    def refused(self, client: Any) -> ClientRefused | None:
        """The refusal ``client`` met, if it met one."""
        client.poll(0)  # librdkafka hands its errors to the callback only here
        if self.reason is None:
            return None
        who = f" as {self.bus.sasl_username!r}" if self.bus.sasl_username else ""
        return ClientRefused(f"the bus refused this client{who} ({self.bus.security_protocol}): {self.reason}")

    def unavailable(self, client: Any, otherwise: str) -> BusUnavailable:
        return self.refused(client) or BusUnavailable(otherwise)


def client_config(bus: BusSettings) -> tuple[dict[str, Any], Refusal]:
    """A confluent-kafka client's settings, quiet, with the refusal it will report (any client: producer, consumer,
    admin)."""
    refusal = Refusal(bus)
    return {**bus.confluent_config(), **QUIET, "error_cb": refusal}, refusal


def _check_reachable(client: Producer | Consumer, timeout_s: float, refusal: Refusal) -> None:
    try:
        client.list_topics(timeout=timeout_s)
    except Exception as exc:  # noqa: BLE001 -- librdkafka reports unreachable brokers in several ways
        raise refusal.unavailable(client, f"no broker answered within {timeout_s:.0f} s ({exc})") from None


def _check_still_there(consumer: Consumer, topics: list[str], timeout_s: float) -> None:
    try:
        consumer.list_topics(topics[0] if topics else None, timeout=timeout_s)
    except KafkaException as exc:
        raise BusUnavailable(f"the bus stopped answering: no broker answered for {timeout_s:.0f} s "
                             f"({_reason(exc)})") from None


def _reason(exc: KafkaException) -> str:
    error = exc.args[0] if exc.args else None
    return error.str() if hasattr(error, "str") else str(exc)


@dataclass(frozen=True)
class Record:
    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes]]
    timestamp_ms: int


# The CLI reports an unreachable bus itself, in one line; librdkafka's own connection log would repeat it every 50 ms.
QUIET = {"log_level": 0}


def producer(bus: BusSettings) -> tuple[Producer, Refusal]:
    # Kafka's default partitioner (murmur2), as Java clients and the services use: a spec lands in the partition of
    # the topic reconciler's shard that owns it.
    config, refusal = client_config(bus)
    return Producer({**config, "enable.idempotence": True, "linger.ms": 5, "partitioner": "murmur2_random"}), refusal


def send(producer: Producer, topic: str, key: bytes | None, value: bytes | None, *,
         headers: list[tuple[str, bytes]] | None = None, on_delivery: Callable[[Any, Any], None] | None = None) -> None:
    """Hand one record to the producer, waiting while its queue is full."""
    while True:
        try:
            producer.produce(topic, key=key, value=value, headers=headers or None, on_delivery=on_delivery)
            break
        except BufferError:
            producer.poll(0.1)
    producer.poll(0)


def connected_producer(bus: BusSettings) -> tuple[Producer, Refusal]:
    """A producer that has reached the bus (or the refusal raised)."""
    p, refusal = producer(bus)
    _check_reachable(p, bus.answer_timeout_s, refusal)
    return p, refusal


def produce(bus: BusSettings, items: list[tuple[str, bytes | None, bytes | None, list[tuple[str, bytes]] | None]],
            *, delivered: list[tuple[str, int, int]] | None = None,
            offsets_by_key: dict[bytes, int] | None = None, via: tuple[Producer, Refusal] | None = None) -> int:
    """Produce and wait for every acknowledgement; ``delivered`` collects (topic, partition, offset) of each,
    ``offsets_by_key`` each keyed record's offset; ``via``: a ``connected_producer`` to use (a new one otherwise)."""
    p, refusal = via or connected_producer(bus)
    errors: list[str] = []
    refused: list[NotAuthorized] = []

    def report(err: Any, msg: Any) -> None:
        if err is not None:
            errors.append(str(err))
            if err.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED:
                refused.append(not_authorized(bus, "write", msg.topic(), err))
        else:
            if delivered is not None:
                delivered.append((msg.topic(), msg.partition(), msg.offset()))
            if offsets_by_key is not None and msg.key() is not None:
                offsets_by_key[msg.key()] = msg.offset()

    for topic, key, value, headers in items:
        try:
            send(p, topic, key, value, headers=headers, on_delivery=report)
        except KafkaException as exc:
            # Once librdkafka's metadata knows the topic refused, produce() itself raises the refusal: the same one
            # line as when it comes back with a delivery report.
            error = exc.args[0] if exc.args and isinstance(exc.args[0], KafkaError) else None
            _refused_topic(bus, "write", topic, error)
            raise
    remaining = p.flush(60)
    if refused:
        raise refused[0]
    if errors or remaining:
        raise RuntimeError(f"{len(errors) + remaining} record(s) were not delivered: {errors[:3]}")
    return len(items)


def publish(bus: BusSettings, topic: BusTopic[E], events: Iterable[E], *,
            offsets_by_key: dict[bytes, int] | None = None, via: tuple[Producer, Refusal] | None = None,
            as_burst: bool = False) -> int:
    """Produce these events to their topic, each keyed by its own key, and wait until the bus has them all. An event
    the topic does not carry is refused before anything is sent. ``as_burst``: several events are marked as one
    burst (``events.bursts``), so that a consumer that batches them takes them together, as soon as all are in."""
    events = list(events)
    for event in events:
        if not isinstance(event, topic.events):
            raise TypeError(f"{topic.name} carries {', '.join(t.__name__ for t in topic.events)}, "
                            f"not {type(event).__name__}")
    headers = [Burst.new(len(events)).header()] if as_burst and len(events) > 1 else None
    records = [(topic.name, event.key.encode(), encode(event), headers) for event in events]
    return produce(bus, records, offsets_by_key=offsets_by_key, via=via)


# A partition whose leader just changed answers these until the new leader has caught up; librdkafka does not mark
# them retriable when it reports a watermark query's failure.
_LEADER_SETTLING = frozenset({KafkaError.OFFSET_NOT_AVAILABLE, KafkaError.NOT_LEADER_FOR_PARTITION,
                              KafkaError.LEADER_NOT_AVAILABLE, KafkaError.FENCED_LEADER_EPOCH,
                              KafkaError.UNKNOWN_LEADER_EPOCH, KafkaError._TIMED_OUT})
# A connection to the broker dropped (or none up yet), or its handle torn down while librdkafka reconnects, none
# marked retriable (the admin adapters built on librdkafka take the same list): fresh clones' runs saw the compose
# stack's replicas-change service crash on "Broker transport failure" while its brokers were still starting, and on
# "Broker handle destroyed without termination" (_DESTROY_BROKER) a minute after, and its container restarted.
CONNECTION_LOST = frozenset({KafkaError._TRANSPORT, KafkaError._ALL_BROKERS_DOWN, KafkaError._DESTROY_BROKER})


def _momentary(exc: BaseException) -> bool:
    if not isinstance(exc, KafkaException) or not isinstance(exc.args[0], KafkaError):
        return False
    error = exc.args[0]
    return error.retriable() or error.code() in _LEADER_SETTLING | CONNECTION_LOST


def watermarks(consumer: Consumer, tp: TopicPartition, timeout_s: float) -> tuple[int, int]:
    """A partition's low and high watermarks. A partition in the middle of a leader change is asked again until
    ``timeout_s`` has passed (a new leader answers OFFSET_NOT_AVAILABLE until its high watermark has caught up)."""
    asking = Retrying(retry=retry_if_exception(_momentary), stop=stop_after_delay(timeout_s),
                      wait=wait_exponential(multiplier=0.05, max=1.0), reraise=True)
    return asking(consumer.get_watermark_offsets, tp, timeout=timeout_s)


def _ends(consumer: Consumer, partitions: list[TopicPartition], timeout_s: float) -> dict[tuple[str, int], int]:
    """The offset each non-empty partition ends at now."""
    ends = {}
    for tp in partitions:
        low, high = watermarks(consumer, tp, timeout_s)
        if high > low:
            ends[(tp.topic, tp.partition)] = high
    return ends


def _unreached(consumer: Consumer, ends: dict[tuple[str, int], int]) -> dict[tuple[str, int], int]:
    """The partitions whose position is not yet at their end (a position, unlike the last record, moves past
    transaction markers)."""
    if not ends:
        return ends
    positions = consumer.position([TopicPartition(topic, partition) for topic, partition in ends])
    return {(tp.topic, tp.partition): ends[(tp.topic, tp.partition)] for tp in positions
            if tp.offset < ends[(tp.topic, tp.partition)]}


def consume(bus: BusSettings, topics: list[str], *, follow: bool, idle_s: float = 1.0,
            from_beginning: bool = True, deadline: float | Callable[[], float] | None = None,
            must_exist: bool = False) -> Iterator[Record]:
    """Every record of ``topics`` from the beginning; unless ``follow``, stop once every partition has been read to
    the end it had when reading began and ``idle_s`` has passed without records (a broker may report the end as the
    start of its last batch, as Tansu does, so the end alone could miss that batch's tail; and on a loaded machine the
    first fetch can take longer than ``idle_s``, so idleness alone could stop before the first record). In any case
    stop at ``deadline`` (a time.monotonic() value, or a function giving it: a deadline that moves).

    A topic that does not exist is skipped (it may be created later), or with ``must_exist`` raises NoSuchTopic.
    Following, a quiet bus is asked for metadata every ``bus.liveness_check_s``: a consumer alone never notices the
    brokers are gone (librdkafka only keeps reconnecting), so BusUnavailable is raised when they no longer answer
    within ``bus.answer_timeout_s``."""
    config, refusal = client_config(bus)
    consumer = Consumer({**config, "group.id": f"{bus.reader_groups}cli-{uuid.uuid4()}",
                         "enable.auto.commit": False, "auto.offset.reset": "earliest" if from_beginning else "latest"})
    try:
        _check_reachable(consumer, bus.answer_timeout_s, refusal)
        assignments = []
        for topic in topics:
            meta = consumer.list_topics(topic, timeout=bus.answer_timeout_s).topics.get(topic)
            _refused_topic(bus, "read", topic, meta.error if meta is not None else None)
            if meta is None or meta.error is not None:
                if must_exist:
                    raise NoSuchTopic(f"no topic {topic!r} on the bus")
                continue
            offset = -2 if from_beginning else -1  # OFFSET_BEGINNING / OFFSET_END
            assignments += [TopicPartition(topic, p, offset) for p in meta.partitions]
        ends = {} if follow or not from_beginning else _ends(consumer, assignments, bus.answer_timeout_s)
        consumer.assign(assignments)
        last = checked = time.monotonic()
        while True:
            if deadline is not None and time.monotonic() >= (deadline() if callable(deadline) else deadline):
                return
            message = consumer.poll(0.2)
            if message is None:
                idle = time.monotonic() - last
                if not follow and idle >= idle_s:
                    ends = _unreached(consumer, ends)
                    if not ends:
                        return
                    if idle >= bus.answer_timeout_s:
                        raise BusUnavailable(f"{', '.join(f'{t}[{p}]' for t, p in ends)} not read to the end: no "
                                             f"record for {bus.answer_timeout_s:g} s")
                if follow and time.monotonic() - max(last, checked) >= bus.liveness_check_s:
                    _check_still_there(consumer, topics, bus.answer_timeout_s)
                    checked = time.monotonic()
                continue
            if message.error():
                continue
            last = time.monotonic()
            if ends.get((message.topic(), message.partition()), 0) <= message.offset() + 1:
                ends.pop((message.topic(), message.partition()), None)
            yield Record(message.topic(), message.partition(), message.offset(), message.key(), message.value(),
                         list(message.headers() or []), message.timestamp()[1])
    finally:
        consumer.close()


def events(bus: BusSettings, topic: BusTopic[E], **consuming: Any) -> Iterator[E]:
    """The events of ``topic``, decoded and typed, as ``consume`` reads them (its keyword arguments: ``follow``,
    ``idle_s``, ``deadline``, ...); a record that is not one of the topic's events is skipped."""
    for _record, event in records_with_events(bus, topic, **consuming):
        yield event


def records_with_events(bus: BusSettings, topic: BusTopic[E], **consuming: Any) -> Iterator[tuple[Record, E]]:
    """``events`` with the record each came from (its partition and offset)."""
    for record in consume(bus, [topic.name], **consuming):
        try:
            event = decode(record.value, topic=topic).event
        except InvalidEvent:
            continue
        yield record, event


def latest(bus: BusSettings, topic: BusTopic[E], *, timeout_s: float = 60.0) -> dict[str, E]:
    """The latest valid event per key of a compacted topic (``read_compacted``'s events)."""
    return {key: stored.decoded.event for key, stored in read_compacted(bus, topic, timeout_s=timeout_s).items()}


def record_key(raw: bytes | None) -> str | None:
    """A record's key as text, or None when it has none or it is not UTF-8 (no Ballast key is: such a record is
    not Ballast's)."""
    if raw is None:
        return None
    try:
        return raw.decode()
    except UnicodeDecodeError:
        return None


def check_key(raw_key: bytes | None, event: Event) -> None:
    """Raises InvalidEvent unless the record's key is the event's own key."""
    key = record_key(raw_key)
    if key != event.key:
        shown = "no key" if raw_key is None else (f"key {bounded(key, 200)!r}" if key is not None
                                                  else "a key that is not UTF-8")
        raise InvalidEvent(f"record has {shown} but the event's key is {bounded(event.key, 200)!r}: "
                           "produce it with the key the event names")


@dataclass(frozen=True)
class Stored(Generic[E]):
    decoded: Decoded[E]
    partition: int
    offset: int


def record_counts(bus: BusSettings, topics: Iterable[str], *, timeout_s: float = 10.0) -> dict[str, int]:
    """How many records each topic holds, from its partitions' watermarks (0 for a topic that does not exist; on a
    broker that reports the watermark as the start of its last batch, as Tansu does, fewer, but never 0 for a topic
    that holds any). Raises BusUnavailable when no broker answers within ``timeout_s``."""
    config, refusal = client_config(bus)
    consumer = Consumer({**config, "group.id": f"{bus.reader_groups}counts-{uuid.uuid4()}"})
    counts: dict[str, int] = {}
    try:
        for topic in topics:
            metadata = consumer.list_topics(topic, timeout=timeout_s).topics.get(topic)
            if metadata is None or metadata.error is not None:
                counts[topic] = 0
                continue
            counts[topic] = sum(high - low for low, high in (
                watermarks(consumer, TopicPartition(topic, p), timeout_s) for p in metadata.partitions))
    except KafkaException as exc:
        raise refusal.unavailable(consumer, f"no broker answered within {timeout_s:.0f} s ({exc})") from None
    finally:
        consumer.close()
    return counts


# Records taken from the consumer at once while catching up.
CATCH_UP_BATCH = 1000
# How long a read past the watermarks goes on while records keep coming.
CAUGHT_UP_GRACE_S = 5.0


def read_compacted(settings: BusSettings, topic: BusTopic[E], *, keys: Callable[[bytes | None], bool] | None = None,
                   idle_s: float = 0.5, timeout_s: float = 60.0) -> dict[str, Stored[E]]:
    """The latest valid event per key, read from the beginning of a compacted topic (only keys that ``keys``
    accepts, when given: a sharded service reads its own shards).

    Reads until every partition's position has reached the high watermark *and* the topic has been idle for
    ``idle_s``: a broker may report the watermark as the start of its last batch (Tansu does), so stopping exactly at
    the watermark could miss that batch's tail. Invalid records are skipped here; the live consumer dead-letters them.
    Raises BusUnavailable when no broker answers within ``timeout_s``, and TimeoutError when no record came for
    ``timeout_s`` before the end: a deadline for the whole read failed a topic reconciler's every start at 100,000
    topics on a loaded machine (hundreds of thousands of records to decode), though the read was progressing.
    """
    config, refusal = client_config(settings)
    consumer = Consumer({
        **config,
        "group.id": f"{settings.reader_groups}catch-up-{uuid.uuid4()}",
        "enable.auto.commit": False,
        "auto.offset.reset": "earliest",
    })
    latest: dict[str, Stored[E]] = {}
    try:
        try:
            metadata = consumer.list_topics(topic.name, timeout=timeout_s).topics.get(topic.name)
        except KafkaException as exc:
            raise refusal.unavailable(consumer, f"no broker answered within {timeout_s:.0f} s ({exc})") from None
        _refused_topic(settings, "read", topic.name, metadata.error if metadata is not None else None)
        if metadata is None or metadata.error is not None or not metadata.partitions:
            return latest
        partitions = [TopicPartition(topic.name, p, 0) for p in metadata.partitions]
        high = {tp.partition: watermarks(consumer, tp, timeout_s)[1] for tp in partitions}
        consumer.assign(partitions)
        position = {p: 0 for p in high}
        last_record = time.monotonic()
        caught_up_at: float | None = None
        while True:
            # Records a batch at a time: one poll per record cost more than decoding it.
            messages = consumer.consume(CATCH_UP_BATCH, 0.1)
            now = time.monotonic()
            if messages:
                last_record = now
            for message in messages:
                if message.error():
                    continue
                position[message.partition()] = message.offset() + 1
                if keys is not None and not keys(message.key()):
                    continue
                # Every record is untrusted here exactly as on the live path, which dead-letters what is skipped here.
                try:
                    decoded = decode(message.value(), topic=topic)
                    check_key(message.key(), decoded.event)
                except InvalidEvent:
                    continue
                latest[decoded.event.key] = Stored(decoded, message.partition(), message.offset())
            if caught_up_at is None and all(position[p] >= high[p] for p in high):
                caught_up_at = now
            # Past the watermarks, only the tail of a batch a broker counted short is waited for: a topic written
            # without pause (statuses during a burst) is never idle, and what comes later the live consumer reads.
            if caught_up_at is not None and (now - last_record >= idle_s or now - caught_up_at >= CAUGHT_UP_GRACE_S):
                break
            if not messages and now - last_record > timeout_s:
                raise TimeoutError(f"could not read {topic.name} to its end: no record for {timeout_s:.0f} s")
    finally:
        consumer.close()
    return latest


async def read_compacted_async(settings: BusSettings, topic: BusTopic[E], *,
                               keys: Callable[[bytes | None], bool] | None = None) -> dict[str, Stored[E]]:
    return await asyncio.to_thread(read_compacted, settings, topic, keys=keys)
