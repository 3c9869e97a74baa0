"""The load-aggregates job on the real cluster through Spark's JVM ``kafka`` source (spark-sql-kafka at PySpark's
version, from Maven Central) and through Ballast's own Python source: the same aggregates from the same recorded
log."""

from __future__ import annotations

import json
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from events import LoadAggregate
from services.common import busio
from services.common.settings import Settings, SparkSettings
from services.local.stack import LocalStack
from spark.aggregates import WindowBrokers, batch_aggregates, start

LOG = Path(__file__).resolve().parents[1] / "data" / "load-samples.jsonl"
RECORDED_WINDOW = "2026-11-23T12:00:00+00:00"  # the recorded log's; the live samples are in today's windows
# A query's first batch can take minutes while the other worker runs a Spark job or a Kafka cluster too: its waits
# are generous, and so is the test timeout.
pytestmark = pytest.mark.timeout(900)


@pytest.fixture(scope="module")
def spark():
    from spark.session import kafka_source_jars, local_session

    session = local_session("ballast-kafka-source-tests", jars=kafka_source_jars())
    yield session
    session.stop()


def run(spark: Any, settings: Settings, checkpoint: Path, timeout_s: float = 300) -> dict[str, LoadAggregate]:
    """The job with a sink that keeps the latest aggregate of each key of the recorded window, until every entity of
    the recorded log has one and a few more triggers added nothing."""
    job = settings.model_copy(update={"spark": settings.spark.model_copy(update={"checkpoint_dir": checkpoint})})
    cache = WindowBrokers(keep=timedelta(days=7))
    latest: dict[str, LoadAggregate] = {}

    def keep(batch: Any, _batch_id: int) -> None:
        for aggregate in batch_aggregates(batch.toLocalIterator(), cache):
            if aggregate.key.startswith(RECORDED_WINDOW):
                latest[aggregate.key] = aggregate

    query = start(spark, job, sink=keep)
    deadline = time.monotonic() + timeout_s
    try:
        while f"{RECORDED_WINDOW}|broker:3" not in latest and time.monotonic() < deadline:
            assert query.exception() is None, query.exception()
            time.sleep(0.5)
        time.sleep(3)
    finally:
        query.stop()
    return latest


def test_jvm_kafka_source_gives_the_python_sources_aggregates(spark, kafka_stack: LocalStack, tmp_path: Path) -> None:
    base = kafka_stack.settings()
    entries = [json.loads(line) for line in LOG.read_text().splitlines() if line.strip()]
    busio.produce(base.bus, [(e["topic"], e["key"].encode(), json.dumps(e["value"]).encode(), None) for e in entries])
    spark_settings = SparkSettings(window_s=60, slide_s=60, watermark_s=30, trigger_s=0.5,
                                   max_records_per_batch=1_000_000)

    def with_source(source: str) -> Settings:
        return Settings(bus=base.bus, spark=spark_settings.model_copy(update={"source": source}))

    jvm = run(spark, with_source("kafka"), tmp_path / "jvm")
    python = run(spark, with_source("ballast_bus"), tmp_path / "python")
    assert jvm == python
    # And they are the recorded log's figures (tests/integration/test_spark_aggregates.py has them all).
    one = jvm[f"{RECORDED_WINDOW}|broker:1"]
    assert (one.samples, one.bytes_in_kb_s, one.disk_mb, one.placements) == (3, 110.0, 1100.0, 2)
    assert jvm[f"{RECORDED_WINDOW}|domain:/dc1"].bytes_in_kb_s == 320.0
    assert {a.entity_kind for a in jvm.values()} == {"broker", "domain", "log-dir"}
