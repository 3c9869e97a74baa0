"""Benchmark: creating N topics through Ballast against the cluster's own batched creation, side by side in one run
on one cluster (issue 52, goal 1).

    python -m bench.creation --kafka [--topics 300,3000] [--placer multi-level] [--write BENCHMARKS.md]
    python -m bench.creation [--topics 10000] [--placer multi-level] [--write BENCHMARKS.md]

With ``--kafka`` the cluster is the real local one (Kafka 4.3.1, 4 brokers, two log directories each, 1 GB of
heap a node); the baseline is
Kafka's own CreateTopics, in as few requests as its controller takes (the brokers' placement), timed until every partition has a
leader in the metadata. Without it, the embedded stack (the simulator's cluster); the baseline is the simulator's admin
API, N creations at once. Ballast's time runs from the N specs published (one batch on the bus) until every topic's
status says ready for its spec's generation. Each N creates fresh topics of 3 partitions at replication factor 3;
the baseline's and Ballast's topics differ only by name, and each run begins once the brokers host every replica of
the run before (KRaft counts a new replica in sync at once, before its broker has created its log: a broker busy
creating another run's logs answers AlterReplicaLogDirs, and shows new metadata, only once it is done). Both paths
create 10 topics first, unmeasured: a broker's first answers of a kind took seconds (the JVM loading the code behind
them).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from confluent_kafka import Consumer, TopicPartition

from bench.markdown import replace_section
from events import TOPICS, TopicSpec
from services.common import busio
from services.adapters.admin.port import RECORDS_PER_REQUEST
from services.adapters.admin.simulator import SimulatorClusterAdmin
from services.local.kafka_probe import admin_client
from services.local.stack import LocalStack

PARTITIONS, REPLICAS = 3, 3
KAFKA_HEAP_MB = 1024
ENV = {
    # The measure is creation: no resync competes with it, and the logs are quiet.
    "BALLAST_RECONCILER__RESYNC_INTERVAL_S": "600",
    # Nor do Cruise Control's stand-in and the load collector, which take no part in it: the stand-in reads every
    # topic and log directory every 2 s to model the load (and for each of the collector's samples), 0.1-0.8 s of
    # CPU within a batch of 300's window on this 2-core machine, where the brokers and the reconciler already keep
    # both cores busy. A real Cruise Control runs on hosts of its own.
    "BALLAST_SIMULATOR__SYNC_INTERVAL_S": "600",
    "BALLAST_LOAD_COLLECTOR__INTERVAL_S": "600",
    "BALLAST_LOG_LEVEL": "warning",
    # The services' group sessions as deployed (6 s), not the local stack's 3 s for quick hand-overs in tests: a
    # cluster creating thousands of topics on two cores answers heartbeats late, and a lost lease starts the
    # reconciler over.
    "BALLAST_BUS__LEASE_SESSION_TIMEOUT_MS": "6000",
    "BALLAST_BUS__GROUP_SESSION_TIMEOUT_MS": "6000",
}


@dataclass
class Result:
    topics: int
    baseline_s: float
    ballast_s: float

    @property
    def ratio(self) -> float:
        return self.ballast_s / self.baseline_s

    @property
    def said(self) -> str:
        """The ratio as the table says it (two decimals under 0.1, which one would round to nothing)."""
        return f"{self.ratio:.1f}x" if self.ratio >= 0.1 else f"{self.ratio:.2f}x"


class Statuses:
    """Follows the status topic in a thread: each topic's latest generation seen ready (plain JSON: on 2 cores the
    measuring must not compete with what it measures)."""

    def __init__(self, bus) -> None:
        self.bus = bus
        # Connected once, before any clock starts: the time Ballast is given runs from the specs handed to a producer
        # on the bus, not from its connecting.
        self.producer = busio.connected_producer(bus)
        self.ready: dict[str, int] = {}
        # Each topic's latest generation whose replication-factor change the status says completed.
        self.changed: dict[str, int] = {}
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        consumer = Consumer({**self.bus.confluent_config(), "group.id": f"bench-{uuid.uuid4()}", "log_level": 0,
                             "enable.auto.commit": False, "auto.offset.reset": "earliest"})
        partitions = consumer.list_topics(TOPICS.status.name, timeout=30).topics[TOPICS.status.name].partitions
        consumer.assign([TopicPartition(TOPICS.status.name, p, -2) for p in partitions])
        while not self.stop.is_set():
            # A short wait: librdkafka hands a batch over once it is full or the wait is over, and the wait is
            # added to Ballast's time.
            for message in consumer.consume(1000, 0.02):
                if message.error():
                    continue
                payload = json.loads(message.value())["payload"]
                with self.lock:
                    if payload.get("ready"):
                        self.ready[payload["topic"]] = payload["generation"]
                    if payload.get("ready") and (payload.get("replicasChange") or {}).get("state") == "completed":
                        self.changed[payload["topic"]] = payload["generation"]
        consumer.close()

    def all_ready(self, generations: dict[str, int]) -> bool:
        with self.lock:
            return all(self.ready.get(name, 0) >= generation for name, generation in generations.items())

    def all_changed(self, generations: dict[str, int]) -> bool:
        with self.lock:
            return all(self.changed.get(name, 0) >= generation for name, generation in generations.items())

    def close(self) -> None:
        self.stop.set()
        self.thread.join(timeout=10)


def kafka_baseline(stack: LocalStack, names: list[str]) -> float:
    """CreateTopics, as few requests as the controller takes, then the metadata until every partition has a leader (the
    time); then, not timed, until the brokers host every replica (``settle``)."""
    assert stack.kafka is not None
    with admin_client(stack.kafka.bootstrap_servers, timeout_ms=120_000) as admin:
        began = time.monotonic()
        # As many topics a request as Kafka's controller takes (10,000 metadata records: a topic's and one a
        # partition); one request for N = 3,000 is refused as "excessively large".
        for chunk in _chunks(names, RECORDS_PER_REQUEST // (1 + PARTITIONS)):
            admin.create_topics({n: {"num_partitions": PARTITIONS, "replication_factor": REPLICAS} for n in chunk},
                                timeout_ms=120_000)
        _wait(admin, names, lambda p: p["leader_id"] >= 0)
        took = time.monotonic() - began
    settle(stack, names)
    return took


def settle(stack: LocalStack, names: list[str]) -> None:
    """Not timed: until every broker hosts its replicas of these topics. A broker creates a new topic's logs after its
    controller has the topic (whose replicas KRaft counts in sync from the start), under the lock that its next
    AlterReplicaLogDirs and its next metadata waits for: one side's measure must not wait for the other's logs."""
    if stack.kafka is None:
        return
    wanted = len(names) * PARTITIONS * REPLICAS
    with admin_client(stack.kafka.bootstrap_servers, timeout_ms=120_000) as admin:
        while True:
            hosted = {(t["name"], p["partition_index"], entry["broker"])
                      for chunk in _chunks(names, 1000) for entry in admin.describe_log_dirs(chunk)
                      for d in entry["log_dirs"] for t in d["topics"] for p in t["partitions"]}
            if len(hosted) >= wanted:
                return
            time.sleep(0.2)


def _wait(admin, names: list[str], done) -> None:  # noqa: ANN001
    """Until every partition of every topic is ``done`` in the metadata."""
    waiting = set(names)
    while waiting:
        for chunk in _chunks(sorted(waiting), 1000):
            for topic in admin.describe_topics(chunk):
                if topic["error_code"] == 0 and len(topic["partitions"]) == PARTITIONS and all(
                        done(p) for p in topic["partitions"]):
                    waiting.discard(topic["name"])
        if waiting:
            time.sleep(0.05)


def simulator_baseline(stack: LocalStack, names: list[str]) -> float:
    """The simulator's admin API, every creation at once."""
    async def create() -> float:
        admin = SimulatorClusterAdmin(stack.sim_url, timeout_s=300)
        try:
            began = time.monotonic()
            for chunk in _chunks(names, 200):
                await asyncio.gather(*(admin.create_topic(n, PARTITIONS, REPLICAS) for n in chunk))
            return time.monotonic() - began
        finally:
            await admin.aclose()

    return asyncio.run(create())


def through_ballast(stack: LocalStack, statuses: Statuses, names: list[str], timeout_s: float) -> float:
    offsets: dict[bytes, int] = {}
    specs = [TopicSpec(name=n, partitions=PARTITIONS, replicas=REPLICAS) for n in names]
    began = time.monotonic()
    busio.publish(stack.settings().bus, TOPICS.specs, specs, offsets_by_key=offsets, via=statuses.producer,
                  as_burst=True)
    generations = {key.decode(): offset + 1 for key, offset in offsets.items()}
    while not statuses.all_ready(generations):
        if time.monotonic() - began > timeout_s:
            raise TimeoutError(f"not every topic ready within {timeout_s:.0f} s")
        time.sleep(0.05)
    return time.monotonic() - began


def _chunks(items: list[str], size: int) -> list[list[str]]:
    return [items[i:i + size] for i in range(0, len(items), size)]


def run(kafka: bool, sizes: list[int], timeout_s: float, placer: str | None = None) -> list[Result]:
    """``placer``: Ballast's (BALLAST_PLACEMENT__PLACER; None: the default, striped)."""
    results = []
    env = {**ENV, **({"BALLAST_PLACEMENT__PLACER": placer} if placer else {})}
    with tempfile.TemporaryDirectory(prefix="ballast-bench-creation-") as tmp:
        # Thousands of partitions a broker: the local cluster's default heap (256 MB a node) spent the creation of
        # 3,000 topics collecting garbage until Kafka's own requests timed out.
        stack = LocalStack(Path(tmp), env=env, kafka=kafka, kafka_heap_mb=KAFKA_HEAP_MB)
        try:
            stack.start()
            statuses = Statuses(stack.settings().bus)
            try:
                # Both paths once before measuring: a broker's first answers of a kind (the JVM loading and compiling
                # the code behind them) took seconds here, for one side or the other.
                (kafka_baseline if kafka else simulator_baseline)(stack, [f"bench-warm-cluster-{i}" for i in range(10)])
                warm = [f"bench-warm-ballast-{i}" for i in range(10)]
                through_ballast(stack, statuses, warm, timeout_s)
                settle(stack, warm)
                for run_index, size in enumerate(sizes):
                    prefix = f"bench-{run_index}"
                    baseline = (kafka_baseline if kafka else simulator_baseline)(
                        stack, [f"{prefix}-cluster-{i}" for i in range(size)])
                    ballast_names = [f"{prefix}-ballast-{i}" for i in range(size)]
                    ballast = through_ballast(stack, statuses, ballast_names, timeout_s)
                    settle(stack, ballast_names)
                    results.append(Result(size, baseline, ballast))
                    print(f"{size} topics: cluster {baseline:.1f} s, Ballast {ballast:.1f} s ({results[-1].said})",
                          flush=True)
            finally:
                statuses.close()
        finally:
            stack.stop()
    return results


def section(kafka: bool, results: list[Result], command: str, placer: str | None = None) -> str:
    where = ("the real local Kafka cluster (4.3.1, 4 brokers, two log directories each); the cluster's own: "
             "CreateTopics in as few requests as its controller takes, until every partition has a leader" if kafka else
             "the embedded stack (the simulator's cluster); the cluster's own: the simulator's admin API, every "
             "creation at once (not Kafka's pace: the simulator places each new topic by counting every replica of "
             "its cluster, a time that grows with the square of the topics, so the ratio here says only that "
             "Ballast is not the slower part; the goal's comparison is the real Kafka one)")
    title = ("real Kafka" if kafka else "embedded stack") + (f", the {placer} placer" if placer else "")
    placer_said = f" Ballast places with the {placer} placer (`BALLAST_PLACEMENT__PLACER`)." if placer else ""
    rows = "\n".join(f"| {r.topics:,} | {r.baseline_s:.1f} s | {r.ballast_s:.1f} s | {r.said} |"
                     for r in results)
    return (f"## Creating topics at the cluster's pace: {title}\n\n`{command}`\n\n"
            f"Topics of {PARTITIONS} partitions at RF {REPLICAS} on {where}; Ballast: the specs published in one batch "
            f"until every status says ready.{placer_said} Side by side in one run, on one cluster (issue 52's goal: at most "
            "2x); Cruise Control's stand-in and the load collector, which take no part in creation, sample every "
            "600 s rather than every 2 and 10 s.\n\n"
            "| topics | the cluster's own | through Ballast | ratio |\n| --- | --- | --- | --- |\n" + rows + "\n\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kafka", action="store_true", help="on the real local Kafka cluster")
    parser.add_argument("--topics", default=None, help="comma-separated sizes (default: 300,3000 with --kafka, "
                                                      "else 10000)")
    parser.add_argument("--timeout", type=float, default=1800.0, help="seconds Ballast has for each size")
    parser.add_argument("--placer", choices=["striped", "multi-level"],
                        help="Ballast's placer (default: the deployment's, striped); its own section with --write")
    parser.add_argument("--write", type=Path, help="replace this benchmark's section of BENCHMARKS.md")
    args = parser.parse_args()
    sizes = [int(s) for s in (args.topics or ("300,3000" if args.kafka else "10000")).split(",")]
    results = run(args.kafka, sizes, args.timeout, args.placer)
    command = ("python -m bench.creation" + (" --kafka" if args.kafka else "")
               + f" --topics {','.join(map(str, sizes))}" + (f" --placer {args.placer}" if args.placer else ""))
    text = section(args.kafka, results, command, args.placer)
    print(text)
    if args.write:
        replace_section(args.write, text)


if __name__ == "__main__":
    sys.exit(main())
