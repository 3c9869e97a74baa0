"""Benchmark: bytes consumers fetch across data centres on the real local cluster, with Ballast's nearest-replica
selector, with Kafka's own RackAwareReplicaSelector, and with none (Kafka's default: the leader serves), side by side
in one run.

    python -m bench.follower_fetching [--mb 8] [--write BENCHMARKS.md]

Each variant starts its own cluster (brokers 1-4 in /dc1/r1 /dc1/r2 /dc2/r1 /dc2/r2; replica.selector.class is a
static broker setting), creates a topic of 8 partitions with RF 2, one replica in each data centre and the leaders
alternating between them, writes ``--mb`` MB, and has one consumer per rack, with client.rack a host under it
(/dc1/r1/h1, ...), read the whole topic. Cross-DC bytes: what each consumer received (librdkafka's per-broker rxbytes)
from brokers outside its own data centre.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from bench.markdown import replace_section
from services.local.kafka_cluster import SELECTOR_CLASS, LocalKafka, kafka_version

TOPIC = "bench-follower-fetching"
PARTITIONS = 8
RACKS = {1: "/dc1/r1", 2: "/dc1/r2", 3: "/dc2/r1", 4: "/dc2/r2"}
VARIANTS = {
    "Ballast's NearestReplicaSelector": SELECTOR_CLASS,
    "Kafka's RackAwareReplicaSelector": "org.apache.kafka.common.replica.RackAwareReplicaSelector",
    "none (the leader serves)": None,
}


def _dc(rack: str) -> str:
    return rack.split("/")[1]


@dataclass
class Result:
    fetched_mb: float
    cross_dc_mb: float


def _assignment() -> list[list[int]]:
    """Each partition has a replica in each data centre; every broker leads two and follows two."""
    return [[1, 3], [3, 1], [2, 4], [4, 2], [1, 4], [4, 1], [2, 3], [3, 2]]


def _write(bootstrap: str, mb: float) -> int:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "acks": "all", "compression.type": "none",
                         "log_level": 0})
    chunk = 50 * 1024
    count = int(mb * 1024 * 1024 / chunk)
    for i in range(count):
        producer.produce(TOPIC, os.urandom(chunk), partition=i % PARTITIONS)
        producer.poll(0)
    assert producer.flush(120) == 0
    return count


class _Reader(threading.Thread):
    """Reads every partition from the start until ``expected`` records arrived; keeps its per-broker rx bytes."""

    def __init__(self, bootstrap: str, rack: str, expected: int) -> None:
        super().__init__(daemon=True)
        self.rx_by_broker: dict[int, int] = {}
        self.received = 0
        self.expected = expected
        self.consumer = Consumer({
            "bootstrap.servers": bootstrap, "group.id": f"bench-{rack}-{time.time_ns()}", "client.rack": f"{rack}/h1",
            "enable.auto.commit": False, "statistics.interval.ms": 200, "stats_cb": self._stats,
            "fetch.wait.max.ms": 100, "topic.metadata.refresh.interval.ms": 1000, "log_level": 0})
        self.consumer.assign([TopicPartition(TOPIC, p, 0) for p in range(PARTITIONS)])

    def _stats(self, raw: str) -> None:
        for broker in json.loads(raw).get("brokers", {}).values():
            if broker.get("nodeid", -1) >= 0:
                self.rx_by_broker[broker["nodeid"]] = broker.get("rxbytes", 0)

    def run(self) -> None:
        deadline = time.monotonic() + 180
        while self.received < self.expected and time.monotonic() < deadline:
            message = self.consumer.poll(0.2)
            if message is not None and not message.error():
                self.received += 1
        end = time.monotonic() + 1.0  # one more statistics interval after the last record
        while time.monotonic() < end:
            self.consumer.poll(0.1)
        self.consumer.close()


def measure(selector: str | None, mb: float, run_dir: Path) -> Result:
    with LocalKafka(run_dir, racks=list(RACKS.values()), replica_selector=selector) as kafka:
        kafka.start()
        admin = AdminClient({"bootstrap.servers": kafka.bootstrap_servers, "log_level": 0})
        futures = admin.create_topics([NewTopic(TOPIC, num_partitions=PARTITIONS, replica_assignment=_assignment())])
        for future in futures.values():
            future.result(30)
        time.sleep(2)  # metadata everywhere
        records = _write(kafka.bootstrap_servers, mb)
        time.sleep(3)  # followers caught up: the broker offers only in-sync replicas holding the offset
        readers = [_Reader(kafka.bootstrap_servers, rack, records) for rack in RACKS.values()]
        for reader in readers:
            reader.start()
        for reader in readers:
            reader.join()
        assert all(r.received == records for r in readers), [r.received for r in readers]
        fetched = cross = 0
        for rack, reader in zip(RACKS.values(), readers):
            for broker, rx in reader.rx_by_broker.items():
                fetched += rx
                if _dc(RACKS[broker]) != _dc(rack):
                    cross += rx
        return Result(fetched / 1e6, cross / 1e6)


def report(mb: float) -> str:
    results = {}
    for name, selector in VARIANTS.items():
        with tempfile.TemporaryDirectory(prefix="bench-ff-") as tmp:
            results[name] = measure(selector, mb, Path(tmp))
    lines = [
        "## Follower fetching on the rack tree: bytes consumers fetch across data centres (real Kafka)",
        "",
        f"`python -m bench.follower_fetching --mb {mb:g}` (Kafka {kafka_version()}, {platform.machine()}): one "
        f"cluster per row, brokers in {', '.join(RACKS.values())}; a topic of {PARTITIONS} partitions, RF 2 with a "
        f"replica in each data centre and leaders alternating; {mb:g} MB written; one consumer per rack "
        "(client.rack = a host under it: `/dc1/r1/h1`, ...) reads it all. Bytes from librdkafka's per-broker "
        "received bytes.",
        "",
        "| replica.selector.class | fetched MB (4 consumers) | fetched across DCs MB | share across DCs |",
        "| --- | ---: | ---: | ---: |",
    ]
    for name, r in results.items():
        lines.append(f"| {name} | {r.fetched_mb:.1f} | {r.cross_dc_mb:.1f} | {100 * r.cross_dc_mb / r.fetched_mb:.0f} % |")
    lines += ["", "Kafka's own selector matches rack ids exactly, so a client rack below a broker's rack "
              "(`/dc2/r1/h1` under `/dc2/r1`) never matches and the leader serves, as with none.", ""]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mb", type=float, default=8.0, help="MB written to the topic (default 8)")
    parser.add_argument("--write", type=Path, help="replace this benchmark's section in that Markdown file")
    args = parser.parse_args()
    section = report(args.mb)
    print(section)
    if args.write:
        replace_section(args.write, section)


if __name__ == "__main__":
    main()
