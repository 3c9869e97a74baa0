"""The ballast_bus streaming data source alone, on the real local broker (whose high watermark lags) and a local
Spark session: offset ranges, restart from the checkpoint without double counting, the lagging watermark."""

from __future__ import annotations

import signal
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from services.local.broker import free_port, start_tansu
from spark.bus_source import BusSource, BusStreamReader, Range, read_range
from spark.restarts import RestartingQuery
from tests.streaming import wait_for_rows

# A query's first batch can take minutes while the other workers run a Spark job or a Kafka cluster too: its waits
# are generous, and so is the test timeout.
pytestmark = pytest.mark.timeout(1200)  # the first test of the group also starts the session (seen: 243 s)


@pytest.fixture(scope="module")
def bootstrap(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    port = free_port()
    process = start_tansu(port, tmp_path_factory.mktemp("tansu") / "broker.log")
    try:
        yield f"127.0.0.1:{port}"
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=10)


@pytest.fixture(scope="module")
def spark(spark):  # the process's session (tests/conftest.py), with the bus source registered
    spark.dataSource.register(BusSource)
    return spark


def create(bootstrap: str, topic: str, partitions: int = 2) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(timeout=30)


def produce(bootstrap: str, topic: str, values: list[str], partition: int | None = None) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 50})
    for value in values:
        if partition is None:
            producer.produce(topic, key=value.encode(), value=value.encode())
        else:
            producer.produce(topic, key=value.encode(), value=value.encode(), partition=partition)
    assert producer.flush(30) == 0


def test_a_lagging_watermark_still_ends_at_the_last_record(bootstrap: str) -> None:
    """Tansu reports the base offset of its last batch + 1: the reader's probe finds the real end."""
    create(bootstrap, "lagging", partitions=1)
    produce(bootstrap, "lagging", [f"v{i}" for i in range(500)], partition=0)
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "probe"})
    high = consumer.get_watermark_offsets(TopicPartition("lagging", 0), timeout=10)[1]
    consumer.close()
    reader = BusStreamReader({"subscribe": "lagging", "kafka.bootstrap.servers": bootstrap})
    start = reader.initialOffset()
    assert start == {"lagging": {"0": 0}}
    first = reader.latestOffset(start)
    second = reader.latestOffset(start)  # the watermark did not move: the probe looks past it
    assert high < 500, "the local broker lags: the case this test is about"
    assert second == {"lagging": {"0": 500}}, (high, first, second)
    (only,) = reader.partitions(start, second)
    assert (only.start, only.end) == (0, 500)
    rows = list(read_range(reader.config, only, 10))
    assert [r[2] for r in rows] == list(range(500)) and rows[0][4] == "v0" and rows[-1][4] == "v499"
    reader.stop()


def test_offset_ranges_cover_each_record_once(bootstrap: str) -> None:
    create(bootstrap, "ranges")
    produce(bootstrap, "ranges", [f"a{i}" for i in range(40)], partition=0)
    produce(bootstrap, "ranges", [f"b{i}" for i in range(30)], partition=1)
    config = {"bootstrap.servers": bootstrap}
    halves = [Range("ranges", 0, 0, 15), Range("ranges", 0, 15, 40), Range("ranges", 1, 0, 30)]
    values = [row[4] for r in halves for row in read_range(config, r, 10)]
    assert sorted(values) == sorted([f"a{i}" for i in range(40)] + [f"b{i}" for i in range(30)])
    assert len(values) == len(set(values)) == 70
    reader = BusStreamReader({"subscribe": "ranges", "kafka.bootstrap.servers": bootstrap})
    assert reader.partitions({"ranges": {"0": 40, "1": 30}}, {"ranges": {"0": 40, "1": 30}}) == []
    reader.stop()
    # Admission control: 20 records a batch, 10 per partition, from wherever the last batch ended.
    capped = BusStreamReader({"subscribe": "ranges", "kafka.bootstrap.servers": bootstrap,
                              "maxRecordsPerBatch": "20"})
    start = {"ranges": {"0": 0, "1": 25}}
    capped.latestOffset(start)  # the first look trusts the (lagging) watermark; the second probes past it
    assert capped.latestOffset(start) == {"ranges": {"0": 10, "1": 30}}
    capped.stop()


def run_query(spark, bootstrap: str, topic: str, checkpoint: Path, seen: list[str], until: int) -> RestartingQuery:
    def collect(batch, _batch_id: int) -> None:
        seen.extend(row.value for row in batch.select("value").collect())

    query = RestartingQuery(lambda: spark.readStream.format("ballast_bus").option("subscribe", topic)
                            .option("kafka.bootstrap.servers", bootstrap).load()
                            .writeStream.option("checkpointLocation", str(checkpoint))
                            .trigger(processingTime="500 milliseconds").foreachBatch(collect).start())
    try:
        # Exactly ``until`` rows: a batch that read more would have read some twice.
        assert wait_for_rows(query, until) == until
    finally:
        query.stop()
    return query


def test_a_restarted_query_resumes_from_its_checkpoint_without_double_counting(bootstrap: str, spark,
                                                                             tmp_path: Path) -> None:
    create(bootstrap, "restart")
    produce(bootstrap, "restart", [f"first-{i}" for i in range(100)])
    seen: list[str] = []
    run_query(spark, bootstrap, "restart", tmp_path / "checkpoint", seen, until=100)
    assert sorted(seen) == sorted(f"first-{i}" for i in range(100))
    produce(bootstrap, "restart", [f"second-{i}" for i in range(50)])
    again: list[str] = []
    run_query(spark, bootstrap, "restart", tmp_path / "checkpoint", again, until=50)
    assert sorted(again) == sorted(f"second-{i}" for i in range(50)), "only what came after the checkpoint"


def test_a_python_worker_that_connects_back_too_late_is_started_again(bootstrap: str, spark, tmp_path: Path) -> None:
    """Spark gives the Python process that plans a Python source's reads ten seconds to connect back, a constant; a
    machine short of CPU can take longer (seen with two suites side by side). The query starts again and reads each
    record once. Here the first such process (the query's offsets planner, PythonStreamingSourceRunner) waits 12 s
    before it is Python at all."""
    create(bootstrap, "late-worker", partitions=1)
    produce(bootstrap, "late-worker", [f"v{i}" for i in range(20)])
    once = tmp_path / "late-once"
    once.touch()
    late_python = tmp_path / "late-python"
    late_python.write_text("#!/bin/sh\n"
                           f"case \"$*\" in *streaming_source_runner*) rm {once} 2>/dev/null && sleep 12;; esac\n"
                           f"exec {sys.executable} \"$@\"\n")
    late_python.chmod(0o755)
    context = spark.sparkContext
    usual = context.pythonExec
    context.pythonExec = str(late_python)  # what a data source registered now runs its Python workers with
    spark.dataSource.register(BusSource)
    try:
        seen: list[str] = []
        query = run_query(spark, bootstrap, "late-worker", tmp_path / "checkpoint", seen, until=20)
    finally:
        context.pythonExec = usual
        spark.dataSource.register(BusSource)
    assert not once.exists(), "the late start happened"
    assert query.restarts >= 1  # more on a loaded machine, where the next starts can be late too (seen: 3)
    assert sorted(seen) == sorted(f"v{i}" for i in range(20))


def test_a_small_jobs_jvm_runs_with_the_options_it_was_given(spark) -> None:
    """The session's JVM runs what spark.session.SMALL_JOB_JVM asks for (the first JIT tier, the serial collector),
    as the JVM itself reports its arguments: the options reach it through spark.driver.extraJavaOptions."""
    from spark.session import SMALL_JOB_JVM

    arguments = set(spark._jvm.java.lang.management.ManagementFactory.getRuntimeMXBean().getInputArguments())
    assert set(SMALL_JOB_JVM.split()) <= arguments, arguments
    assert "-Xss16m" in arguments
