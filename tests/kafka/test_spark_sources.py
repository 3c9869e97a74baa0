"""The load-aggregates job on a real Kafka bus through Spark's JVM ``kafka`` source (spark-sql-kafka at PySpark's
version, from Maven Central) and through Ballast's own Python source: the same aggregates from the same recorded
log. The bus is on SASL_SSL (SCRAM, a CA of its own), as a secured deployment's is (issue 53): both sources log in
with the settings' password file and trust the CA, each in its own client's words (librdkafka's, Java's).

The bus is a one-broker cluster of the module's own, not the shared one: there the live stack's load collector adds
samples for as long as the other tests run, which both queries then read, and this module would lengthen the
shared cluster's worker by minutes."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from events import TOPICS, LoadAggregate
from services.common import busio
from services.common.bus_topics import ensure_topics
from services.common.settings import BusSettings, Settings, SparkSettings
from services.local.kafka_cluster import LocalKafka
from services.local.kafka_security import MECHANISM, SERVICES, LocalSecurity
from spark.aggregates import WindowBrokers, batch_aggregates, start
from spark.restarts import RestartingQuery
from tests.streaming import wait_for_rows

LOG = Path(__file__).resolve().parents[1] / "data" / "load-samples.jsonl"
RECORDED_WINDOW = "2026-11-23T12:00:00+00:00"  # the recorded log's; the live samples are in today's windows
# A query's first batch can take minutes while the other workers run a Spark job or a Kafka cluster too: its waits
# are generous, and so is the test timeout.
pytestmark = pytest.mark.timeout(1200)  # the first test of the group also starts the session (seen: 243 s)


@pytest.fixture(scope="module")
def bus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BusSettings]:
    run_dir = tmp_path_factory.mktemp("spark-bus")
    security = LocalSecurity.make(run_dir / "security")
    with LocalKafka(run_dir, racks=["/dc1/r1"], security=security) as kafka:
        kafka.start()
        settings = BusSettings(bootstrap_servers=kafka.bootstrap_servers, security_protocol="SASL_SSL",
                               sasl_mechanism=MECHANISM, sasl_username=SERVICES,
                               sasl_password_file=security.password_file(SERVICES),
                               ssl_cafile=security.certificates.ca_file)
        ensure_topics(settings, [TOPICS.load_samples, TOPICS.placements])
        yield settings


@pytest.fixture(scope="module")
def spark(spark):  # the process's session (tests/conftest.py), which has the Kafka source's jars when they are there
    from spark.session import kafka_source_jars

    kafka_source_jars()  # says what to run when they are not
    return spark


def run(spark: Any, settings: Settings, checkpoint: Path, rows: int) -> dict[str, LoadAggregate]:
    """The job with a sink that keeps the latest aggregate of each key of the recorded window, until it has read the
    recorded log's ``rows``."""
    job = settings.model_copy(update={"spark": settings.spark.model_copy(update={"checkpoint_location": str(checkpoint)})})
    cache = WindowBrokers(keep=timedelta(days=7))
    latest: dict[str, LoadAggregate] = {}

    def keep(batch: Any, _batch_id: int) -> None:
        for aggregate in batch_aggregates(batch.toLocalIterator(), cache):
            if aggregate.key.startswith(RECORDED_WINDOW):
                latest[aggregate.key] = aggregate

    query = RestartingQuery(lambda: start(spark, job, sink=keep))
    try:
        assert wait_for_rows(query, rows) == rows
    finally:
        query.stop()
    return latest


def test_jvm_kafka_source_gives_the_python_sources_aggregates(spark, bus: BusSettings, tmp_path: Path) -> None:
    entries = [json.loads(line) for line in LOG.read_text().splitlines() if line.strip()]
    busio.produce(bus, [(e["topic"], e["key"].encode(), json.dumps(e["value"]).encode(), None) for e in entries])
    spark_settings = SparkSettings(window_s=60, slide_s=60, watermark_s=30, trigger_s=0.5,
                                   max_records_per_batch=1_000_000)

    def with_source(source: str) -> Settings:
        return Settings(bus=bus, spark=spark_settings.model_copy(update={"source": source}))

    jvm = run(spark, with_source("kafka"), tmp_path / "jvm", len(entries))
    python = run(spark, with_source("ballast_bus"), tmp_path / "python", len(entries))
    assert jvm == python
    # And they are the recorded log's figures (tests/integration/test_spark_aggregates.py has them all).
    one = jvm[f"{RECORDED_WINDOW}|broker:1"]
    assert (one.samples, one.bytes_in_kb_s, one.disk_mb, one.placements) == (3, 110.0, 1100.0, 2)
    assert jvm[f"{RECORDED_WINDOW}|domain:/dc1"].bytes_in_kb_s == 320.0
    assert {a.entity_kind for a in jvm.values()} == {"broker", "domain", "log-dir"}
