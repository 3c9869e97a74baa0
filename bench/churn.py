"""Benchmark: replication-factor changes through failures of Ballast and of Cruise Control.

    python -m bench.churn [--changes 300] [--write BENCHMARKS.md]

One local stack with the test suite's short retry settings. Each scenario flips ``--changes`` topics' RF (2 <-> 3)
and, while the changes are in flight, breaks something: every service killed (-9) in turn; one, two and three
instances of each service with a rolling restart (a new instance first, then SIGTERM to the old ones); Cruise Control
stopped for 5 s, restarted, answering 500 to twenty requests, answering 2 s late. Counted per scenario: changes
converged (status ready at the target RF), the most Cruise Control sessions any one change went through, and the
time to converge.
"""

from __future__ import annotations

import argparse
import signal
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from bench.markdown import replace_section
from services.local.stack import LocalStack
from tests.integration.conftest import TEST_ENV
from tests.integration.harness import Ballast, change_sessions, spec

SERVICES = ("topic-reconciler", "replicas-change", "rebalancer")


@dataclass
class Row:
    scenario: str
    changes: int
    converged: int
    max_sessions: int
    seconds: float


def _flip(ballast: Ballast, topics: list[str], rf: int, disturb: Callable[[], None], scenario: str,
          timeout_s: float = 240) -> Row:
    before = {t: ballast.watcher.latest[t].generation for t in topics}
    started = time.monotonic()
    ballast.apply(*[spec(t, rf, partitions=1) for t in topics])
    disturb()
    deadline = time.monotonic() + timeout_s
    for topic in topics:
        try:
            ballast.watcher.wait_rf(topic, rf, timeout=max(0.1, deadline - time.monotonic()))
        except AssertionError:
            break
    seconds = time.monotonic() - started
    converged = sum(1 for t in topics if (s := ballast.watcher.latest.get(t)) is not None and s.ready
                    and s.replicas == rf and (s.replicas_change is None or s.replicas_change.state == "completed"))
    sessions = [len(found) for found in change_sessions(ballast.settings, topics, after_generation=before).values()]
    return Row(scenario, len(topics), converged, max(sessions, default=0), seconds)


def _live(stack: LocalStack, service: str) -> list[str]:
    return [n for n, p in stack.processes.items() if n.split("#")[0] == service and p.poll() is None]


def run(changes: int, progress: Callable[[str], None]) -> list[Row]:
    rows: list[Row] = []
    with tempfile.TemporaryDirectory() as run_dir, LocalStack(Path(run_dir), env={
            **TEST_ENV, "BALLAST_LOG_LEVEL": "warning"}, services=SERVICES) as stack:
        stack.start(progress)
        ballast = Ballast(stack)
        topics = [f"churn-{i}" for i in range(changes)]
        ballast.apply(*[spec(t, 2, partitions=1) for t in topics])
        for topic in topics:
            ballast.watcher.wait_rf(topic, 2, timeout=120)
        rf = 3

        def next_rf() -> int:
            nonlocal rf
            value, rf = rf, 5 - rf
            return value

        def kill_each() -> None:
            for service in SERVICES:
                for name in _live(stack, service):
                    stack.restart_service(name)

        rows.append(_flip(ballast, topics, next_rf(), kill_each, "kill -9 of every service in turn"))
        progress(f"{rows[-1]}")
        index = 100
        for instances in (1, 2, 3):
            for service in SERVICES:
                while len(_live(stack, service)) < instances:
                    index += 1
                    stack.start_instance(service, index)

            def rolling() -> None:
                nonlocal index
                for service in SERVICES:
                    old = _live(stack, service)
                    index += 1
                    stack.start_instance(service, index)
                    for name in old:
                        stack.kill(name, signal.SIGTERM)

            rows.append(_flip(ballast, topics, next_rf(), rolling,
                              f"{instances} instance(s) of each service, rolling restart"))
            progress(f"{rows[-1]}")
        faults: list[tuple[str, Callable[[], None]]] = [
            ("Cruise Control stopped for 5 s", lambda: (ballast.fault("cruise-control/stop"), time.sleep(5),
                                                        ballast.fault("cruise-control/start"))),
            ("Cruise Control restarted", lambda: ballast.fault("cruise-control/restart", {"downSeconds": 1})),
            ("Cruise Control answers 500 to 20 requests",
             lambda: ballast.fault("errors", {"endpoint": "*", "status": 500, "message": "storm", "count": 20})),
            ("Cruise Control answers 2 s late", lambda: ballast.fault("latency", {"endpoint": "*", "seconds": 2})),
        ]
        for scenario, disturb in faults:
            rows.append(_flip(ballast, topics, next_rf(), disturb, scenario))
            ballast.fault("reset")
            progress(f"{rows[-1]}")
        ballast.close()
    return rows


def render(rows: list[Row], command: str) -> str:
    return "\n".join([
        "## Reliability: changes through failures of Ballast and Cruise Control",
        "",
        f"`{command}`",
        "",
        "Each row flips every topic's RF (2 <-> 3) and breaks something while the changes are in flight.",
        "",
        "| scenario | changes | converged | most sessions for one change | seconds to converge |",
        "| --- | --- | --- | --- | --- |",
        *[f"| {r.scenario} | {r.changes} | {r.converged} | {r.max_sessions} | {r.seconds:.0f} |" for r in rows],
        "",
        "One session per change means no change was sent to Cruise Control twice. One run on this 2-core machine.",
        "",
    ])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--changes", type=int, default=300)
    parser.add_argument("--write", type=Path, help="replace this benchmark's section in the given markdown file")
    args = parser.parse_args(argv)
    rows = run(args.changes, lambda m: print(m, file=sys.stderr, flush=True))
    command = f"python -m bench.churn --changes {args.changes}" + (f" --write {args.write}" if args.write else "")
    section = render(rows, command)
    print(section)
    if args.write:
        replace_section(args.write, section)


if __name__ == "__main__":
    main()
