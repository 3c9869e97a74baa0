"""The real local Kafka cluster: start-up time and resident memory, beside the embedded stack's start-up.

    python -m bench.kafka_cluster [--runs 3] [--write BENCHMARKS.md]

Each run starts, in turn, a bare LocalKafka (format + a controller and 4 broker JVMs, until DescribeCluster shows
every broker unfenced), the same without the archive of Kafka's classes (``services.local.kafka_classes``), with the
CPU its five nodes used until then, the whole stack on it (`ballast up --kafka`'s LocalStack: Kafka, the simulator, the four
services healthy) and the embedded stack (`make demo`'s: Tansu, the simulator, the services). Memory is each Kafka
JVM's resident set (VmRSS) once ready, and again after 20,000 records of 1 kB went to a 4-partition RF 3 topic.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from confluent_kafka import Producer

from bench.markdown import replace_section
from services.local.kafka_cluster import LocalKafka, kafka_version
from services.local.kafka_probe import admin_client
from services.local.stack import LocalStack


@dataclass
class Run:
    kafka_ready_s: float
    kafka_unshared_ready_s: float
    kafka_cpu_s: float
    kafka_unshared_cpu_s: float
    kafka_stack_ready_s: float
    embedded_stack_ready_s: float
    rss_mb_ready: dict[str, float] = field(default_factory=dict)
    rss_mb_loaded: dict[str, float] = field(default_factory=dict)


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def node_rss(kafka: LocalKafka) -> dict[str, float]:
    nodes = {"controller": kafka.controller, **{f"broker {b}": n for b, n in kafka.brokers.items()}}
    return {name: rss_mb(node.process.pid) for name, node in nodes.items() if node.process is not None}


def cpu_s(pid: int) -> float:
    """The CPU time a process has used so far (user and system, from /proc); 0 for one that is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except FileNotFoundError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def node_cpu_s(kafka: LocalKafka) -> float:
    """The CPU time the cluster's JVMs have used so far."""
    return sum(cpu_s(node.process.pid) for node in (kafka.controller, *kafka.brokers.values())
               if node.process is not None)


def load(kafka: LocalKafka, records: int = 20_000) -> None:
    with admin_client(kafka.bootstrap_servers, timeout_ms=10_000) as admin:
        admin.create_topics({"bench-load": {"num_partitions": 4, "replication_factor": 3}})
    producer = Producer({"bootstrap.servers": kafka.bootstrap_servers, "linger.ms": 20, "acks": "all",
                         "log_level": 0})
    for i in range(records):
        producer.produce("bench-load", value=b"x" * 1000, partition=i % 4)
        producer.poll(0)
    producer.flush(60)


def timed(start: Callable[[], object]) -> float:
    began = time.monotonic()
    start()
    return time.monotonic() - began


def one_run(say: Callable[[str], None]) -> Run:
    with tempfile.TemporaryDirectory() as tmp:
        kafka = LocalKafka(Path(tmp) / "bare")
        try:
            ready = timed(kafka.start)
            cpu = node_cpu_s(kafka)
            say(f"bare Kafka ready in {ready:.1f} s ({cpu:.1f} s of CPU)")
            rss_ready = node_rss(kafka)
            load(kafka)
            time.sleep(2)
            rss_loaded = node_rss(kafka)
        finally:
            kafka.stop()
        unshared = LocalKafka(Path(tmp) / "unshared", share_classes=False)
        try:
            unshared_ready = timed(unshared.start)
            unshared_cpu = node_cpu_s(unshared)
            say(f"bare Kafka without the class archive ready in {unshared_ready:.1f} s ({unshared_cpu:.1f} s of CPU)")
        finally:
            unshared.stop()
        stack = LocalStack(Path(tmp) / "kafka-stack", kafka=True)
        try:
            kafka_stack = timed(stack.start)
            say(f"stack on Kafka ready in {kafka_stack:.1f} s")
        finally:
            stack.stop()
        embedded = LocalStack(Path(tmp) / "embedded")
        try:
            embedded_ready = timed(embedded.start)
            say(f"embedded stack ready in {embedded_ready:.1f} s")
        finally:
            embedded.stop()
    return Run(ready, unshared_ready, cpu, unshared_cpu, kafka_stack, embedded_ready, rss_ready, rss_loaded)


def render(runs: list[Run], command: str) -> str:
    def stats(values: list[float]) -> str:
        return f"{statistics.median(values):.1f} (min {min(values):.1f}, max {max(values):.1f})"

    nodes = list(runs[0].rss_mb_ready)
    return "\n".join([
        f"## Real local Kafka cluster: start-up and memory (Kafka {kafka_version()}, 1 controller + 4 brokers)",
        "",
        f"`{command}`: {len(runs)} runs on this 2-core machine, each starting the four one after the other.",
        "",
        "| what | seconds until ready, median (min, max) | CPU seconds of the 5 JVMs until ready, median |",
        "| --- | --- | --- |",
        f"| Kafka alone: format storage, 5 JVMs, every broker unfenced | {stats([r.kafka_ready_s for r in runs])} "
        f"| {statistics.median(r.kafka_cpu_s for r in runs):.1f} |",
        f"| the same without the archive of Kafka's classes | {stats([r.kafka_unshared_ready_s for r in runs])} "
        f"| {statistics.median(r.kafka_unshared_cpu_s for r in runs):.1f} |",
        f"| the stack on Kafka (`ballast up --kafka`): Kafka, simulator, 4 services healthy "
        f"| {stats([r.kafka_stack_ready_s for r in runs])} | |",
        f"| the embedded stack (`make demo`'s): Tansu, simulator, 4 services healthy "
        f"| {stats([r.embedded_stack_ready_s for r in runs])} | |",
        "",
        "| JVM | heap limit | resident MB once ready (median) | after 20,000 x 1 kB records, RF 3 (median) |",
        "| --- | --- | --- | --- |",
        *[f"| {node} | {'192' if node == 'controller' else '256'} MB "
          f"| {statistics.median(r.rss_mb_ready[node] for r in runs):.0f} "
          f"| {statistics.median(r.rss_mb_loaded[node] for r in runs):.0f} |" for node in nodes],
        f"| all five | | {statistics.median(sum(r.rss_mb_ready.values()) for r in runs):.0f} "
        f"| {statistics.median(sum(r.rss_mb_loaded.values()) for r in runs):.0f} |",
        "",
        "The archive is the one made by `make kafka`; a node's resident set counts the archive pages it maps (one file, which",
        "the five nodes share through the page cache).",
        "",
        "The embedded stack is what `make demo` starts; the real cluster is started only by `make up-kafka` and the",
        "real-Kafka tests, so the demo's start-up is unchanged by it.",
        "",
    ])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--write", type=Path, help="replace this benchmark's section in the given markdown file")
    args = parser.parse_args(argv)
    runs = [one_run(lambda m: print(m, file=sys.stderr, flush=True)) for _ in range(args.runs)]
    command = f"python -m bench.kafka_cluster --runs {args.runs}" + (f" --write {args.write}" if args.write else "")
    section = render(runs, command)
    print(section)
    if args.write:
        replace_section(args.write, section)


if __name__ == "__main__":
    main()
