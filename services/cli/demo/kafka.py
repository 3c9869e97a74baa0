"""``ballast demo --kafka`` / ``make demo-kafka``: the demo's scenario on a real Apache Kafka cluster (a controller and
four brokers in /dc1/r1 /dc1/r2 /dc2/r1 /dc2/r2, two log dirs each), with the simulated Cruise Control executing on
it. Every step ends with what Kafka itself describes, not only what Ballast reports."""

from __future__ import annotations

import asyncio
import os
import threading
import time
from collections import Counter
from collections.abc import Coroutine
from typing import Any, TypeVar

from confluent_kafka import Producer
from rich.console import Console
from rich.table import Table

from events import (
    TOPICS,
    LoadAggregate,
    RebalanceRequest,
    RebalanceState,
    TopicSpec,
    TopicStatus,
)
from services.cli.demo import run_dir as run_directory
from services.cli.demo.disks import disks_step
from services.cli.demo.follow import Seen, apply, follow, scenario, under_replicated
from services.cli.demo.load import aggregates_once
from services.cli.demo.patience import Patience
from services.cli.demo.scaling import RebalanceFollower, emptied_for_removal, forget, shown_and_approved
from services.cli.output import section
from services.cli.views import latest_windows, load_table, status_table
from services.common import busio
from services.adapters.admin.kafka import KafkaClusterAdmin
from services.adapters.admin.port import TopicDescription
from services.common.settings import BusSettings
from services.local.stack import LocalStack

T = TypeVar("T")

KAFKA_DEMO_ENV = {
    "BALLAST_PLACEMENT__UNDER_REPLICATED": "enabled_prefer_observed",
    "BALLAST_PLACEMENT__OBSERVE_INTERVAL_S": "1",
    "BALLAST_PLACEMENT__VIEW_MAX_AGE_S": "1",
    "BALLAST_PLACEMENT__VIEW_STALE_MAX_S": "1",
    "BALLAST_REBALANCER__OBSERVE_INTERVAL_S": "1",
    "BALLAST_LOAD_COLLECTOR__INTERVAL_S": "2",
    "BALLAST_SPARK__TRIGGER_S": "2",
    "BALLAST_SIMULATOR__SYNC_INTERVAL_S": "1",
}
DOWN_BROKER = 4  # /dc2/r2
NEW_RACK = "/dc1/r3"
TRAFFIC_TOPICS = ("orders", "clicks")
TRAFFIC_KB_S = 400  # per topic: enough for sizes (and so rates) to move, little for the disks
THROTTLE = 2_000_000  # bytes/s for the rebalances: the copies take long enough to watch


class Traffic:
    """Producers writing incompressible records to a few topics at a steady rate, so that sizes, bytes-in rates and
    the data a rebalance moves are real."""

    def __init__(self, bootstrap_servers: str, topics: tuple[str, ...], kb_s: int) -> None:
        # Quiet: a broker killed in step 3 would fill the screen with librdkafka's reconnect lines.
        self.producer = Producer({"bootstrap.servers": bootstrap_servers, "linger.ms": 50, "acks": "1",
                                  "log_level": 0})
        self.topics, self.kb_s = topics, kb_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="demo-traffic", daemon=True)
        self.sent_bytes = 0

    def __enter__(self) -> Traffic:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=10)
        self.producer.flush(10)

    def _run(self) -> None:
        record = 10 * 1024
        per_tick = max(1, self.kb_s * 1024 // record // 10)  # ten ticks a second
        while not self._stop.wait(0.1):
            for topic in self.topics:
                for _ in range(per_tick):
                    try:
                        self.producer.produce(topic, os.urandom(record))
                        self.sent_bytes += record
                    except BufferError:
                        break
            self.producer.poll(0)


class KafkaView:
    """What Kafka itself says, through the same cluster-admin adapter the services use (run on a loop of its own)."""

    def __init__(self, bootstrap_servers: str) -> None:
        self.admin = KafkaClusterAdmin({"bootstrap_servers": bootstrap_servers, "client_id": "ballast-demo"}, 15)
        self.loop = asyncio.new_event_loop()

    def run(self, call: Coroutine[Any, Any, T]) -> T:
        return self.loop.run_until_complete(call)

    def topics(self, names: list[str]) -> dict[str, TopicDescription]:
        described = self.run(self.admin.describe_topics(names))
        return {name: d for name, d in described.items() if d is not None}

    def close(self) -> None:
        self.run(self.admin.aclose())
        self.loop.close()


def kafka_table(cluster: KafkaView, names: list[str], title: str) -> Table:
    """One row per topic as Kafka describes it: RF, replicas per partition (leader first), whether all are in sync."""
    table = Table(title=title, title_justify="left")
    for column in ("topic", "RF", "partitions: replicas (leader*)", "in sync"):
        table.add_column(column)
    for name, topic in sorted(cluster.topics(names).items()):
        rf = Counter(len(p.replicas) for p in topic.partitions)
        parts = " ".join(f"p{p.id}=[" + ",".join(f"{b}*" if b == p.leader else str(b) for b in p.replicas) + "]"
                         for p in topic.partitions[:6]) + (" ..." if len(topic.partitions) > 6 else "")
        in_sync = all(set(p.isr) == set(p.replicas) for p in topic.partitions)
        table.add_row(name, "/".join(map(str, sorted(rf))), parts, "yes" if in_sync else "catching up")
    return table


def _wait(check: Any, patience: Patience, interval: float = 0.5) -> bool:
    while patience.waiting:
        if check():
            return True
        time.sleep(interval)
    return False


def _in_sync(cluster: KafkaView, names: list[str]) -> bool:
    topics = cluster.topics(names)
    return len(topics) == len(names) and all(
        set(p.isr) == set(p.replicas) for t in topics.values() for p in t.partitions)


def run_kafka_demo(console: Console, *, stall_s: float, keep: bool = False) -> int:
    started = time.monotonic()
    section(console, "[bold]Ballast demo on a real Apache Kafka cluster")
    run_dir = run_directory.create(console, "ballast-demo-kafka-")
    with LocalStack(run_dir, env=KAFKA_DEMO_ENV, kafka=True) as stack:
        patience = Patience(stall_s, logs=stack.logs, command="ballast demo --kafka")
        stack.start(progress=lambda m: console.print(f"[dim]- {m}[/dim]"))
        assert stack.kafka is not None
        console.print("[dim]- starting the Spark load-aggregates job (local[2]); it warms up during steps 1-5[/dim]")
        stack.start_spark_job()
        bus = stack.settings().bus
        cluster = KafkaView(stack.kafka.bootstrap_servers)
        try:
            ok = _steps(console, stack, bus, cluster, patience)
        finally:
            cluster.close()
        if not ok:
            return 1
        console.print(f"total demo time {time.monotonic() - started:.1f} s; stopping the stack ...")
    return run_directory.finish(console, run_dir, keep=keep)


def _steps(console: Console, stack: LocalStack, bus: BusSettings, cluster: KafkaView, patience: Patience) -> bool:
    assert stack.kafka is not None
    kafka = stack.kafka
    latest: dict[str, TopicStatus] = {}
    seen: Seen = {}
    brokers = ", ".join(f"{b} {rack}" for b, rack in kafka.racks().items())
    console.print(f"Kafka {kafka.bootstrap_servers}: brokers {brokers}; Cruise Control (simulated) executes on it")

    create = scenario("demo-create.yaml")
    names = [s.name for s in create]
    section(console, f"1. create {len(create)} topics; producers write to {', '.join(TRAFFIC_TOPICS)}")
    apply(bus, create)
    if not follow(console, bus, create, latest, patience, seen=seen):
        return patience.give_up(console, "the topics")
    traffic = Traffic(kafka.bootstrap_servers, TRAFFIC_TOPICS, TRAFFIC_KB_S)
    with traffic:
        console.print(kafka_table(cluster, names, "Kafka describes"))

        change = scenario("demo-change.yaml")
        section(console, "2. change replication factors: one raised, one lowered, a batch of three names with "
                         "'.', one below min ISR")
        apply(bus, change)
        desired = {s.name: s for s in create} | {s.name: s for s in change}
        if not follow(console, bus, list(desired.values()), latest, patience, seen=seen):
            return patience.give_up(console, "the replication-factor changes")
        if not _wait(lambda: _in_sync(cluster, names), patience):
            return patience.give_up(console, "the new replicas to catch up")
        console.print(kafka_table(cluster, names, "Kafka describes (partition reassignments done, all in sync)"))

        if not _broker_down(console, stack, bus, cluster, latest, seen, patience):
            return False
        if not _scale_up_and_down(console, stack, bus, cluster, patience):
            return False
        if not _load(console, stack, bus, cluster, patience):
            return False
        if not disks_step(console, stack, bus, patience, number=7, skewed=1, drained=2):
            return False
    section(console, "final state")
    console.print(status_table(list(latest.values()), title="Topic status (from the status topic)"))
    console.print(f"{traffic.sent_bytes / 1e6:.1f} MB produced during the demo")
    return True


def _broker_down(console: Console, stack: LocalStack, bus: BusSettings, cluster: KafkaView,
                 latest: dict[str, TopicStatus], seen: Seen, patience: Patience) -> bool:
    assert stack.kafka is not None
    # RF 4, one replica per rack: with a broker down the one for its rack is a placeholder (2 DCs of 2 racks leave
    # no other way to keep the spread; an RF 3 topic would simply go to the three brokers up).
    specs = [TopicSpec(name="ledger", partitions=6, replicas=4, placer="multi-level",
                       config={"min.insync.replicas": "2"})]
    name = specs[0].name
    section(console, f"3. broker {DOWN_BROKER} killed (-9): create {name} (RF 4, a replica per rack) with a "
                     "placeholder on it, then restart it")
    stack.kafka.kill_broker(DOWN_BROKER)
    time.sleep(1.5)  # one look at the brokers by the reconciler
    apply(bus, specs)
    if not follow(console, bus, specs, latest, patience, until=under_replicated, seen=seen):
        return patience.give_up(console, "the under-replicated creation")
    console.print(kafka_table(cluster, [name], f"Kafka describes (broker {DOWN_BROKER} is down)"))
    stack.kafka.start_broker(DOWN_BROKER)
    if not follow(console, bus, specs, latest, patience, seen=seen):
        return patience.give_up(console, "the placeholders to be filled")
    if not _wait(lambda: _in_sync(cluster, [name]), patience):
        return patience.give_up(console, f"{name}'s replicas to catch up")
    console.print(kafka_table(cluster, [name], f"Kafka describes (broker {DOWN_BROKER} back, placeholders filled)"))
    return True


def _scale_up_and_down(console: Console, stack: LocalStack, bus: BusSettings, cluster: KafkaView,
                       patience: Patience) -> bool:
    assert stack.kafka is not None
    rebalances = RebalanceFollower(console, bus)
    section(console, f"4. scale-up: a fifth broker joins {NEW_RACK}; an add-brokers rebalance, approved, copies "
                     f"real data under a {THROTTLE / 1e6:.0f} MB/s throttle")
    new = stack.kafka.add_broker(NEW_RACK)
    console.print(f"broker {new} started in {NEW_RACK}")
    request = RebalanceRequest(name="scale-up", mode="add-brokers", brokers=[new], replication_throttle=THROTTLE)
    busio.publish(bus, TOPICS.rebalance_requests, [request])
    if not shown_and_approved(console, bus, rebalances, request.name, patience, "scale-up"):
        return False
    throttled = threading.Event()
    watcher = threading.Thread(target=_watch_throttle, args=(stack.kafka.bootstrap_servers, new, throttled, patience),
                               daemon=True)
    watcher.start()
    if rebalances.until(request.name, lambda s: s.state == RebalanceState.READY, patience) is None:
        return patience.give_up(console, "the scale-up execution")
    throttled_seen = throttled.is_set()
    console.print(_hosted_line(cluster, new) + ("; the throttle was on the brokers while data moved, and is off now"
                                                if throttled_seen else ""))

    section(console, f"5. safe scale-down: broker {new} announced for removal, emptied, reported safe, shut down")
    if not emptied_for_removal(console, bus, rebalances, new, patience):
        return False
    console.print(_hosted_line(cluster, new))
    stack.kafka.decommission_broker(new)
    alive = [b.id for b in cluster.run(cluster.admin.brokers())]
    console.print(f"broker {new} shut down and unregistered; Kafka's brokers now: {alive}")
    forget(console, bus, new)
    return True


def _watch_throttle(bootstrap_servers: str, broker: int, seen: threading.Event, patience: Patience) -> None:
    """Sets ``seen`` once the broker carries the replication throttle Cruise Control's executor sets."""
    probe = KafkaView(bootstrap_servers)
    try:
        while patience.waiting and not seen.is_set():
            try:
                if "follower.replication.throttled.rate" in probe.run(probe.admin.broker_configs(broker)):
                    seen.set()
            except Exception:  # noqa: BLE001 -- the broker may not be known to this client yet
                pass
            time.sleep(0.3)
    finally:
        probe.close()


def _hosted_line(cluster: KafkaView, broker: int) -> str:
    topics = cluster.run(cluster.admin.list_topics())
    hosted = Counter(name for name, t in topics.items() for p in t.partitions if broker in p.replicas)
    if not hosted:
        return f"Kafka: broker {broker} hosts no replica"
    # Cruise Control moves every topic, Ballast's own (its bus is this cluster) included: summed up in one item.
    own = sum(c for n, c in hosted.items() if n.startswith("ballast"))
    items = [f"{n} x{c}" for n, c in sorted(hosted.items()) if not n.startswith("ballast")]
    items += [f"{own} of Ballast's own topics"] if own else []
    return f"Kafka: broker {broker} hosts {sum(hosted.values())} replicas ({', '.join(items)})"


def _traffic_aggregated(aggregates: list[LoadAggregate]) -> bool:
    """Both data centres aggregated, and bytes in on some broker: the producers' traffic reached the figures."""
    return {"/dc1", "/dc2"} <= {a.entity for a in aggregates if a.entity_kind == "domain"} and any(
        a.bytes_in_kb_s > 0 for a in aggregates if a.entity_kind == "broker")


def _load(console: Console, stack: LocalStack, bus: BusSettings, cluster: KafkaView, patience: Patience) -> bool:
    section(console, "6. load: real sizes and bytes-in rates -> Cruise Control's load -> load collector -> Spark "
                     "-> aggregates -> placement")
    aggregates = aggregates_once(console, bus, patience, _traffic_aggregated,
                                 "the Spark job's aggregates of the real traffic")
    if aggregates is None:
        return False
    console.print(load_table(aggregates))
    brokers = {int(a.entity): a for a in latest_windows(aggregates) if a.entity_kind == "broker"}
    spec = TopicSpec(name="telemetry", partitions=1, replicas=2, placer="multi-level")
    busio.publish(bus, TOPICS.specs, [spec])
    if not _wait(lambda: bool(cluster.topics([spec.name])), patience):
        return patience.give_up(console, f"{spec.name} to be created")
    partition = cluster.topics([spec.name])[spec.name].partitions[0]
    loads = "; ".join(f"{b}: {brokers[b].replicas}, {brokers[b].bytes_in_kb_s / 1024:.2f}" for b in sorted(brokers))
    console.print(f"Kafka placed {spec.name} (RF 2, multi-level) on brokers {list(partition.replicas)}: one per data "
                  f"centre, within one the fewest replicas, then the least load. Brokers (replicas, MB/s in): {loads}",
                  soft_wrap=True)
    dirs = "; ".join(f"{broker}: {path}" for broker, path in partition.log_dirs)
    if dirs:
        console.print(f"log directories (Kafka's DescribeLogDirs): {dirs}", soft_wrap=True)
    return True
