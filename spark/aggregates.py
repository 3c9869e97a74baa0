"""The Structured Streaming job: rolling load aggregates per broker, per log directory and per rack-tree domain at
every level, from ``ballast.load.samples`` to the compacted ``ballast.load.aggregates``.

    ballast run spark-aggregates                 # local[2], settings from BALLAST_* variables
    spark-submit spark/aggregates.py             # a real Spark cluster: the same code, its own session

Each sample is exploded into the entities it speaks for (a broker sample: the broker and each domain above it); each
(window, entity) collects its samples under a watermark, and every micro-batch writes the windows it updated, their
figures recomputed from all their samples (``spark.rollup``), keyed by (window, entity). Rewriting a window's record
is harmless, so a batch Spark replays after a crash changes nothing (idempotent), and the checkpoint holds the source
offsets and the window state across restarts.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from datetime import UTC
from typing import Any

from events import TOPICS, LoadAggregate, encode
from services.common.settings import Settings, SparkSettings
from spark.rollup import Sample, figures

SAMPLE_SCHEMAS = ("ballast.BrokerLoadSample", "ballast.LogDirLoadSample")
PAYLOAD = ("struct<broker:int, rack:string, logDir:string, sampledAt:string, bytesInKbS:double, bytesOutKbS:double, "
           "diskMb:double, replicas:int, leaders:int>")
ENVELOPE = f"struct<schema:string, payload:{PAYLOAD}>"


def read_samples(spark: Any, settings: Settings) -> Any:
    """The samples topic as a stream of (value) rows: through Ballast's own source, or Spark's JVM ``kafka`` source
    when its jar is on the classpath (``BALLAST_SPARK__SOURCE=kafka``)."""
    bus = settings.bus.confluent_config()
    fmt = "kafka" if settings.spark.source == "kafka" else "ballast_bus"
    if fmt == "ballast_bus":
        from spark.bus_source import BusSource

        spark.dataSource.register(BusSource)
    reader = spark.readStream.format(fmt).option("subscribe", TOPICS.load_samples.name)
    for key, value in bus.items():
        reader = reader.option(f"kafka.{key}", value)
    if fmt == "kafka":
        reader = reader.option("startingOffsets", "earliest")
    return reader.load().selectExpr("CAST(value AS STRING) AS value")


def windowed(samples: Any, spark_settings: SparkSettings) -> Any:
    """(window, kind, entity, level) -> the collected samples, as a streaming aggregation."""
    from pyspark.sql import functions as F

    e = samples.select(F.from_json("value", ENVELOPE).alias("e")).where(F.col("e.schema").isin(*SAMPLE_SCHEMAS))
    p = F.col("e.payload")
    parts = F.filter(F.split(F.coalesce(p["rack"], F.lit("")), "/"), lambda x: x != "")
    domains = F.when(F.size(parts) > 0, F.transform(
        F.sequence(F.lit(1), F.size(parts)),
        lambda i: F.struct(F.lit("domain").alias("kind"),
                           F.concat(F.lit("/"), F.array_join(F.slice(parts, 1, i), "/")).alias("entity"),
                           i.alias("level")))).otherwise(F.array())
    is_dir = F.col("e.schema") == "ballast.LogDirLoadSample"
    member = F.when(is_dir, F.concat_ws(":", p["broker"].cast("string"), p["logDir"])).otherwise(
        p["broker"].cast("string"))
    broker_entities = F.concat(F.array(F.struct(F.lit("broker").alias("kind"), member.alias("entity"),
                                                F.lit(0).alias("level"))), domains)
    dir_entities = F.array(F.struct(F.lit("log-dir").alias("kind"), member.alias("entity"), F.lit(0).alias("level")))
    rows = e.select(
        F.to_timestamp(p["sampledAt"]).alias("event_time"), member.alias("member"),
        F.coalesce(p["bytesInKbS"], F.lit(0.0)).alias("bytes_in"), F.coalesce(p["bytesOutKbS"], F.lit(0.0)).alias(
            "bytes_out"), F.coalesce(p["diskMb"], F.lit(0.0)).alias("disk"),
        F.coalesce(p["replicas"], F.lit(0)).alias("replicas"), F.coalesce(p["leaders"], F.lit(0)).alias("leaders"),
        F.explode(F.when(is_dir, dir_entities).otherwise(broker_entities)).alias("entity"))
    return (rows.withWatermark("event_time", f"{spark_settings.watermark_s} seconds")
            .groupBy(F.window("event_time", f"{spark_settings.window_s} seconds", f"{spark_settings.slide_s} seconds"),
                     F.col("entity.kind").alias("kind"), F.col("entity.entity").alias("entity"),
                     F.col("entity.level").alias("level"))
            .agg(F.collect_list(F.struct("event_time", "member", "bytes_in", "bytes_out", "disk", "replicas",
                                         "leaders")).alias("samples")))


def aggregate_of(row: Any) -> LoadAggregate:
    f = figures(Sample(s.event_time.replace(tzinfo=UTC) if s.event_time.tzinfo is None else s.event_time, s.member,
                       s.bytes_in, s.bytes_out, s.disk, s.replicas, s.leaders) for s in row.samples)
    start, end = row.window.start, row.window.end
    return LoadAggregate(
        window_start=start.replace(tzinfo=UTC) if start.tzinfo is None else start,
        window_end=end.replace(tzinfo=UTC) if end.tzinfo is None else end,
        entity_kind=row.kind, entity=row.entity, level=row.level, samples=f.samples,
        bytes_in_kb_s=f.bytes_in_kb_s, bytes_out_kb_s=f.bytes_out_kb_s, disk_mb=f.disk_mb,
        disk_growth_mb=f.disk_growth_mb, replicas=f.replicas, leaders=f.leaders, last_sample_at=f.last_sample_at)


def kafka_sink(settings: Settings) -> Callable[[Any, int], None]:
    """foreachBatch: every updated (window, entity) as a LoadAggregate, keyed by (window, entity)."""
    from confluent_kafka import Producer

    producer = Producer({**settings.bus.confluent_config(), "enable.idempotence": True, "linger.ms": 20})

    def write(batch: Any, batch_id: int) -> None:
        count = 0
        for row in batch.toLocalIterator():
            aggregate = aggregate_of(row)
            while True:
                try:
                    producer.produce(TOPICS.load_aggregates.name, key=aggregate.key.encode(), value=encode(aggregate))
                    break
                except BufferError:
                    producer.poll(0.1)
            count += 1
        # The batch is done only when the broker has every record: Spark then commits it, never before.
        if producer.flush(60) != 0:
            raise RuntimeError(f"batch {batch_id}: aggregates not delivered within 60 s")
        print(f"batch {batch_id}: {count} aggregates", file=sys.stderr, flush=True)

    return write


def start(spark: Any, settings: Settings, sink: Callable[[Any, int], None] | None = None) -> Any:
    s = settings.spark
    return (windowed(read_samples(spark, settings), s).writeStream.outputMode("update")
            .option("checkpointLocation", str(s.checkpoint_dir))
            .trigger(processingTime=f"{s.trigger_s} seconds")
            .foreachBatch(sink or kafka_sink(settings)).queryName("ballast-load-aggregates").start())


def main() -> None:
    from services.common.settings import get_settings
    from spark.session import local_session

    settings = get_settings()
    spark = local_session("ballast-load-aggregates", master=settings.spark.master)
    query = start(spark, settings)
    print(f"ballast-load-aggregates running: {TOPICS.load_samples.name} -> {TOPICS.load_aggregates.name}, "
          f"checkpoint {settings.spark.checkpoint_dir}", file=sys.stderr, flush=True)
    query.awaitTermination()


if __name__ == "__main__":
    main()
