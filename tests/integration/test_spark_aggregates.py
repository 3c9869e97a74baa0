"""The load-aggregates job on a small recorded event log (tests/data/load-samples.jsonl: load samples and two
placements), on the local broker and a local Spark session: exact aggregates per broker, log directory and domain; a
restart adds nothing twice."""

from __future__ import annotations

import json
import signal
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from events import TOPICS, BrokerLoadSample, LoadAggregate
from services.common import busio
from services.common.bus_topics import ensure_topics
from services.common.settings import BusSettings, Settings, SparkSettings
from services.local.broker import free_port, start_tansu
from spark.restarts import RestartingQuery
from tests.streaming import wait_for_rows

# A query's first batch can take minutes while the other workers run a Spark job or a Kafka cluster too: its waits
# are generous, and so is the test timeout.
pytestmark = pytest.mark.timeout(1200)  # the first test of the group also starts the session (seen: 243 s)
LOG = Path(__file__).resolve().parents[1] / "data" / "load-samples.jsonl"
WINDOW = "2026-11-23T12:00:00+00:00"
LATER_WINDOW = "2026-11-23T12:05:00+00:00"
RECORDS = 18  # the recorded log's lines


@pytest.fixture(scope="module")
def bus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BusSettings]:
    port = free_port()
    process = start_tansu(port, tmp_path_factory.mktemp("tansu") / "broker.log")
    settings = BusSettings(bootstrap_servers=f"127.0.0.1:{port}")
    ensure_topics(settings, [TOPICS.load_samples, TOPICS.placements, TOPICS.load_aggregates])
    try:
        yield settings
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=10)


def replay(bus: BusSettings) -> int:
    """The recorded log onto the bus, as it was recorded; how many records it holds."""
    entries = [json.loads(line) for line in LOG.read_text().splitlines() if line.strip()]
    return busio.produce(bus, [(e["topic"], e["key"].encode(), json.dumps(e["value"]).encode(), None)
                               for e in entries])


def aggregates(bus: BusSettings) -> tuple[dict[str, LoadAggregate], int]:
    """The latest aggregate per key, and how many records the topic holds."""
    latest, records = {}, 0
    for record in busio.consume(bus, [TOPICS.load_aggregates.name], follow=False, idle_s=1.0):
        records += 1
        event = LoadAggregate.model_validate(json.loads(record.value)["payload"])
        latest[event.key] = event
    return latest, records


def run_job(spark, bus: BusSettings, checkpoint: Path, rows: int) -> int:
    """The job until it has read and written ``rows`` records of the bus; the rows it read."""
    from spark.aggregates import start

    settings = Settings(bus=bus, spark=SparkSettings(checkpoint_location=str(checkpoint), window_s=60, slide_s=60,
                                                     watermark_s=30, trigger_s=0.5))
    query = RestartingQuery(lambda: start(spark, settings))
    try:
        return wait_for_rows(query, rows)
    finally:
        query.stop()


def test_exact_aggregates_from_a_recorded_log_and_an_idempotent_restart(bus: BusSettings, spark,
                                                                        tmp_path: Path) -> None:
    assert run_job(spark, bus, tmp_path / "checkpoint", rows=replay(bus)) == RECORDS
    latest, records = aggregates(bus)

    # Broker 1: samples at :05, :15, :25 with bytes in 100, 110, 120 and disk 1000, 1050, 1100.
    one = latest[f"{WINDOW}|broker:1"]
    assert (one.samples, one.bytes_in_kb_s, one.bytes_out_kb_s) == (3, 110.0, 220.0)
    assert (one.disk_mb, one.disk_growth_mb, one.replicas, one.leaders) == (1100.0, 100.0, 10, 5)
    assert one.window_end.isoformat() == "2026-11-23T12:01:00+00:00"
    # /dc1 holds brokers 1 and 2: mean of the per-time totals (300, 320, 340), disks 3000 -> 3100 + ... at :25.
    dc1 = latest[f"{WINDOW}|domain:/dc1"]
    assert (dc1.level, dc1.samples, dc1.bytes_in_kb_s) == (1, 3, 320.0)
    assert (dc1.disk_mb, dc1.disk_growth_mb, dc1.replicas, dc1.leaders) == (3200.0, 200.0, 30, 15)
    rack = latest[f"{WINDOW}|domain:/dc1/r2"]
    assert (rack.level, rack.bytes_in_kb_s, rack.disk_mb) == (2, 210.0, 2100.0)
    assert latest[f"{WINDOW}|domain:/dc2"].bytes_in_kb_s == 310.0
    directory = latest[f"{WINDOW}|log-dir:1:/var/kafka/data-1"]
    assert (directory.disk_mb, directory.disk_growth_mb, directory.replicas) == (825.0, 75.0, 15)
    assert {a.entity_kind for a in latest.values()} == {"broker", "domain", "log-dir"}
    # Placements: replicas of "orders" on 1 (data-1), 2 and 3 at :10, and on 1 (data-0) at :40; they add no sample.
    assert [latest[f"{WINDOW}|broker:{b}"].placements for b in (1, 2, 3)] == [2, 1, 1]
    assert [latest[f"{WINDOW}|domain:{d}"].placements for d in ("/dc1", "/dc1/r1", "/dc1/r2", "/dc2")] == [3, 2, 1, 1]
    assert [latest[f"{WINDOW}|log-dir:1:/var/kafka/data-{i}"].placements for i in (0, 1)] == [1, 1]
    assert latest[f"{WINDOW}|log-dir:1:/var/kafka/data-0"].samples == 3
    assert one.rack == "/dc1/r1" and dc1.last_sample_at.isoformat() == "2026-11-23T12:00:25+00:00"

    # Restarted from its checkpoint, the job reads only what came after it: one sample of a later window, which adds
    # that window's aggregates and leaves the recorded window's as they were.
    later = BrokerLoadSample(broker=1, rack="/dc1/r1", sampled_at=datetime(2026, 11, 23, 12, 5, 5, tzinfo=UTC),
                             bytes_in_kb_s=130.0, disk_mb=1200.0)
    busio.publish(bus, TOPICS.load_samples, [later])
    assert run_job(spark, bus, tmp_path / "checkpoint", rows=1) == 1
    again, records_after = aggregates(bus)
    added = {key: a for key, a in again.items() if key not in latest}
    assert {a.window_start.isoformat() for a in added.values()} == {LATER_WINDOW}
    assert added[f"{LATER_WINDOW}|broker:1"].bytes_in_kb_s == 130.0
    assert records_after == records + len(added)
    assert {key: a for key, a in again.items() if key in latest} == latest


def test_a_stop_while_batches_run_back_to_back_lands_between_two_of_them(spark, tmp_path: Path) -> None:
    """A job behind its trigger (each batch's Spark job longer than the interval) has no idle moment to stop in;
    stopping mid-batch cancelled that batch's job with a thousand lines of traces. The gate lets the batch being
    written finish and holds the next at its start: every batch begun is written whole, and the query ends
    without an error, the held batch left uncommitted for the next start."""
    from spark.stopping import BatchGate

    gate = BatchGate(spark)
    begun: list[int] = []
    written: list[int] = []

    def write(batch, batch_id: int) -> None:
        with gate.batch():
            begun.append(batch_id)
            # A Spark job of about a second: 100 rows, 10 ms each, on one task.
            batch.coalesce(1).selectExpr("reflect('java.lang.Thread', 'sleep', cast(10 as bigint))").collect()
            written.append(batch_id)

    checkpoint = tmp_path / "checkpoint"
    query = (spark.readStream.format("rate").option("rowsPerSecond", 100).load()
             .writeStream.trigger(processingTime="0.2 seconds").option("checkpointLocation", str(checkpoint))
             .foreachBatch(write).start())
    try:
        deadline = time.monotonic() + 300
        while len(written) < 2 or len(begun) == len(written):  # stopped while a batch is being written
            assert time.monotonic() < deadline and query.isActive, f"written: {written}, {query.exception()}"
            time.sleep(0.01)
        gate.stop(query)
    finally:
        if query.isActive:
            query.stop()
    assert query.exception() is None
    assert begun == written, "no batch was cut short"
    committed = sorted(int(p.name) for p in (checkpoint / "commits").iterdir() if p.name.isdigit())
    # The last batch written may have been stopped in its commit (written again at the next start); none after it.
    assert written[-1] - 1 <= committed[-1] <= written[-1], (committed, written)
