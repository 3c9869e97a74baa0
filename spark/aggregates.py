"""The Structured Streaming job: rolling load aggregates per broker, per log directory and per rack-tree domain at
every level, from ``ballast.load.samples`` and ``ballast.placement.placed`` to the compacted
``ballast.load.aggregates``.

    ballast run spark-aggregates        # local[2], or BALLAST_SPARK__MASTER's cluster; settings from BALLAST_*
    spark-submit ... "$(ballast spark script)"   # the same code in spark-submit's session (docs/operations.md)

Spark keeps running figures per (window, broker) and (window, log directory) under a watermark: counts, sums of rates,
the disk at the first and latest sample (``min_by`` / ``max_by``), the replicas Ballast placed there, so its state
stays small whatever the rate. Each
micro-batch writes the windows it updated, and the driver sums each updated window's brokers into every domain above
them (``spark.rollup``), from a cache of the window's broker figures that it primes from the aggregates topic at
start. Records are keyed by (window, entity): rewriting one is harmless, so a batch Spark replays after a crash
changes nothing, and the checkpoint holds the source offsets and the window state across restarts.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable
from datetime import UTC, datetime, timedelta
from typing import Any

from events import TOPICS, LoadAggregate, encode
from services.common.logging import get_logger
from services.common.settings import Settings, SparkSettings
from spark.restarts import QueryFailed, RestartingQuery
from spark.rollup import Member, member, rollup
from spark.stopping import BatchGate

SAMPLE_SCHEMAS = ("ballast.BrokerLoadSample", "ballast.LogDirLoadSample")
PLACED_SCHEMA = "ballast.ReplicasPlaced"
# The fields the job reads of either kind of payload (from_json leaves the other kind's fields null).
PAYLOAD = ("struct<broker:int, rack:string, logDir:string, sampledAt:string, online:boolean, bytesInKbS:double, "
           "bytesOutKbS:double, diskMb:double, replicas:int, leaders:int, placedAt:string, "
           "placed:array<struct<broker:int, rack:string, logDir:string>>>")
ENVELOPE = f"struct<schema:string, payload:{PAYLOAD}>"
FIGURES = "struct<disk:double, replicas:int, leaders:int>"


def read_events(spark: Any, settings: Settings) -> Any:
    """The samples and placements topics as one stream of (value) rows: through Ballast's own source, or Spark's JVM
    ``kafka`` source when its jar is on the classpath (``BALLAST_SPARK__SOURCE=kafka``)."""
    fmt = "kafka" if settings.spark.source == "kafka" else "ballast_bus"
    # Each source's own client's words (librdkafka's, or Java's); Spark redacts the password among them in its UI and
    # logs (spark.redaction.regex).
    bus = (settings.bus.confluent_config() if fmt == "ballast_bus"
           else {"bootstrap.servers": settings.bus.bootstrap_servers, **settings.bus.java()})
    if fmt == "ballast_bus":
        from spark.bus_source import BusSource

        spark.dataSource.register(BusSource)
    topics = f"{TOPICS.load_samples.name},{TOPICS.placements.name}"
    reader = spark.readStream.format(fmt).option("subscribe", topics)
    for key, value in bus.items():
        reader = reader.option(f"kafka.{key}", value)
    if fmt == "kafka":
        reader = reader.option("startingOffsets", "earliest").option("maxOffsetsPerTrigger",
                                                                     settings.spark.max_records_per_batch)
    else:
        reader = reader.option("maxRecordsPerBatch", settings.spark.max_records_per_batch)
    return reader.load().selectExpr("CAST(value AS STRING) AS value")


def entity_rows(events: Any) -> Any:
    """Envelopes -> one row per (event time, entity): a sample gives its broker's or log directory's row; a
    placement gives a row per replica placed, for its broker and, where Ballast chose one, its log directory.
    Placement rows carry no sample time, so the sample figures below ignore them."""
    from pyspark.sql import functions as F

    # An offline log directory's sample carries no figures: it is no load, and no entity of the aggregates.
    e = events.select(F.from_json("value", ENVELOPE).alias("e")).where(
        F.col("e.schema").isin(*SAMPLE_SCHEMAS, PLACED_SCHEMA) & F.coalesce(F.col("e.payload.online"), F.lit(True)))
    p = F.col("e.payload")
    no_figures = F.lit(None).cast(FIGURES)
    no_time = F.lit(None).cast("timestamp")

    def row(time: Any, kind: Any, entity: Any, rack: Any, bytes_in: Any, bytes_out: Any, figures: Any,
            sample_time: Any, placed: Any) -> Any:
        return F.struct(time.alias("event_time"), kind.alias("kind"), entity.alias("entity"), rack.alias("rack"),
                        bytes_in.alias("bytes_in"), bytes_out.alias("bytes_out"), figures.alias("figures"),
                        sample_time.alias("sample_time"), placed.alias("placed"))

    sampled = F.to_timestamp(p["sampledAt"])
    is_dir = F.col("e.schema") == "ballast.LogDirLoadSample"
    sample = row(sampled, F.when(is_dir, F.lit("log-dir")).otherwise(F.lit("broker")),
                 F.when(is_dir, F.concat_ws(":", p["broker"].cast("string"), p["logDir"])).otherwise(
                     p["broker"].cast("string")), p["rack"],
                 F.coalesce(p["bytesInKbS"], F.lit(0.0)), F.coalesce(p["bytesOutKbS"], F.lit(0.0)),
                 F.struct(F.coalesce(p["diskMb"], F.lit(0.0)).alias("disk"),
                          F.coalesce(p["replicas"], F.lit(0)).alias("replicas"),
                          F.coalesce(p["leaders"], F.lit(0)).alias("leaders")),
                 sampled, F.lit(0))
    placed_at = F.to_timestamp(p["placedAt"])

    def placed_on(kind: str, entity: Any) -> Any:
        return lambda r: row(placed_at, F.lit(kind), entity(r), r["rack"], F.lit(0.0), F.lit(0.0), no_figures,
                             no_time, F.lit(1))

    replicas = F.coalesce(p["placed"], F.array())
    placements = F.concat(
        F.transform(replicas, placed_on("broker", lambda r: r["broker"].cast("string"))),
        F.transform(F.filter(replicas, lambda r: r["logDir"].isNotNull()),
                    placed_on("log-dir", lambda r: F.concat_ws(":", r["broker"].cast("string"), r["logDir"]))))
    rows = F.when(F.col("e.schema") == PLACED_SCHEMA, placements).otherwise(F.array(sample))
    return e.select(F.explode(rows).alias("r")).select("r.*")


def windowed(events: Any, spark_settings: SparkSettings) -> Any:
    """(window, kind, entity) -> running figures, as a streaming aggregation."""
    from pyspark.sql import functions as F

    return (entity_rows(events).withWatermark("event_time", f"{spark_settings.watermark_s} seconds")
            .groupBy(F.window("event_time", f"{spark_settings.window_s} seconds", f"{spark_settings.slide_s} seconds"),
                     "kind", "entity")
            .agg(F.count("sample_time").alias("samples"), F.sum("bytes_in").alias("sum_in"),
                 F.sum("bytes_out").alias("sum_out"), F.min_by("figures", "sample_time").alias("first"),
                 F.max_by("figures", "sample_time").alias("last"), F.max("sample_time").alias("last_at"),
                 F.max("rack").alias("rack"), F.sum("placed").alias("placements")))


def _utc(moment: datetime) -> datetime:
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment


def member_of(row: Any) -> Member:
    first, last = row.first, row.last  # None where the window has placements but no sample yet
    return member(row.entity, row.rack, row.samples, row.sum_in, row.sum_out, first.disk if first else 0.0,
                  last.disk if last else 0.0, last.replicas if last else 0, last.leaders if last else 0,
                  _utc(row.last_at) if row.last_at else None, placements=row.placements or 0)


def aggregate(window: tuple[datetime, datetime], kind: str, entity: str, level: int, m: Member) -> LoadAggregate:
    return LoadAggregate(
        window_start=window[0], window_end=window[1], entity_kind=kind, entity=entity, level=level, rack=m.rack,
        samples=m.samples, bytes_in_kb_s=m.bytes_in_kb_s, bytes_out_kb_s=m.bytes_out_kb_s, disk_mb=m.disk_mb,
        disk_growth_mb=m.disk_growth_mb, replicas=m.replicas, leaders=m.leaders, placements=m.placements,
        last_sample_at=m.last_sample_at)


class WindowBrokers:
    """The driver's memory of each open window's broker figures, to sum them into domains. Primed from the
    aggregates topic, so a restarted job sums whole windows, not only the brokers it has seen since."""

    def __init__(self, keep: timedelta) -> None:
        self.keep = keep
        self.windows: dict[tuple[datetime, datetime], dict[str, Member]] = {}

    def prime(self, aggregates: Iterable[LoadAggregate]) -> None:
        for a in aggregates:
            if a.entity_kind == "broker":
                self.windows.setdefault((a.window_start, a.window_end), {})[a.entity] = Member(
                    a.entity, a.rack, a.samples, a.bytes_in_kb_s, a.bytes_out_kb_s, a.disk_mb, a.disk_growth_mb,
                    a.replicas, a.leaders, a.last_sample_at, a.placements)
        self.evict()

    def update(self, window: tuple[datetime, datetime], broker: Member) -> None:
        self.windows.setdefault(window, {})[broker.name] = broker

    def evict(self) -> None:
        ends = [end for _start, end in self.windows]
        if ends:
            horizon = max(ends) - self.keep
            for window in [w for w in self.windows if w[1] < horizon]:
                del self.windows[window]


def batch_aggregates(rows: Iterable[Any], cache: WindowBrokers) -> list[LoadAggregate]:
    """A micro-batch's updated rows -> their aggregates and those of every domain of the windows they touch."""
    out, touched = [], set()
    for row in rows:
        window = (_utc(row.window.start), _utc(row.window.end))
        m = member_of(row)
        out.append(aggregate(window, row.kind, row.entity, 0, m))
        if row.kind == "broker":
            cache.update(window, m)
            touched.add(window)
    for window in sorted(touched):
        for (domain, level), figures in sorted(rollup(cache.windows[window].values()).items()):
            out.append(aggregate(window, "domain", domain, level, figures))
    cache.evict()
    return out


def kafka_sink(settings: Settings, gate: BatchGate | None = None) -> Callable[[Any, int], None]:
    """foreachBatch: every updated (window, entity) as a LoadAggregate, keyed by (window, entity). ``gate``: where a
    stop waits for the batch being written."""
    from confluent_kafka import Producer

    from services.common import busio

    s = settings.spark
    cache = WindowBrokers(keep=timedelta(seconds=s.window_s + s.watermark_s + s.slide_s))
    cache.prime(busio.latest(settings.bus, TOPICS.load_aggregates).values())
    producer = Producer({**settings.bus.confluent_config(), "enable.idempotence": True, "linger.ms": 20,
                         "log_level": 0})

    def write(batch: Any, batch_id: int) -> None:
        with gate.batch() if gate else contextlib.nullcontext():
            aggregates = batch_aggregates(batch.toLocalIterator(), cache)
            for a in aggregates:
                busio.send(producer, TOPICS.load_aggregates.name, a.key.encode(), encode(a))
            # The batch is done only when the broker has every record: Spark then commits it, never before.
            if producer.flush(60) != 0:
                raise RuntimeError(f"batch {batch_id}: aggregates not delivered within 60 s")
        get_logger("spark-aggregates").info("batch written", batch=batch_id, aggregates=len(aggregates))

    return write


def start(spark: Any, settings: Settings, sink: Callable[[Any, int], None] | None = None) -> Any:
    s = settings.spark
    return (windowed(read_events(spark, settings), s).writeStream.outputMode("update")
            .option("checkpointLocation", s.checkpoint_location)
            .trigger(processingTime=f"{s.trigger_s} seconds")
            .foreachBatch(sink or kafka_sink(settings)).queryName("ballast-load-aggregates").start())


KAFKA_SOURCE_CLASS = "org.apache.spark.sql.kafka010.KafkaSourceProvider"


def kafka_source_missing(spark: Any) -> str | None:
    """What is wrong when BALLAST_SPARK__SOURCE=kafka finds no Kafka source in the JVM (spark-submit without its
    --jars); None when it is there."""
    if spark.sparkContext._jvm.org.apache.spark.util.Utils.classIsLoadable(KAFKA_SOURCE_CLASS):
        return None
    return ("BALLAST_SPARK__SOURCE=kafka, but Spark's Kafka source is not on the classpath: give spark-submit "
            '--jars "$(ballast spark jars)"')


def main() -> None:
    from services.common.bus_topics import wait_for_bus_to_start
    from services.common.settings import get_settings
    from spark.jvm_output import JvmOutput
    from spark.session import job_session, kafka_source_jars, submitted_conf
    from spark.stopping import StopRequest

    log = get_logger("spark-aggregates")
    settings = get_settings()
    wait_for_bus_to_start(settings.bus, log)  # started before its bus (a container), the job waits for it
    under_submit = submitted_conf() is not None
    jars = kafka_source_jars() if settings.spark.source == "kafka" and not under_submit else []
    # Ctrl-C (or a SIGTERM) asks for a stop that is then done between two waits: a KeyboardInterrupt raised inside a
    # py4j call would leave the JVM half answered and print a few hundred lines of py4j traces instead. Until the
    # session is up a signal ends the process at once (the JVM follows it); from then on it is a request to stop.
    # Installed after the session: the SparkContext installs its own SIGINT handler, which raises.
    stop = StopRequest()
    jvm_output = JvmOutput(log)
    with jvm_output.captured():
        spark = job_session("ballast-load-aggregates", settings.spark, jars=jars, log=log)
    if settings.spark.source == "kafka" and (missing := kafka_source_missing(spark)):
        spark.stop()
        log.error("cannot start", reason=missing)
        raise SystemExit(1)
    stop.on_signals()
    if under_submit:
        stop.on_jvm_shutdown(spark, timeout_s=max(60.0, 3 * settings.spark.trigger_s))
    gate = BatchGate(spark)
    sink = kafka_sink(settings, gate)
    failed: QueryFailed | None = None
    try:
        query = RestartingQuery(lambda: start(spark, settings, sink), log)
        log.info("running", master=spark.sparkContext.master, app=spark.sparkContext.applicationId,
                 reads=[TOPICS.load_samples.name, TOPICS.placements.name], writes=TOPICS.load_aggregates.name,
                 checkpoint=settings.spark.checkpoint_location)
        while not stop.asked.is_set() and query.check():
            query.wait(1)
        if query.query.isActive:
            gate.stop(query.query)
    except QueryFailed as error:
        failed = error
    stop.finish(spark)
    if not stop.by_jvm:  # a shutting-down JVM stops its context itself, after the hook returns
        spark.stop()
    jvm_output.settle()
    if failed:
        log.error("stopped", reason=str(failed))
        raise SystemExit(1)
    log.info("stopped", reason="the JVM's shutdown" if stop.by_jvm else
             "signal" if stop.asked.is_set() else "the query ended")


if __name__ == "__main__":  # spark-submit "$(ballast spark script)"
    from services.common.logging import configure_logging
    from services.common.settings import get_settings

    configure_logging("spark-aggregates", level=get_settings().log_level, fmt=get_settings().log_format)
    main()
