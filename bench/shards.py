"""Benchmark: the topic reconciler scaled out, its shards on one process and on two, side by side in one run on one
embedded stack (issue 52, goal 3).

    python -m bench.shards [--topics 5000] [--rounds 2] [--write BENCHMARKS.md]

The bus topics have two partitions, so the reconciler's keys fall in two shards (``services.common.shards``). Each
round creates N fresh topics (3 partitions, RF 3) through Ballast with one instance holding both shards, then with a
second instance started (``LocalStack.start_instance``) so that each holds one, then stops the second again; rounds
alternate so that the cluster, which grows by 2N topics a round, is as large for each side. Timed from the specs
published (one batch) until every status says ready, as ``bench.creation`` does. The CPU each process used during the
run (user + system, from /proc) says where the time goes: the reconcilers' share is what more processes can split;
the rest (the bus, the simulator, this benchmark's own reading) they cannot.
"""

from __future__ import annotations

import argparse
import os
import signal
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from bench.creation import ENV, Statuses, settle, through_ballast
from bench.kafka_cluster import cpu_s
from bench.markdown import replace_section
from services.local.stack import LocalStack

SERVICE = "topic-reconciler"
SECOND = f"{SERVICE}#1"


@dataclass
class Run:
    instances: int
    topics: int
    seconds: float
    existing: int  # topics on the cluster before the run
    reconciler_cpu_s: float  # summed over the instances
    other_cpu_s: float  # the other processes of the stack (bus, simulator, services)

    @property
    def per_second(self) -> float:
        return self.topics / self.seconds


def stack_cpu(stack: LocalStack) -> dict[str, float]:
    return {name: cpu_s(process.pid) for name, process in stack.processes.items() if process.poll() is None}


def shards_held(stack: LocalStack) -> dict[str, list[int]]:
    held = {}
    for name, process in stack.processes.items():
        if name.split("#")[0] == SERVICE and process.poll() is None:
            try:
                answer = stack.http.get(stack.health_url(name), timeout=5).json()
            except Exception:  # noqa: BLE001 - a process starting or stopping: not holding anything yet
                continue
            if answer.get("role") == "active" and answer.get("shards"):
                held[name] = answer["shards"]
    return held


def settled(stack: LocalStack, instances: int, timeout_s: float = 120.0) -> None:
    """Until ``instances`` instances act, the two shards split among them."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        held = shards_held(stack)
        if len(held) == instances and sorted(s for shards in held.values() for s in shards) == [0, 1]:
            return
        time.sleep(0.2)
    raise TimeoutError(f"shards not settled on {instances} instance(s): {shards_held(stack)}")


def one_run(stack: LocalStack, statuses: Statuses, names: list[str], instances: int, existing: int,
            timeout_s: float) -> Run:
    before = stack_cpu(stack)
    seconds = through_ballast(stack, statuses, names, timeout_s)
    after = stack_cpu(stack)
    used = {name: after[name] - before.get(name, 0.0) for name in after}
    reconciler = sum(v for name, v in used.items() if name.split("#")[0] == SERVICE)
    return Run(instances, len(names), seconds, existing, reconciler, sum(used.values()) - reconciler)


def run(topics: int, rounds: int, timeout_s: float, progress=print) -> list[Run]:  # noqa: ANN001
    results: list[Run] = []
    with tempfile.TemporaryDirectory(prefix="ballast-bench-shards-") as tmp:
        stack = LocalStack(Path(tmp), env={**ENV, "BALLAST_BUS__TOPIC_PARTITIONS": "2"}, services=(SERVICE,))
        try:
            stack.start()
            settled(stack, 1)
            statuses = Statuses(stack.settings().bus)
            try:
                warm = [f"bench-warm-{i}" for i in range(10)]
                through_ballast(stack, statuses, warm, timeout_s)
                existing = len(warm)
                for round_index in range(rounds):
                    for instances in (1, 2) if round_index % 2 == 0 else (2, 1):
                        running = SECOND in stack.processes and stack.processes[SECOND].poll() is None
                        if instances == 2 and not running:
                            stack.start_instance(SERVICE, 1)
                        elif instances == 1 and running:
                            stack.kill(SECOND, signal.SIGTERM)
                            stack.processes[SECOND].wait(timeout=60)
                        settled(stack, instances)
                        names = [f"bench-{round_index}-{instances}-{i}" for i in range(topics)]
                        progress(f"... round {round_index + 1}, {instances} instance(s): {topics} topics")
                        results.append(one_run(stack, statuses, names, instances, existing, timeout_s))
                        settle(stack, names)
                        existing += topics
                        last = results[-1]
                        progress(f"    {last.seconds:.1f} s ({last.per_second:,.0f} topics/s), reconciler CPU "
                                 f"{last.reconciler_cpu_s:.1f} s, the rest {last.other_cpu_s:.1f} s")
            finally:
                statuses.close()
        finally:
            stack.stop()
    return results


def section(results: list[Run], command: str) -> str:
    rows = "\n".join(
        f"| {r.instances} | {r.existing:,} | {r.topics:,} | {r.seconds:.1f} s | {r.per_second:,.0f} | "
        f"{r.reconciler_cpu_s:.1f} s | {r.other_cpu_s:.1f} s |" for r in results)
    one = [r for r in results if r.instances == 1]
    two = [r for r in results if r.instances == 2]
    mean = lambda runs: sum(r.seconds for r in runs) / len(runs)  # noqa: E731
    summary = ""
    if one and two:
        cpu_share = sum(r.reconciler_cpu_s for r in one) / sum(r.reconciler_cpu_s + r.other_cpu_s for r in one)
        reconciling = sum(r.reconciler_cpu_s for r in one) / len(one)
        rest = sum(r.other_cpu_s for r in one) / len(one)
        model = ", ".join(f"{k} instances on {k} cores {reconciling / k + rest:.1f} s" for k in (2, 4, 8))
        summary = (f"\n\nMean time: {mean(one):.1f} s with one instance, {mean(two):.1f} s with two "
                   f"({mean(one) / mean(two):.2f}x the throughput). With one instance the reconciler used "
                   f"{cpu_share:.0%} of the stack's CPU during the runs: the share more processes (and cores) can "
                   "split; the rest is the bus, the simulator and this benchmark's own reading of the statuses, which "
                   f"a second instance cannot take. This machine has {os.cpu_count()} cores, which every process "
                   "shares. The model for more cores, from the one-instance runs (the reconciler's CPU split evenly, "
                   f"the rest as it was, every process on a core of its own): {model} (the shards, and so the "
                   "instances that can act at once, are the bus topics' partitions: "
                   "`BALLAST_BUS__TOPIC_PARTITIONS`). What one shard holds in memory per 10,000 topics: the \"Many "
                   "managed topics\" section.")
    return (f"## Scale out: the topic reconciler's shards on one and two processes (embedded stack)\n\n"
            f"`{command}`\n\n"
            "The bus topics in two partitions, so the reconciler's keys fall in two shards. Each round creates fresh "
            "topics of 3 partitions at RF 3 with one instance holding both shards, then with a second instance "
            "holding one of them (rounds alternate the order, as the cluster grows). Timed from the specs published "
            "in one batch until every status says ready; CPU (user + system) of the reconciler instances and of the "
            "rest of the stack during each run, from /proc.\n\n"
            "| instances | topics before | topics created | time | topics/s | reconciler CPU | rest of the stack CPU |\n"
            "| --- | --- | --- | --- | --- | --- | --- |\n" + rows + summary + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--topics", type=int, default=5000, help="topics each run creates")
    parser.add_argument("--rounds", type=int, default=2, help="rounds (each: one instance, and two)")
    parser.add_argument("--timeout", type=float, default=1800.0, help="seconds each run has")
    parser.add_argument("--write", type=Path, help="replace this benchmark's section of BENCHMARKS.md")
    args = parser.parse_args()
    results = run(args.topics, args.rounds, args.timeout)
    command = "python -m bench.shards" + (f" --topics {args.topics}" if args.topics != 5000 else "") + \
        (f" --rounds {args.rounds}" if args.rounds != 2 else "") + (f" --write {args.write}" if args.write else "")
    text = section(results, command)
    print(text)
    if args.write:
        replace_section(args.write, text)


if __name__ == "__main__":
    main()
