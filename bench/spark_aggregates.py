"""Benchmark: load samples through the Spark aggregates job (local[2]) on the local broker.

    python -m bench.spark_aggregates [--events 200000] [--rate 2000] [--write BENCHMARKS.md]
    python -m bench.spark_aggregates --sources [--events 200000] [--rate 2000] [--seconds 30] [--write ...]

``--sources``: on the real local Kafka cluster, Ballast's own Python source (``ballast_bus``) and Spark's JVM
``kafka`` source (spark-sql-kafka) side by side in one run, each on fresh topics with the same samples.

Throughput: ``--events`` broker samples (100 brokers in 5 DCs x 4 racks x 5, one sample per broker per simulated
5 s) are on the topic before the job starts; the job's own progress reports give the rows it read per second of
processing, the figure the target is about. Freshness: samples produced live at ``--rate`` per second with the
current time as event time; for every aggregate written, the time it reached the aggregates topic minus its newest
sample's event time, p50 / p99.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import sys
import tempfile
import threading
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

from confluent_kafka import Consumer, Producer, TopicPartition

from bench.markdown import replace_section
from bench.replicas_change import percentile
from events import TOPICS, BrokerLoadSample, encode
from services.common import busio
from services.common.bus_topics import ensure_topics
from services.common.settings import BusSettings, Settings, SparkSettings
from services.local.broker import free_port, start_tansu

WARM_UP_S = 15.0  # the query's first batches (Python workers starting, code warming up)
BROKERS = [(d * 20 + r * 5 + b + 1, f"/dc{d + 1}/r{r + 1}") for d in range(5) for r in range(4) for b in range(5)]


def sample(broker: int, rack: str, at: datetime) -> bytes:
    return encode(BrokerLoadSample(broker=broker, rack=rack, sampled_at=at, bytes_in_kb_s=100.0 + broker,
                                   bytes_out_kb_s=200.0, disk_mb=1000.0, replicas=10, leaders=5))


def produce_backlog(bus: BusSettings, events: int) -> None:
    producer = Producer({**bus.confluent_config(), "linger.ms": 20, "batch.size": 1_000_000})
    start = datetime.now(UTC) - timedelta(seconds=5 * events // len(BROKERS))
    for i in range(events):
        broker, rack = BROKERS[i % len(BROKERS)]
        at = start + timedelta(seconds=5 * (i // len(BROKERS)))
        busio.send(producer, TOPICS.load_samples.name, f"broker:{broker}".encode(), sample(broker, rack, at))
    producer.flush(120)


def throughput(spark, settings: Settings, events: int, say) -> dict[str, float]:
    from spark.aggregates import start

    query = start(spark, settings, sink=lambda batch, _id: batch.count())
    read, busy_ms, started = 0, 0, time.monotonic()
    seen_batches: set[int] = set()
    try:
        while read < events and time.monotonic() - started < 900:
            time.sleep(1)
            for progress in query.recentProgress:
                if progress["batchId"] in seen_batches or not progress.get("numInputRows"):
                    continue
                seen_batches.add(progress["batchId"])
                read += progress["numInputRows"]
                busy_ms += progress["durationMs"].get("triggerExecution", 0)
            say(f"  {read:,} of {events:,} samples read")
    finally:
        query.stop()
    return {"events": read, "busy_s": busy_ms / 1000, "wall_s": time.monotonic() - started,
            "per_s": read / (busy_ms / 1000) if busy_ms else 0.0}


def freshness(spark, settings: Settings, rate: int, seconds: int, say) -> dict[str, float]:
    from spark.aggregates import kafka_sink, start

    arrivals: list[tuple[float, float]] = []  # (when observed, freshness)
    stop = threading.Event()

    def watch() -> None:
        consumer = Consumer({**settings.bus.confluent_config(), "group.id": f"bench-{uuid.uuid4()}",
                             "auto.offset.reset": "latest", "fetch.wait.max.ms": 10})
        consumer.assign([TopicPartition(TOPICS.load_aggregates.name, 0, -1)])
        while not stop.is_set():
            message = consumer.poll(0.05)
            if message is None or message.error():
                continue
            newest = json.loads(message.value())["payload"].get("lastSampleAt")
            if newest:
                at = datetime.fromisoformat(newest.replace("Z", "+00:00"))
                arrivals.append((time.monotonic(), time.time() - at.timestamp()))
        consumer.close()

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    query = start(spark, settings, sink=kafka_sink(settings))
    producer = Producer({**settings.bus.confluent_config(), "linger.ms": 5})
    began = time.monotonic()
    sent = 0
    try:
        while time.monotonic() - began < seconds:
            due = int((time.monotonic() - began) * rate)
            now = datetime.now(UTC)
            while sent < due:
                broker, rack = BROKERS[sent % len(BROKERS)]
                producer.produce(TOPICS.load_samples.name, key=f"broker:{broker}".encode(),
                                 value=sample(broker, rack, now))
                sent += 1
            producer.poll(0)
            time.sleep(0.01)
        producer.flush(30)
        time.sleep(5)
    finally:
        query.stop()
        stop.set()
        watcher.join(timeout=5)
    say(f"  {sent:,} live samples, {len(arrivals):,} aggregates observed")
    everything = [f for _, f in arrivals]
    steady = [f for when, f in arrivals if when - began >= WARM_UP_S]
    return {"sent": sent, "aggregates": len(arrivals), "p50": percentile(everything, 50),
            "p99": percentile(everything, 99), "steady_p50": percentile(steady, 50),
            "steady_p99": percentile(steady, 99)}


def render(t: dict[str, float], f: dict[str, float], command: str, rate: int, seconds: int) -> str:
    return "\n".join([
        "## Load aggregates through Spark (local[2])",
        "",
        f"Command: `{command}`. The job of `spark/aggregates.py` on the local broker, 100 brokers in 5 DCs x 4 racks x 5; "
        "each sample counts for its broker, its rack and its DC; windows 60 s sliding by 10 s, 30 s watermark.",
        "",
        "| measure | value | target |",
        "|---|---|---|",
        f"| sustained samples per second of processing (backlog of {t['events']:,}) | {t['per_s']:,.0f} | >= 20,000 |",
        f"| backlog wall time (incl. the first batch's start-up) | {t['wall_s']:.0f} s | |",
        f"| freshness, event time -> aggregate on the topic, p50 / p99 ({rate:,} samples/s for {seconds} s) | "
        f"{f['p50']:.1f} s / {f['p99']:.1f} s | p99 <= 10 s |",
        f"| the same after the first {WARM_UP_S:.0f} s of the query (steady state) | "
        f"{f['steady_p50']:.1f} s / {f['steady_p99']:.1f} s | p99 <= 10 s |",
        "",
        "Trigger 2 s (the setting's default). Freshness counts every aggregate record written, each measured from the "
        "newest sample it holds; the first row includes the query's start-up, the second leaves its first "
        f"{WARM_UP_S:.0f} s out.",
        "",
    ])


SOURCES = {"ballast_bus": "Ballast's Python source (confluent-kafka)", "kafka": "Spark's JVM source (spark-sql-kafka)"}


def sources_side_by_side(events: int, rate: int, seconds: int, say) -> dict[str, dict[str, dict[str, float]]]:
    """Each source on the real local Kafka cluster: freshness on fresh topics, then throughput on a backlog."""
    from services.adapters.admin.kafka import KafkaClusterAdmin
    from services.local.kafka_cluster import LocalKafka
    from spark.session import kafka_source_jars, local_session

    run_dir = Path(tempfile.mkdtemp(prefix="ballast-bench-spark-sources-"))
    kafka = LocalKafka(run_dir)
    kafka.start(progress=lambda m: say(f"  {m}"))
    results: dict[str, dict[str, dict[str, float]]] = {}
    spark = local_session("ballast-bench-sources", jars=kafka_source_jars())
    try:
        bus = BusSettings(bootstrap_servers=kafka.bootstrap_servers)
        topics = [TOPICS.load_samples, TOPICS.placements, TOPICS.load_aggregates]
        for source in SOURCES:
            say(f"source {source}")
            ensure_topics(bus, topics)
            base = SparkSettings(source=source, checkpoint_location=str(run_dir / f"cp-freshness-{source}"))
            f = freshness(spark, Settings(bus=bus, spark=base), rate, seconds, say)
            produce_backlog(bus, events)
            backlog = Settings(bus=bus, spark=base.model_copy(
                update={"checkpoint_location": str(run_dir / f"cp-throughput-{source}")}))
            t = throughput(spark, backlog, events + int(f["sent"]), say)
            say(f"  {source}: {t['per_s']:,.0f} samples/s, freshness p99 {f['p99']:.1f} s")
            results[source] = {"t": t, "f": f}
            admin = KafkaClusterAdmin({"bootstrap_servers": kafka.bootstrap_servers}, 30)

            async def drop() -> None:
                for topic in topics:
                    await admin.delete_topic(topic.name)
                await admin.aclose()

            asyncio.run(drop())
            time.sleep(2)  # deletions settle before the topics are made again
    finally:
        spark.stop()
        kafka.stop()
    return results


def render_sources(r: dict[str, dict[str, dict[str, float]]], command: str, rate: int, seconds: int) -> str:
    rows = [
        ("sustained samples per second of processing (backlog)", lambda x: f"{x['t']['per_s']:,.0f}"),
        ("backlog samples read / wall time", lambda x: f"{x['t']['events']:,.0f} / {x['t']['wall_s']:.0f} s"),
        (f"freshness p50 / p99 ({rate:,} samples/s for {seconds} s)",
         lambda x: f"{x['f']['p50']:.1f} s / {x['f']['p99']:.1f} s"),
        (f"freshness after the first {WARM_UP_S:.0f} s, p50 / p99",
         lambda x: f"{x['f']['steady_p50']:.1f} s / {x['f']['steady_p99']:.1f} s"),
    ]
    header = " | ".join(SOURCES[s] for s in SOURCES)
    table = "\n".join(f"| {label} | " + " | ".join(cell(r[s]) for s in SOURCES) + " |" for label, cell in rows)
    return f"""## Load aggregates through Spark: Ballast's source and Spark's JVM Kafka source side by side

Command: `{command}`. The same job (`spark/aggregates.py`, local[2], windows 60 s sliding by 10 s, trigger 2 s) on the
real local Kafka cluster (4.3.1, 4 brokers), once per source, each on fresh topics: live samples for the freshness
figures, then a backlog read from the beginning for throughput. The JVM source is spark-sql-kafka 4.2.0 with
kafka-clients 3.9.2, on PySpark 4.2.0.

| measure | {header} |
| --- | --- | --- |
{table}

"""


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=200_000)
    parser.add_argument("--rate", type=int, default=2_000)
    parser.add_argument("--seconds", type=int, default=None, help="live samples for freshness (60; 30 with --sources)")
    parser.add_argument("--sources", action="store_true",
                        help="both sources side by side on the real local Kafka cluster")
    parser.add_argument("--write", type=Path, help="replace this benchmark's section in the given markdown file")
    args = parser.parse_args(argv)
    say = lambda m: print(m, file=sys.stderr, flush=True)  # noqa: E731
    if args.sources:
        seconds = args.seconds or 30
        results = sources_side_by_side(args.events, args.rate, seconds, say)
        command = (f"python -m bench.spark_aggregates --sources --events {args.events} --rate {args.rate} "
                   f"--seconds {seconds}" + (f" --write {args.write}" if args.write else ""))
        section = render_sources(results, command, args.rate, seconds)
        print(section)
        if args.write:
            replace_section(args.write, section)
        return
    args.seconds = args.seconds or 60
    from spark.session import local_session

    run_dir = Path(tempfile.mkdtemp(prefix="ballast-bench-spark-"))
    port = free_port()
    broker = start_tansu(port, run_dir / "broker.log")
    try:
        bus = BusSettings(bootstrap_servers=f"127.0.0.1:{port}")
        ensure_topics(bus, [TOPICS.load_samples, TOPICS.placements, TOPICS.load_aggregates])
        spark = local_session("ballast-bench")
        base = SparkSettings(checkpoint_location=str(run_dir / "cp-freshness"))
        # Freshness first, on an empty topic; then the backlog, read by a new query from the beginning.
        f = freshness(spark, Settings(bus=bus, spark=base), args.rate, args.seconds, say)
        say(f"freshness p50 {f['p50']:.1f} s, p99 {f['p99']:.1f} s")
        say(f"producing {args.events:,} samples")
        produce_backlog(bus, args.events)
        backlog = Settings(bus=bus, spark=base.model_copy(update={"checkpoint_location": str(run_dir / "cp-throughput")}))
        t = throughput(spark, backlog, args.events + int(f["sent"]), say)
        say(f"throughput: {t['per_s']:,.0f} samples/s")
        spark.stop()
    finally:
        broker.send_signal(signal.SIGTERM)
        broker.wait(timeout=10)
    command = "python -m bench.spark_aggregates" + (f" --write {args.write}" if args.write else "")
    section = render(t, f, command, args.rate, args.seconds)
    print(section)
    if args.write:
        replace_section(args.write, section)


if __name__ == "__main__":
    main()
