"""Benchmark: an add-brokers rebalance, 6 -> 9 brokers with 10,000 partitions, through the local stack.

    python -m bench.rebalance [--partitions 10000] [--write BENCHMARKS.md]
    python -m bench.rebalance --kafka [--partitions 120] [--partition-mb 1] [--throttle 4000000] [--write ...]

The simulator starts with 6 brokers (3 DCs x 2 racks) holding 10 topics of RF 3 placed by the multi-level placer;
brokers 7, 8, 9 join (a third rack per DC) and an add-brokers rebalance is requested, approved and executed by the
rebalancer with its production settings (poll every 1 s). Measured: replicas and data moved against the lower bound
(the new brokers' fair share), the proposal time (Cruise Control's alone, and request -> ProposalReady status), and
status latency (execution finished in the simulator -> Ready status; gaps between progress updates).

With ``--kafka``: one add-brokers rebalance (4 -> 5 brokers, /dc1/r1 /dc1/r2 /dc2/r1 /dc2/r2 + /dc1/r3) under a
replication throttle, on the embedded stack and on the real local Kafka cluster in one run, side by side: replicas
and bytes moved against the lower bound, and the copy's throughput against the throttle (real bytes on Kafka).
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
from pathlib import Path

import httpx
from confluent_kafka import Consumer, TopicPartition

from bench.markdown import replace_section
from bench.replicas_change import percentile
from events import TOPICS, RebalanceAction, RebalanceRequest
from services.common import busio
from services.adapters.cruise_control import CruiseControlClient, OptimizationOptions
from services.local.stack import LocalStack
from services.placement.metrics import moved_replicas
from services.placement.model import Broker, ClusterView, PlacementSpec
from services.placement.placer import placer_named
from services.placement.rebalance import lower_bound

OLD = {1: "/dc1/r1", 2: "/dc1/r2", 3: "/dc2/r1", 4: "/dc2/r2", 5: "/dc3/r1", 6: "/dc3/r2"}
NEW = {7: "/dc1/r3", 8: "/dc2/r3", 9: "/dc3/r3"}
PARTITION_MB = 100.0
ENV = {
    "BALLAST_SIMULATOR__BROKERS": json.dumps([f"{b}:{r}" for b, r in OLD.items()]),
    "BALLAST_SIMULATOR__PARTITION_SIZE_MB": str(PARTITION_MB),
    # 1,000,000 MB at 100 MB/s is 10,000 simulated seconds: 2,000x makes it 5 real seconds.
    "BALLAST_SIMULATOR__TIME_SCALE": "2000",
    "BALLAST_LOG_LEVEL": "warning",
}


class StatusTail:
    """The rebalance's status records with the time each arrived (plain JSON: measuring must not compete)."""

    def __init__(self, bus) -> None:
        self.bus = bus
        self.seen: list[tuple[float, dict]] = []
        self.lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        consumer = Consumer({**self.bus.confluent_config(), "group.id": f"bench-{uuid.uuid4()}",
                             "enable.auto.commit": False, "auto.offset.reset": "earliest", "fetch.wait.max.ms": 10})
        consumer.assign([TopicPartition(TOPICS.rebalance_status.name, 0, -2)])
        while not self._stop.is_set():
            message = consumer.poll(0.05)
            if message is None or message.error():
                continue
            payload = json.loads(message.value())["payload"]
            with self.lock:
                self.seen.append((time.monotonic(), payload))
        consumer.close()

    def wait(self, state: str, timeout: float) -> tuple[float, dict]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self.lock:
                found = next(((t, p) for t, p in self.seen if p["state"] == state), None)
            if found:
                return found
            time.sleep(0.01)
        raise TimeoutError(f"no {state} status within {timeout:.0f} s")

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)


def place_topics(partitions: int) -> ClusterView:
    view = ClusterView.of([Broker(b, rack) for b, rack in OLD.items()])
    placer = placer_named("multi-level", seed=1)
    per_topic = partitions // 10
    for index in range(10):
        spec = PlacementSpec(per_topic, 3, topic=f"bench-{index}")
        view = view.with_assignment(spec.topic, placer.place(spec, view))
    return view


def execution_span(sim: httpx.Client, *, timeout_s: float, interval_s: float) -> tuple[float, float]:
    """When Cruise Control's executor (the simulator's own word for it) became busy, and when it was idle again."""
    started_at = None
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        executing = sim.get("/faults/stats").json()["executing"]
        if executing and started_at is None:
            started_at = time.monotonic()
        elif not executing and started_at is not None:
            return started_at, time.monotonic()
        time.sleep(interval_s)
    raise AssertionError("the execution never ran, or never ended")


def assignments(sim: httpx.Client) -> dict[str, list[list[int]]]:
    return {t["name"]: [p["replicas"] for p in t["partitions"]] for t in sim.get("/admin/topics").json()["topics"]}


async def time_proposal(stack: LocalStack) -> float:
    """Cruise Control's (the simulator's) own time for the add_broker dry run."""
    async with CruiseControlClient(stack.settings().cruise_control) as cc:
        started = time.perf_counter()
        await cc.add_broker(list(NEW), OptimizationOptions(verbose=True))
        return time.perf_counter() - started


def run(partitions: int, say) -> dict[str, float]:
    run_dir = Path(tempfile.mkdtemp(prefix="ballast-bench-rebalance-"))
    with LocalStack(run_dir, env=ENV, services=("rebalancer",)) as stack:
        stack.start(progress=lambda m: say(f"  {m}"))
        sim = httpx.Client(base_url=stack.sim_url, timeout=120)
        say(f"creating 10 topics, {partitions:,} partitions, RF 3 (multi-level placement)")
        view = place_topics(partitions)
        for name, parts in view.assignments.items():
            sim.post("/admin/topics", json={"name": name, "partitions": len(parts), "replicationFactor": 3,
                                            "assignment": parts}).raise_for_status()
        for broker, rack in NEW.items():
            sim.post("/admin/brokers", json={"id": broker, "rack": rack}).raise_for_status()
        grown = ClusterView.of([Broker(b, r) for b, r in {**OLD, **NEW}.items()], view.assignments)
        bound = lower_bound(grown)
        before = assignments(sim)

        cc_proposal_s = asyncio.run(time_proposal(stack))

        tail = StatusTail(stack.settings().bus)
        request = RebalanceRequest(name="bench-scale-up", mode="add-brokers", brokers=list(NEW))
        requested = time.monotonic()
        busio.publish(stack.settings().bus, TOPICS.rebalance_requests, [request])
        ready_at, proposal = tail.wait("ProposalReady", 120)
        say(f"proposal ready after {ready_at - requested:.2f} s: {proposal['summary']['numReplicaMovements']:,} "
            "replica movements")
        action = RebalanceAction(name=request.name, action="approve")
        busio.publish(stack.settings().bus, TOPICS.rebalance_actions, [action])
        _started_at, finished_at = execution_span(sim, timeout_s=600, interval_s=0.01)
        done_at, _ = tail.wait("Ready", 120)
        with tail.lock:
            progress_times = [t for t, p in tail.seen if p["state"] == "Rebalancing" and p.get("progress")]
        tail.stop()
        after = assignments(sim)
        moved = moved_replicas(before, after)
        gaps = [b - a for a, b in zip(progress_times, progress_times[1:])]
        sim.close()
        return {
            "partitions": partitions, "lower_bound": bound, "moved": moved,
            "proposed": proposal["summary"]["numReplicaMovements"],
            "data_mb": proposal["summary"]["dataToMoveMB"], "bound_mb": bound * PARTITION_MB,
            "cc_proposal_s": cc_proposal_s, "proposal_s": ready_at - requested,
            "execution_s": finished_at - (ready_at), "ready_latency_s": done_at - finished_at,
            "progress_updates": len(progress_times),
            "progress_gap_p50_s": percentile(gaps, 50), "progress_gap_max_s": max(gaps, default=float("nan")),
        }


def render(r: dict[str, float], command: str) -> str:
    return "\n".join([
        "## Rebalancing: add-brokers, 6 -> 9 brokers, 10,000 partitions",
        "",
        f"Command: `{command}` (the local stack: Tansu, the simulator, the rebalancer with its default 1 s poll).",
        f"{r['partitions']:,} partitions of RF 3 on 6 brokers (3 DCs x 2 racks, multi-level placement); brokers "
        "7, 8, 9 join as a third rack in each DC. Lower bound: the new brokers' fair share of the replicas.",
        "",
        "| measure | value |",
        "|---|---|",
        f"| replicas moved (in the cluster, after) | {r['moved']:,} |",
        f"| replica movements proposed | {r['proposed']:,} |",
        f"| lower bound (new brokers' fair share) | {r['lower_bound']:,} |",
        f"| data moved | {r['data_mb']:,.0f} MB (lower bound {r['bound_mb']:,.0f} MB) |",
        f"| proposal time, Cruise Control (simulator) alone | {r['cc_proposal_s']:.2f} s |",
        f"| proposal time, request event -> ProposalReady status | {r['proposal_s']:.2f} s |",
        f"| approval -> execution finished (simulated copy at 2,000x) | {r['execution_s']:.1f} s |",
        f"| status latency, execution finished -> Ready status | {r['ready_latency_s']:.2f} s |",
        f"| progress updates while executing; gap p50 / max | {r['progress_updates']} ; "
        f"{r['progress_gap_p50_s']:.2f} s / {r['progress_gap_max_s']:.2f} s |",
        "",
        "One run on this 2-core machine; the Ready latency is one sample (bounded by the poll interval plus one "
        "user_tasks and /state round trip).",
        "",
    ])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--partitions", type=int, default=None, help="default: 10000; 120 with --kafka")
    parser.add_argument("--kafka", action="store_true",
                        help="one throttled add-brokers rebalance on the embedded stack and on real Kafka, side by side")
    parser.add_argument("--partition-mb", type=float, default=1.0, help="with --kafka: data per partition")
    parser.add_argument("--throttle", type=int, default=4_000_000, help="with --kafka: bytes per second")
    parser.add_argument("--write", type=Path, help="replace this benchmark's section in the given markdown file")
    args = parser.parse_args(argv)
    if args.kafka:
        main_pair(args.partitions or 120, args.partition_mb, args.throttle, args.write)
        return
    args.partitions = args.partitions or 10_000
    result = run(args.partitions, lambda m: print(m, file=sys.stderr, flush=True))
    command = "python -m bench.rebalance" + (f" --write {args.write}" if args.write else "")
    section = render(result, command)
    print(section)
    if args.write:
        replace_section(args.write, section)



# -- the side-by-side run: embedded and real Kafka -------------------------------------------------------------------

KAFKA_RACKS = {1: "/dc1/r1", 2: "/dc1/r2", 3: "/dc2/r1", 4: "/dc2/r2"}
JOINING = (5, "/dc1/r3")
BENCH_ONLY = "(?!bench-).*"  # excluded_topics: the real cluster also holds Ballast's own topics


def _placed(partitions: int) -> ClusterView:
    view = ClusterView.of([Broker(b, rack) for b, rack in KAFKA_RACKS.items()])
    placer = placer_named("multi-level", seed=1)
    for index in range(10):
        spec = PlacementSpec(partitions // 10, 2, topic=f"bench-{index}")
        view = view.with_assignment(spec.topic, placer.place(spec, view))
    return view


def run_pair_side(kafka: bool, partitions: int, partition_mb: float, throttle: int, say) -> dict[str, float]:
    """One add-brokers rebalance under ``throttle`` on one stack; returns its figures."""
    from services.adapters.admin.kafka import KafkaClusterAdmin

    env = {"BALLAST_LOG_LEVEL": "warning", "BALLAST_SIMULATOR__PARTITION_SIZE_MB": str(partition_mb),
           # Real time: the simulated copy runs at the throttle, as the real one does.
           "BALLAST_SIMULATOR__TIME_SCALE": "1", "BALLAST_SIMULATOR__MIN_EXECUTION_S": "0.1",
           "BALLAST_SIMULATOR__BROKERS": json.dumps([f"{b}:{r}" for b, r in KAFKA_RACKS.items()])}
    run_dir = Path(tempfile.mkdtemp(prefix="ballast-bench-rebalance-"))
    view = _placed(partitions)
    with LocalStack(run_dir, env=env, services=("rebalancer",), kafka=kafka) as stack:
        stack.start(progress=lambda m: say(f"  {m}"))
        sim = httpx.Client(base_url=stack.sim_url, timeout=120)
        admin = None
        say(f"{'real Kafka' if kafka else 'embedded'}: 10 topics, {partitions} partitions of RF 2, "
            f"{partition_mb:g} MB each")
        if kafka:
            assert stack.kafka is not None
            admin = KafkaClusterAdmin({"bootstrap_servers": stack.kafka.bootstrap_servers}, 30)
            loop = asyncio.new_event_loop()
            for name, parts in view.assignments.items():
                loop.run_until_complete(admin.create_topic(name, len(parts), 2, assignment=parts))
            _fill(stack.kafka.bootstrap_servers, view, partition_mb)
            stack.kafka.add_broker(JOINING[1], broker=JOINING[0])
            # The simulator reads sizes every 2 s: wait until it has them all.
            _wait_sizes(sim, view, partition_mb * 0.9)
        else:
            for name, parts in view.assignments.items():
                sim.post("/admin/topics", json={"name": name, "partitions": len(parts), "replicationFactor": 2,
                                                "assignment": parts}).raise_for_status()
            sim.post("/admin/brokers", json={"id": JOINING[0], "rack": JOINING[1]}).raise_for_status()
        grown = ClusterView.of([Broker(b, r) for b, r in {**KAFKA_RACKS, JOINING[0]: JOINING[1]}.items()],
                               view.assignments)
        bound = lower_bound(grown)
        # With one replica per DC in every partition, the joining broker can only take replicas of its own DC: at
        # best an even share of them.
        dc = JOINING[1].split("/")[1]
        in_dc = [b for b, rack in {**KAFKA_RACKS, JOINING[0]: JOINING[1]}.items() if rack.split("/")[1] == dc]
        spread_bound = sum(1 for parts in view.assignments.values() for replicas in parts for b in replicas
                           if b in in_dc) // len(in_dc)
        before = _bench_assignments(sim)
        tail = StatusTail(stack.settings().bus)
        request = RebalanceRequest(name="bench-pair", mode="add-brokers", brokers=[JOINING[0]],
                                   replication_throttle=throttle, excluded_topics=BENCH_ONLY)
        requested = time.monotonic()
        busio.publish(stack.settings().bus, TOPICS.rebalance_requests, [request])
        ready_at, proposal = tail.wait("ProposalReady", 120)
        action = RebalanceAction(name=request.name, action="approve")
        busio.publish(stack.settings().bus, TOPICS.rebalance_actions, [action])
        started_at, finished_at = execution_span(sim, timeout_s=900, interval_s=0.02)
        done_at, _ = tail.wait("Ready", 120)
        tail.stop()
        after = _bench_assignments(sim)
        moved = moved_replicas(before, after)
        data_mb = proposal["summary"]["dataToMoveMB"]
        sim.close()
        if admin is not None:
            loop.run_until_complete(admin.aclose())
            loop.close()
        execution_s = finished_at - started_at
        return {"partitions": partitions, "lower_bound": bound, "spread_bound": spread_bound, "moved": moved,
                "proposed": proposal["summary"]["numReplicaMovements"], "data_mb": data_mb,
                "bound_mb": bound * partition_mb, "proposal_s": ready_at - requested, "execution_s": execution_s,
                "throughput_mb_s": data_mb / execution_s if execution_s > 0 else float("nan"),
                "ready_latency_s": done_at - finished_at}


def _fill(bootstrap_servers: str, view: ClusterView, partition_mb: float) -> None:
    import os

    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap_servers, "linger.ms": 20, "acks": "all",
                         "compression.type": "none"})
    chunk = 64 * 1024
    for name, parts in view.assignments.items():
        for partition in range(len(parts)):
            for _ in range(int(partition_mb * 1024 * 1024 / chunk)):
                producer.produce(name, os.urandom(chunk), partition=partition)
                producer.poll(0)
    assert producer.flush(120) == 0


def _bench_assignments(sim: httpx.Client) -> dict[str, list[list[int]]]:
    return {name: parts for name, parts in assignments(sim).items() if name.startswith("bench-")}


def _wait_sizes(sim: httpx.Client, view: ClusterView, least_mb: float, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        topics = {t["name"]: t for t in sim.get("/admin/topics").json()["topics"]}
        if all(name in topics and all(p["sizeMB"] >= least_mb for p in topics[name]["partitions"])
               for name in view.assignments):
            return
        time.sleep(0.5)
    raise TimeoutError("the simulator never saw the partitions' sizes")


def render_pair(embedded: dict[str, float], real: dict[str, float], throttle: int, partition_mb: float,
                command: str) -> str:
    rows = [
        ("replicas moved (in the cluster, after)", lambda r: f"{r['moved']:,}"),
        ("replica movements proposed", lambda r: f"{r['proposed']:,}"),
        ("the new broker's share of all replicas (a bound that ignores the spread)", lambda r: f"{r['lower_bound']:,}"),
        ("the new broker's share of its DC's replicas (the most it can take with one replica per DC)",
         lambda r: f"{r['spread_bound']:,}"),
        ("data moved (proposal)", lambda r: f"{r['data_mb']:,.0f} MB"),
        ("proposal time, request event -> ProposalReady status", lambda r: f"{r['proposal_s']:.2f} s"),
        ("execution (Cruise Control's executor busy)", lambda r: f"{r['execution_s']:.1f} s"),
        (f"throughput: data moved / execution, against the {throttle / 1e6:g} MB/s throttle",
         lambda r: f"{r['throughput_mb_s']:.2f} MB/s"),
        ("status latency, execution finished -> Ready status", lambda r: f"{r['ready_latency_s']:.2f} s"),
    ]
    table = "\n".join(f"| {label} | {cell(embedded)} | {cell(real)} |" for label, cell in rows)
    return f"""## Rebalancing: add-brokers on the embedded stack and on real Kafka side by side

Command: `{command}`

The same rebalance on both stacks in one run: 10 topics, {int(embedded['partitions'])} partitions of RF 2 placed
multi-level on 4 brokers (/dc1/r1 /dc1/r2 /dc2/r1 /dc2/r2), {partition_mb:g} MB per partition (real, incompressible
records on Kafka); broker 5 joins in /dc1/r3 and an add-brokers rebalance with a {throttle / 1e6:g} MB/s replication
throttle is requested, approved and executed by the rebalancer. Embedded: the simulator copies at the throttle in
real time. Real Kafka: Kafka 4.3.1; the simulated Cruise Control sets the throttle on the brokers and topics and
reassigns up to 5 partitions per broker at a time; only the bench topics may move (excluded_topics), as the cluster
also holds Ballast's own.

| measure | embedded | real Kafka |
| --- | --- | --- |
{table}

Both stacks run the same optimizer, so they move the same replicas. It fills the new broker up to its share of all
replicas, taking only from brokers above that share; in this uneven tree (three brokers in /dc1, two in /dc2) that
stops short of the DC's even share, which is the better target here (noted in docs/limits.md).
Throughput counts the proposal's data (sizes in MiB) over the executor's busy time. On Kafka that includes, for
each batch of at most 5 reassignments into the new broker, the round trips, the check every 0.5 s and the tail of
each batch, so small partitions stay under the throttle; Kafka's quota keeps the copy itself at or under it
(tests/kafka measures the bytes arriving on the new broker while it runs).

"""


def main_pair(partitions: int, partition_mb: float, throttle: int, write: Path | None) -> None:
    say = lambda m: print(m, file=sys.stderr, flush=True)  # noqa: E731
    embedded = run_pair_side(False, partitions, partition_mb, throttle, say)
    real = run_pair_side(True, partitions, partition_mb, throttle, say)
    command = (f"python -m bench.rebalance --kafka --partitions {partitions} --partition-mb {partition_mb:g} "
               f"--throttle {throttle}" + (f" --write {write}" if write else ""))
    section = render_pair(embedded, real, throttle, partition_mb, command)
    print(section)
    if write:
        replace_section(write, section)


if __name__ == "__main__":
    main()
