"""A PySpark streaming data source that reads Ballast's bus topics with confluent-kafka (no JVM Kafka jar needed).

    spark.dataSource.register(BusSource)
    spark.readStream.format("ballast_bus").option("subscribe", "ballast.load.samples")
         .option("kafka.bootstrap.servers", "127.0.0.1:9092").load()

Rows: topic, partition, offset, key, value (the envelope JSON), timestamp. Offsets are per partition
(``{"topic": {"0": next_offset}}``, string keys in sorted order so Spark compares them as strings) and live in the
query's checkpoint, so a restarted query resumes exactly where the last committed batch ended.

The end of a batch is each partition's high watermark, except on a broker whose watermark lags (Tansu reports the
base offset of its last record batch + 1): when the watermark has not moved since the last batch, one fetch from it
finds the records that are really there. Reads stop by offset, never by counting records (offsets may have gaps).
"""

from __future__ import annotations

import signal
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition

SCHEMA = "topic string, partition int, offset long, key string, value string, timestamp timestamp"
Offsets = dict[str, dict[str, int]]


def ignore_ctrl_c_in_spark_planner() -> None:
    """In the Python process where Spark plans this source's offsets, SIGINT is ignored: Spark starts it in the
    driver's process group, so under spark-submit a Ctrl-C reaches it as well and would fail the query between two
    batches, while the driver is stopping it there (spark.stopping). Under ``ballast run`` it inherits PySpark's
    ignoring of SIGINT already. Nowhere else (a test constructing a reader in its own process keeps its Ctrl-C)."""
    main = getattr(sys.modules.get("__main__"), "__spec__", None)
    if getattr(main, "name", "").startswith("pyspark.") and threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.SIG_IGN)


def kafka_config(options: dict[str, str]) -> dict[str, str]:
    """librdkafka properties from the source's ``kafka.*`` options."""
    return {k.removeprefix("kafka."): v for k, v in options.items() if k.startswith("kafka.")}


def _ordered(offsets: dict[str, dict[int, int]]) -> Offsets:
    return {t: {str(p): offsets[t][p] for p in sorted(offsets[t])} for t in sorted(offsets)}


@dataclass(frozen=True)
class Range(InputPartition):
    topic: str
    partition: int
    start: int
    end: int


class BusStreamReader(DataSourceStreamReader):
    def __init__(self, options: dict[str, str]) -> None:
        self.options = options
        self.topics = [t.strip() for t in options.get("subscribe", "").split(",") if t.strip()]
        if not self.topics:
            raise ValueError("the ballast_bus source needs option subscribe=<topic>[,<topic>...]")
        self.config = kafka_config(options)
        self.timeout_s = float(options.get("timeoutSeconds", "30"))
        # Admission control: at most this many records per micro-batch, split evenly over the partitions.
        self.max_records = int(options["maxRecordsPerBatch"]) if options.get("maxRecordsPerBatch") else None
        self._consumer: Any = None
        self._last_watermark: dict[tuple[str, int], int] = {}
        ignore_ctrl_c_in_spark_planner()

    def _driver_consumer(self) -> Any:
        from confluent_kafka import Consumer

        if self._consumer is None:
            self._consumer = Consumer({**self.config, "group.id": f"ballast-spark-{uuid.uuid4()}",
                                       "enable.auto.commit": False, "auto.offset.reset": "earliest"})
        return self._consumer

    def _partitions(self) -> dict[str, list[int]]:
        metadata = self._driver_consumer().list_topics(timeout=self.timeout_s)
        found = {}
        for topic in self.topics:
            meta = metadata.topics.get(topic)
            if meta is None or meta.error is not None:
                raise RuntimeError(f"topic {topic!r} is not on the bus ({meta.error if meta else 'missing'})")
            found[topic] = sorted(meta.partitions)
        return found

    def initialOffset(self) -> Offsets:
        from confluent_kafka import TopicPartition

        from services.common.busio import watermarks

        consumer = self._driver_consumer()
        low = {}
        for topic, partitions in self._partitions().items():
            low[topic] = {p: watermarks(consumer, TopicPartition(topic, p), self.timeout_s)[0]
                          for p in partitions}
        return _ordered(low)

    def latestOffset(self, start: Offsets | None = None, limit: Any = None) -> Offsets:
        from confluent_kafka import TopicPartition

        from services.common.busio import watermarks

        consumer = self._driver_consumer()
        ends: dict[str, dict[int, int]] = {}
        found = self._partitions()
        share = max(1, self.max_records // sum(len(p) for p in found.values())) if self.max_records else None
        for topic, partitions in found.items():
            ends[topic] = {}
            for p in partitions:
                high = watermarks(consumer, TopicPartition(topic, p), self.timeout_s)[1]
                previous = int((start or {}).get(topic, {}).get(str(p), 0))
                end = max(high, previous)
                if self._last_watermark.get((topic, p)) == high:
                    end = max(end, self._probe(topic, p, end))
                self._last_watermark[(topic, p)] = high
                ends[topic][p] = min(end, previous + share) if share is not None and start is not None else end
        return _ordered(ends)

    def _probe(self, topic: str, partition: int, offset: int) -> int:
        """The offset after the last record really there from ``offset`` on (one fetch)."""
        from confluent_kafka import TopicPartition

        consumer = self._driver_consumer()
        consumer.assign([TopicPartition(topic, partition, offset)])
        end, deadline = offset, time.monotonic() + 0.5
        while time.monotonic() < deadline:
            batch = consumer.consume(10_000, timeout=0.05)
            good = [m.offset() for m in batch if m.error() is None]
            if not good:
                break
            end = max(end, max(good) + 1)
        consumer.unassign()
        return end

    def partitions(self, start: Offsets, end: Offsets) -> list[Range]:
        ranges = []
        for topic, by_partition in end.items():
            for p, stop in by_partition.items():
                begin = int(start.get(topic, {}).get(p, 0))
                if stop > begin:
                    ranges.append(Range(topic, int(p), begin, int(stop)))
        return ranges

    def read(self, partition: Range) -> Iterator[tuple[Any, ...]]:  # type: ignore[override]
        yield from read_range(self.config, partition, self.timeout_s)

    def commit(self, end: Offsets) -> None:
        """Nothing to do: the offsets are in Spark's checkpoint, not in a consumer group."""

    def stop(self) -> None:
        if self._consumer is not None:
            self._consumer.close()
            self._consumer = None


def read_range(config: dict[str, str], r: Range, timeout_s: float) -> Iterator[tuple[Any, ...]]:
    """Every record of ``r.topic``/``r.partition`` with ``r.start <= offset < r.end`` (runs on an executor)."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({**config, "group.id": f"ballast-spark-{uuid.uuid4()}", "enable.auto.commit": False,
                         "auto.offset.reset": "earliest"})
    tp = TopicPartition(r.topic, r.partition, r.start)
    consumer.assign([tp])
    deadline = time.monotonic() + timeout_s
    try:
        while True:
            batch = consumer.consume(10_000, timeout=0.2)
            for message in batch:
                if message.error() is not None:
                    continue
                offset = message.offset()
                if offset >= r.end:
                    return
                if offset < r.start:
                    continue
                key, value = message.key(), message.value()
                yield (r.topic, r.partition, offset, key.decode(errors="replace") if key is not None else None,
                       value.decode(errors="replace") if value is not None else None,
                       datetime.fromtimestamp(message.timestamp()[1] / 1000, tz=UTC))
                if offset >= r.end - 1:
                    return
            if not batch:
                # Past a gap at the end of the range (compaction, transaction markers) there may be no record to
                # stop at: the consumer's position says the range is done.
                position = consumer.position([tp])[0].offset
                if position >= r.end:
                    return
                if time.monotonic() > deadline:
                    raise TimeoutError(f"{r.topic}-{r.partition}: offsets {r.start}..{r.end} not readable within "
                                       f"{timeout_s:.0f} s (last position {position})")
            else:
                deadline = time.monotonic() + timeout_s
    finally:
        consumer.close()


class BusSource(DataSource):
    """``format("ballast_bus")``: Ballast's topics through confluent-kafka."""

    @classmethod
    def name(cls) -> str:
        return "ballast_bus"

    def schema(self) -> str:
        return SCHEMA

    def streamReader(self, schema: Any) -> BusStreamReader:
        return BusStreamReader(dict(self.options))
