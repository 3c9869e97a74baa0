"""Plain confluent-kafka producing and consuming for the CLI (no consumer group state is left behind)."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from confluent_kafka import Consumer, Producer, TopicPartition

from events import InvalidEvent, decode
from events.models import Event

from services.common.settings import BusSettings


class BusUnavailable(RuntimeError):
    """The bus could not be reached in time."""


def _check_reachable(client: Producer | Consumer, bus: BusSettings, timeout_s: float = 10.0) -> None:
    try:
        client.list_topics(timeout=timeout_s)
    except Exception as exc:  # noqa: BLE001 -- librdkafka reports unreachable brokers in several ways
        raise BusUnavailable(f"no broker answered within {timeout_s:.0f} s ({exc})") from None


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


def producer(bus: BusSettings) -> Producer:
    # Kafka's default partitioner (murmur2), as Java clients and the services use: a spec lands in the partition of
    # the topic reconciler's shard that owns it.
    return Producer({**bus.confluent_config(), **QUIET, "enable.idempotence": True, "linger.ms": 5,
                     "partitioner": "murmur2_random"})


def produce(bus: BusSettings, items: list[tuple[str, bytes | None, bytes | None, list[tuple[str, bytes]] | None]],
            *, delivered: list[tuple[str, int, int]] | None = None) -> int:
    """Produce and wait for every acknowledgement; ``delivered`` collects (topic, partition, offset) of each."""
    p = producer(bus)
    _check_reachable(p, bus)
    errors: list[str] = []

    def report(err: object, msg: Any) -> None:
        if err is not None:
            errors.append(str(err))
        elif delivered is not None:
            delivered.append((msg.topic(), msg.partition(), msg.offset()))

    for topic, key, value, headers in items:
        while True:
            try:
                p.produce(topic, key=key, value=value, headers=headers or None, on_delivery=report)
                break
            except BufferError:
                p.poll(0.1)
        p.poll(0)
    remaining = p.flush(60)
    if errors or remaining:
        raise RuntimeError(f"{len(errors) + remaining} record(s) were not delivered: {errors[:3]}")
    return len(items)


def consume(bus: BusSettings, topics: list[str], *, follow: bool, idle_s: float = 1.0,
            from_beginning: bool = True, deadline: float | None = None) -> Iterator[Record]:
    """Every record of ``topics`` from the beginning; stop after ``idle_s`` without records unless ``follow``, and
    in any case at ``deadline`` (a time.monotonic() value)."""
    consumer = Consumer({**bus.confluent_config(), **QUIET, "group.id": f"ballast-cli-{uuid.uuid4()}",
                         "enable.auto.commit": False, "auto.offset.reset": "earliest" if from_beginning else "latest"})
    try:
        _check_reachable(consumer, bus)
        assignments = []
        for topic in topics:
            meta = consumer.list_topics(topic, timeout=10).topics.get(topic)
            if meta is None or meta.error is not None:
                continue
            offset = -2 if from_beginning else -1  # OFFSET_BEGINNING / OFFSET_END
            assignments += [TopicPartition(topic, p, offset) for p in meta.partitions]
        consumer.assign(assignments)
        last = time.monotonic()
        while True:
            if deadline is not None and time.monotonic() >= deadline:
                return
            message = consumer.poll(0.2)
            if message is None:
                if not follow and time.monotonic() - last >= idle_s:
                    return
                continue
            if message.error():
                continue
            last = time.monotonic()
            yield Record(message.topic(), message.partition(), message.offset(), message.key(), message.value(),
                         list(message.headers() or []), message.timestamp()[1])
    finally:
        consumer.close()


def latest(bus: BusSettings, topic: str, expect: type[Event]) -> dict[str, Event]:
    """The latest valid event of type ``expect`` per key, read from the beginning of ``topic`` (a compacted status
    topic); records that are not such events are passed over."""
    found: dict[str, Event] = {}
    for record in consume(bus, [topic], follow=False, idle_s=0.7):
        try:
            event = decode(record.value, expect=(expect,)).event
        except InvalidEvent:
            continue
        found[event.key] = event
    return found
