"""Benchmark: N topic specs with replication-factor changes through the local stack.

    python -m bench.replicas_change [--topics 10000] [--rates 250,500,1000] [--relaxed] [--write BENCHMARKS.md]
        [--dump FILE]
    python -m bench.replicas_change --kafka [--topics 200] [--rates 50] [--write BENCHMARKS.md]

With ``--kafka`` the same phases run twice in one run, on the embedded stack and on the real local Kafka cluster (the
bus and the managed cluster; the simulated Cruise Control executes real reassignments), and the section shows them
side by side.

Phase 1 creates N topics at RF 3. Phase 2 (throughput) produces N RF changes (3 -> 2) in one burst and measures spec
events processed per second and Cruise Control requests. Phase 3 (latency), once per rate, produces N RF changes
(alternately to 3 and to 2) paced at that many specs per second and measures spec -> submission (spec produced ->
Cruise Control has the topic_configuration request: its task's start), each hop on the way, and task completion ->
status event (simulator's completion time -> the status event).

With ``--relaxed`` the same phases run a second time in the same run, on a stack whose Cruise Control task budget is
relaxed (tasks found finished every 0.05 s instead of 0.5 s, 100 active tasks, the replicas-change service's share
50 instead of 1): where the budget is the floor of a latency, the two tables show it."""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import threading
import time
import uuid
from datetime import datetime
from pathlib import Path

import httpx
from confluent_kafka import Consumer, TopicPartition

from events import TOPICS, ReplicasChangeRecord, TopicSpec, TopicStatus, encode
from services.common import busio
from bench.markdown import replace_section
from services.local.stack import LocalStack

ENV = {
    "BALLAST_SIMULATOR__MIN_EXECUTION_S": "0.5",
    "BALLAST_SIMULATOR__PROPOSAL_S": "0.1",
    # Small partitions: the measured latencies are Ballast's, not the simulated data copy's.
    "BALLAST_SIMULATOR__PARTITION_SIZE_MB": "1",
    "BALLAST_REPLICAS_CHANGE__POLL_INTERVAL_S": "0.5",
    "BALLAST_RECONCILER__RESYNC_INTERVAL_S": "300",
    "BALLAST_LOG_LEVEL": "warning",
}


# Cruise Control's user-task budget, relaxed: its scanner ten times as often, and room for many tasks at once.
RELAXED_BUDGET = {
    "BALLAST_SIMULATOR__TASK_SCANNER_PERIOD_S": "0.05",
    "BALLAST_CRUISE_CONTROL__TASK_SCANNER_PERIOD_S": "0.05",
    "BALLAST_SIMULATOR__MAX_ACTIVE_USER_TASKS": "100",
    "BALLAST_CRUISE_CONTROL__MAX_ACTIVE_USER_TASKS": "100",
    "BALLAST_CRUISE_CONTROL__USER_TASK_SHARES": '{"rebalancer": 2, "replicas-change": 50, "load-collector": 1}',
}


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q / 100 * (len(ordered) - 1))))] if ordered else float("nan")


class Tail:
    """Follows the status and replicas-change topics in a thread, keeping the times each transition happened.

    Parses plain JSON, not the pydantic models: on 2 cores the measuring must not compete with what it measures."""

    def __init__(self, bus) -> None:
        self.bus = bus
        self.lock = threading.Lock()
        self.status: dict[str, dict] = {}
        self.completed_event_time: dict[str, float] = {}
        self.submitted_at: dict[str, float] = {}
        self.pending_at: dict[str, float] = {}
        self.observed_at: dict[str, float] = {}
        self.session_of: dict[str, str] = {}
        self.target = 0
        self.baseline: dict[str, int] = {}  # generation per topic when the latency phase began
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def reset_latency(self, target: int) -> None:
        with self.lock:
            self.target = target
            self.baseline = {name: status["generation"] for name, status in self.status.items()}
            for table in (self.completed_event_time, self.submitted_at, self.pending_at, self.observed_at,
                          self.session_of):
                table.clear()

    def _run(self) -> None:
        consumer = Consumer({**self.bus.confluent_config(), "group.id": f"bench-{uuid.uuid4()}",
                             "enable.auto.commit": False, "auto.offset.reset": "earliest"})
        consumer.assign([TopicPartition(TOPICS.status.name, 0, -2), TopicPartition(TOPICS.replicas_state.name, 0, -2)])
        while not self.stop.is_set():
            for message in consumer.consume(1000, 0.2):
                if message.error():
                    continue
                envelope = json.loads(message.value())
                with self.lock:
                    self._take(envelope)
        consumer.close()

    def _take(self, envelope: dict) -> None:
        payload = envelope["payload"]
        if envelope["schema"] == TopicStatus.SCHEMA:
            self.status[payload["topic"]] = payload
            change = payload.get("replicasChange")
            if payload["generation"] > self.baseline.get(payload["topic"], payload["generation"]):
                self.observed_at.setdefault(payload["topic"], _ts(envelope["time"]))
            if change and change["state"] == "completed" and change["targetReplicas"] == self.target:
                self.completed_event_time.setdefault(payload["topic"], _ts(envelope["time"]))
        elif envelope["schema"] == ReplicasChangeRecord.SCHEMA and payload["targetReplicas"] == self.target:
            if payload["state"] == "pending" and not payload.get("batchId"):
                self.pending_at.setdefault(payload["topic"], _ts(payload["updatedAt"]))
            elif payload["state"] == "ongoing" and payload.get("sessionId"):
                self.submitted_at.setdefault(payload["topic"], _ts(payload["updatedAt"]))
                self.session_of[payload["topic"]] = payload["sessionId"]

    def count(self, names: list[str], predicate) -> int:
        with self.lock:
            return sum(1 for n in names if (s := self.status.get(n)) is not None and predicate(s))

    def generations(self, names: list[str]) -> dict[str, int]:
        with self.lock:
            return {n: self.status[n]["generation"] for n in names}


def _ts(text: str) -> float:
    return datetime.fromisoformat(text).timestamp()


def wait(what: str, predicate, timeout: float) -> float:
    start = time.monotonic()
    while not predicate():
        if time.monotonic() - start > timeout:
            raise TimeoutError(f"timed out waiting for {what}")
        time.sleep(0.1)
    return time.monotonic() - start


def previous_ends(tasks: dict[str, dict]) -> dict[str, float]:
    """Task id -> when the task started before it ended (seconds): the earliest it could start executing."""
    ordered = sorted(tasks.values(), key=lambda t: t["startMs"])
    return {t["id"]: (before["completedMs"] or before["startMs"]) / 1000 for before, t in zip(ordered, ordered[1:])}


def completed_at(rf: int):
    def check(status: dict) -> bool:
        change = status.get("replicasChange")
        return status.get("replicas") == rf and change is not None and change["state"] == "completed"
    return check


def run(topics: int, rates: list[int], dump: Path | None = None, kafka: bool = False,
        budget: dict[str, str] | None = None) -> dict:
    names = [f"bench-{i:05d}" for i in range(topics)]
    say = lambda m: print(m, file=sys.stderr, flush=True)  # noqa: E731
    # Only the services of the measured path: the load collector would also make the simulated partitions grow (its
    # reads advance the load model), and the data copy would then dominate the latencies.
    with LocalStack(Path(tempfile.mkdtemp(prefix="ballast-bench-")), env={**ENV, **(budget or {})}, kafka=kafka,
                    services=("topic-reconciler", "replicas-change")) as stack:
        stack.start(progress=lambda m: say(f"  {m}"))
        bus = stack.settings().bus
        tail = Tail(bus)
        sim = httpx.Client(base_url=stack.sim_url, timeout=30)

        def task_ids() -> set[str]:
            return {t["id"] for t in sim.get("/faults/tasks").json()["tasks"]}

        say(f"phase 1: creating {topics} topics")
        busio.publish(bus, TOPICS.specs, [TopicSpec(name=n, partitions=1, replicas=3) for n in names])
        create_s = wait("creation", lambda: tail.count(names, lambda s: s["ready"]) == topics, 900)
        created_generation = tail.generations(names)

        say(f"phase 2 (throughput): {topics} RF changes 3 -> 2 in one burst")
        before, served_before = task_ids(), sim.get("/faults/stats").json()["requestsServed"]
        start = time.time()
        busio.publish(bus, TOPICS.specs, [TopicSpec(name=n, partitions=1, replicas=2) for n in names])
        observed_s = wait("specs observed", lambda: tail.count(
            names, lambda s: s["generation"] > created_generation[s["topic"]]) == topics, 900)
        wait("burst completed", lambda: tail.count(names, completed_at(2)) == topics, 900)
        result = {
            "topics": topics, "create_s": create_s, "spec_events_per_s": topics / observed_s,
            "burst_total_s": time.time() - start, "burst_requests": len(task_ids() - before),
            "burst_served": sim.get("/faults/stats").json()["requestsServed"] - served_before,
            "paced": [],
        }
        producer, _ = busio.producer(bus)
        # Connected before the clock starts: a new producer's first message waits for its connection and producer
        # id, which would be counted against the first half second of specs.
        producer.list_topics(TOPICS.specs.name, timeout=10)
        time.sleep(1)
        rf = 2
        for rate in rates:
            rf = 5 - rf  # 2 -> 3 -> 2 ...
            say(f"phase 3 (latency): {topics} RF changes to {rf} paced at {rate}/s")
            paced = measure_paced(names, rate, rf, producer, tail, task_ids, sim, dump)
            result["paced"].append(paced)
            say(f"  spec -> submission p50 {paced['submit_p50']:.2f} s, p99 {paced['submit_p99']:.2f} s")
        tail.stop.set()
        tail.thread.join(5)
        return result


def measure_paced(names: list[str], rate: int, rf: int, producer, tail: Tail, task_ids, sim: httpx.Client,
                  dump: Path | None) -> dict[str, float]:
    tail.reset_latency(target=rf)
    before = task_ids()
    sent_at: dict[str, float] = {}
    start_paced = time.monotonic()
    for i, n in enumerate(names):
        if (delay := start_paced + i / rate - time.monotonic()) > 0:
            time.sleep(delay)
        sent_at[n] = time.time()
        producer.produce(TOPICS.specs.name, key=n.encode(), value=encode(TopicSpec(name=n, partitions=1, replicas=rf)))
        producer.poll(0)
    producer.flush(60)
    wait("paced changes completed", lambda: tail.count(names, completed_at(rf)) == len(names), 900)
    time.sleep(1)
    tasks = {t["id"]: t for t in sim.get("/faults/tasks").json()["tasks"] if t["id"] not in before}
    with tail.lock:
        session_of, pending_at, observed_at = dict(tail.session_of), dict(tail.pending_at), dict(tail.observed_at)
        recorded_at, status_at = dict(tail.submitted_at), dict(tail.completed_event_time)

    # Submission: Cruise Control has the request (its task's start); the change is recorded ongoing once the answer,
    # with the proposal Cruise Control computes first, is back.
    submitted = {n: tasks[s]["startMs"] / 1000 for n in names if (s := session_of.get(n)) in tasks}
    submit = [submitted[n] - sent_at[n] for n in names if n in submitted]
    recorded = [recorded_at[n] - sent_at[n] for n in names if n in recorded_at]
    to_pending = [pending_at[n] - sent_at[n] for n in names if n in pending_at]
    to_observed = [observed_at[n] - sent_at[n] for n in names if n in observed_at]
    # Cruise Control runs one execution at a time: a change submitted in task k could not go before task k-1
    # ended. Ballast's own share of spec -> submission is the rest.
    previous_end = previous_ends(tasks)
    idle = [tasks[t]["startMs"] / 1000 - end for t, end in previous_end.items()]
    own = [submitted[n] - sent_at[n] - max(0.0, previous_end.get(session_of[n], 0.0) - pending_at[n])
           for n in names if n in submitted and n in pending_at]
    status = [status_at[n] - tasks[s]["completedMs"] / 1000 for n in names
              if (s := session_of.get(n)) in tasks and tasks[s]["completedMs"] and n in status_at]
    if dump is not None:
        dump.with_suffix(f".{rate}.json").write_text(json.dumps({
            "sent": sent_at, "observed": observed_at, "pending": pending_at, "submitted": submitted,
            "recorded": recorded_at, "tasks": tasks}))
    return {
        "rate": rate, "requests": len(tasks), "submit_n": len(submit), "status_n": len(status),
        **quantiles("submit", submit), **quantiles("pending", to_pending), **quantiles("observed", to_observed),
        **quantiles("own", own), **quantiles("recorded", recorded), **quantiles("status", status),
        "idle_p50": percentile(idle, 50), "idle_max": max(idle, default=float("nan")),
    }


def quantiles(name: str, values: list[float]) -> dict[str, float]:
    return {f"{name}_p50": percentile(values, 50), f"{name}_p99": percentile(values, 99)}


def verdict(good: bool) -> str:
    return "met" if good else "**not met**"


def _paced_rows(r: dict) -> str:
    return "\n".join(
        f"| {p['rate']:,} | {p['submit_p50']:.2f} / {p['submit_p99']:.2f} s: {verdict(p['submit_p99'] <= 1)} "
        f"| {p['observed_p50']:.2f} / {p['observed_p99']:.2f} s | {p['pending_p50']:.2f} / {p['pending_p99']:.2f} s "
        f"| {p['idle_p50']:.2f} / {p['idle_max']:.2f} s | {p['own_p50']:.2f} / {p['own_p99']:.2f} s "
        f"| {p['recorded_p50']:.2f} / {p['recorded_p99']:.2f} s "
        f"| {p['status_p50']:.2f} / {p['status_p99']:.2f} s: {verdict(p['status_p99'] <= 2)} | {p['requests']} |"
        for p in r["paced"])


PACED_HEADER = ("| specs/s | spec -> submission | spec -> reconciler's status (first hop) | spec -> change recorded pending "
                "(both hops) | Cruise Control idle between executions (p50 / max) | spec -> submission less the wait "
                "for the previous execution | spec -> change recorded ongoing (answer back) | task completion -> "
                "status event | topic_configuration requests |\n| --- | --- | --- | --- | --- | --- | --- | --- | --- |")


def render(r: dict, command: str, relaxed: dict | None = None) -> str:
    n = int(r["topics"])
    rows = _paced_rows(r)
    relaxed_part = "" if relaxed is None else (
        "\nThe same phases in the same run on a second stack whose Cruise Control task budget is relaxed (its scanner "
        "every 0.05 s instead of 0.5 s, 100 active tasks, the replicas-change service's share 50 instead of 1): what "
        "the budget costs is the difference between the two tables. Its burst: "
        f"{relaxed['spec_events_per_s']:,.0f} spec events/s, {relaxed['burst_requests']:.0f} topic_configuration "
        f"requests, produced -> every change completed {relaxed['burst_total_s']:.1f} s.\n" + f"""
{PACED_HEADER}
{_paced_rows(relaxed)}
""")
    return f"""## Replication-factor changes through the local stack: {n:,} topics

Command: `{command}`

{n:,} topics (1 partition each) on the local stack (Tansu, topic reconciler, replicas-change service, simulated
Cruise Control; simulated proposal 0.1 s and execution at least 0.5 s per task, 1 MB partitions so that the simulated
data copy does not dominate; Ballast polling every 0.5 s; Cruise Control's task budget as the local stack sets it:
finished tasks found every 0.5 s, 5 active at most, the replicas-change service's share 1), all on this 2-core machine.

| measure | result | target |
| --- | --- | --- |
| burst of {n:,} RF changes: spec events processed per second (burst -> every spec observed in status) | {r['spec_events_per_s']:,.0f}/s | >= 2,000/s: {verdict(r['spec_events_per_s'] >= 2000)} |
| burst: topic_configuration requests for {n:,} changes / all Cruise Control requests | {r['burst_requests']:.0f} / {r['burst_served']:.0f} | |
| burst: produced -> every change completed | {r['burst_total_s']:.1f} s | |
| creating the {n:,} topics | {r['create_s']:.1f} s | |

Then {n:,} RF changes at a steady rate, once per rate (p50 / p99 over the {n:,} changes). Submission is the moment
Cruise Control has the request (its task's start). Targets: spec -> submission p99 <= 1 s, task completion -> status
event p99 <= 2 s.

{PACED_HEADER}
{rows}
{relaxed_part}
"""


def render_side_by_side(embedded: dict, real: dict, command: str) -> str:
    n = int(embedded["topics"])
    rows = [
        ("creating the topics", lambda r: f"{r['create_s']:.1f} s"),
        ("burst: spec events processed per second", lambda r: f"{r['spec_events_per_s']:,.0f}/s"),
        ("burst: topic_configuration requests / all Cruise Control requests",
         lambda r: f"{r['burst_requests']:.0f} / {r['burst_served']:.0f}"),
        ("burst: produced -> every change completed", lambda r: f"{r['burst_total_s']:.1f} s"),
    ]
    for index, paced in enumerate(embedded["paced"]):
        rate = paced["rate"]
        rows += [
            (f"{rate}/s: spec -> submission p50 / p99",
             lambda r, i=index: f"{r['paced'][i]['submit_p50']:.2f} / {r['paced'][i]['submit_p99']:.2f} s"),
            (f"{rate}/s: spec -> submission less the wait for the previous execution p50 / p99",
             lambda r, i=index: f"{r['paced'][i]['own_p50']:.2f} / {r['paced'][i]['own_p99']:.2f} s"),
            (f"{rate}/s: task completion -> status event p50 / p99",
             lambda r, i=index: f"{r['paced'][i]['status_p50']:.2f} / {r['paced'][i]['status_p99']:.2f} s"),
            (f"{rate}/s: topic_configuration requests", lambda r, i=index: f"{r['paced'][i]['requests']}"),
        ]
    table = "\n".join(f"| {label} | {cell(embedded)} | {cell(real)} |" for label, cell in rows)
    return f"""## Replication-factor changes: embedded stack and real Kafka side by side, {n:,} topics

Command: `{command}`

The same phases on both stacks in one run: {n:,} topics of 1 partition created at RF 3, a burst of {n:,} changes to
RF 2, then {n:,} changes at a steady rate (alternately to 3 and 2). Embedded: Tansu and the simulator's in-memory
cluster (each execution at least 0.5 s). Real Kafka: Kafka 4.3.1 (a controller and 4 brokers, 127.0.0.1) as bus and
managed cluster, the simulated Cruise Control executing each proposal as real partition reassignments (empty
partitions: the copy itself is short; completion is Kafka's). Topic reconciler and replicas-change service only;
Ballast polls Cruise Control every 0.5 s.

| measure | embedded | real Kafka |
| --- | --- | --- |
{table}

"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kafka", action="store_true",
                        help="run on the embedded stack and on the real local Kafka cluster, side by side")
    parser.add_argument("--topics", type=int, default=None, help="topics (default: 10000; 200 with --kafka)")
    parser.add_argument("--rates", default=None,
                        help="comma-separated specs per second, one latency phase each (default: 250,500,1000; "
                             "50 with --kafka)")
    parser.add_argument("--relaxed", action="store_true",
                        help="run the phases again with Cruise Control's task budget relaxed, shown beside")
    parser.add_argument("--write", type=Path, help="replace this benchmark's section in the given markdown file")
    parser.add_argument("--dump", type=Path,
                        help="write each paced change's timestamps here (JSON, one file per rate), for analysis")
    args = parser.parse_args()
    topics = args.topics or (200 if args.kafka else 10_000)
    rates_text = args.rates or ("50" if args.kafka else "250,500,1000")
    rates = [int(r) for r in rates_text.split(",")]
    command = (f"python -m bench.replicas_change{' --kafka' if args.kafka else ''} --topics {topics} --rates {rates_text}"
               + (" --relaxed" if args.relaxed else "")
               + (f" --write {args.write}" if args.write else ""))
    if args.kafka:
        embedded = run(topics, rates, args.dump)
        section = render_side_by_side(embedded, run(topics, rates, args.dump, kafka=True), command)
    else:
        section = render(run(topics, rates, args.dump), command,
                         relaxed=run(topics, rates, budget=RELAXED_BUDGET) if args.relaxed else None)
    print(section)
    if args.write:
        replace_section(args.write, section)


if __name__ == "__main__":
    main()
