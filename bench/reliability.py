"""Benchmark: hostile records on every topic Ballast's agents read, and what becomes of them.

    python -m bench.reliability [--records 10000] [--write BENCHMARKS.md]

Starts the local stack, sends ``--records`` invalid records to each topic an agent reads (binary values, text that
is not JSON, JSON that is not an envelope, unknown and misplaced schemas, loose numbers and configs, keys that are
not the event's or not UTF-8, tombstones, internal topic names, and a few 600 KB values), with a valid spec after
every 100 of them. Counted: records sent, dead letters received for them (matched by topic and offset), records
lost (neither), valid specs not converged, and crashes (a service process that exited or a health page that said
503). Then every service is killed (-9) and must come back healthy over the same topics.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from bench.markdown import replace_section
from events import TOPICS, TopicSpec, encode
from services.common import busio
from services.local.stack import LocalStack

SERVICES = ("topic-reconciler", "replicas-change", "rebalancer")
# Every topic an agent reads, with an event of another topic's kind (misplaced) and one of its own (made invalid).
READ_BY_AGENTS = {
    TOPICS.specs.name: "ballast.TopicSpec",
    TOPICS.replicas_commands.name: "ballast.ReplicasChangeCommand",
    TOPICS.replicas_state.name: "ballast.ReplicasChangeRecord",
    TOPICS.observed_brokers.name: "ballast.BrokerForgotten",
    TOPICS.load_aggregates.name: "ballast.LoadAggregate",
    TOPICS.placement_requests.name: "ballast.PlacementRequest",
    TOPICS.rebalance_requests.name: "ballast.RebalanceRequest",
    TOPICS.rebalance_actions.name: "ballast.RebalanceAction",
    TOPICS.scaling.name: "ballast.BrokerRemovalRequested",
}
OVERSIZED_BYTES = 600_000


def _envelope(schema: str, payload: object, version: object = 1) -> bytes:
    return json.dumps({"schema": schema, "version": version, "payload": payload}).encode()


def fuzz_record(topic: str, rng: random.Random, index: int) -> tuple[bytes | None, bytes | None]:
    """One record no agent may accept on ``topic``: (key, value)."""
    own = READ_BY_AGENTS[topic]
    name = f"fuzz-{index}"
    kinds: list[Callable[[], tuple[bytes | None, bytes | None]]] = [
        lambda: (name.encode(), rng.randbytes(rng.randint(1, 300))),
        lambda: (name.encode(), b"{not json " + str(index).encode()),
        lambda: (name.encode(), json.dumps(rng.choice([[1, 2], "text", 3, None, True])).encode()),
        lambda: (name.encode(), _envelope("ballast.NoSuchEvent", {})),
        lambda: (name.encode(), _envelope("ballast.DeadLetter" if own != "ballast.DeadLetter" else "ballast.TopicSpec",
                                          {"name": name})),
        lambda: (name.encode(), _envelope(own, {"name": name, "partitions": True, "replicas": "3", "topic": 7,
                                                "brokers": ["x"], "id": True})),
        lambda: (name.encode(), _envelope(own, {"name": name, "partitions": 1, "replicas": 1,
                                                "config": {"a": rng.choice([None, {"x": 1}, [1], True])}})),
        lambda: (name.encode(), _envelope(own, {}, version=rng.choice([True, "1", 0, 2]))),
        lambda: (b"\xff\xfe" + rng.randbytes(4), _envelope("ballast.TopicSpec", {"name": name, "partitions": 1,
                                                                                 "replicas": 1})),
        lambda: (name.encode(), None),
        lambda: (rng.choice([b"__consumer_offsets", TOPICS.status.name.encode()]),
                 _envelope("ballast.TopicSpecDeleted", {"name": "__consumer_offsets"})),
    ]
    if index % 1000 == 999:
        return name.encode(), b'{"schema": "' + b"x" * OVERSIZED_BYTES + b'"}'
    key, value = rng.choice(kinds)()
    if topic == TOPICS.specs.name and value is not None and b"TopicSpecDeleted" in value:
        key = b"__consumer_offsets"  # on the specs topic: a valid envelope for a name Ballast never manages
    return key, value


@dataclass
class Outcome:
    sent: dict[str, int] = field(default_factory=dict)
    dead_lettered: dict[str, int] = field(default_factory=dict)
    valid_sent: int = 0
    valid_converged: int = 0
    crashes: list[str] = field(default_factory=list)
    restarts_healthy: int = 0
    restart_s: list[float] = field(default_factory=list)
    drained_s: float = 0.0  # first record sent -> last dead letter counted
    seconds: float = 0.0

    @property
    def lost(self) -> int:
        return sum(self.sent.values()) - sum(self.dead_lettered.values())


def _health(stack: LocalStack, outcome: Outcome) -> None:
    for service in SERVICES:
        process = stack.processes.get(service)
        if process is not None and process.poll() is not None:
            outcome.crashes.append(f"{service} exited with code {process.returncode}")
            continue
        try:
            code = httpx.get(stack.health_url(service), timeout=5).status_code
        except httpx.HTTPError as exc:
            outcome.crashes.append(f"{service} health unreachable: {exc}")
            continue
        if code != 200:
            outcome.crashes.append(f"{service} health {code}")


def run(stack: LocalStack, records: int, *, seed: int = 12, progress: Callable[[str], None] = lambda _m: None,
        restart: bool = True, timeout_s: float = 600.0) -> Outcome:
    rng = random.Random(seed)
    bus = stack.settings().bus
    outcome = Outcome()
    started = time.monotonic()
    hostile: set[tuple[str, int, int]] = set()  # where each hostile record landed
    prefix = f"rel-{rng.randrange(1 << 30):x}"
    valid: list[str] = []
    for topic in READ_BY_AGENTS:
        items = []
        goods = []
        for index in range(records):
            key, value = fuzz_record(topic, rng, index)
            items.append((topic, key, value, None))
            if topic == TOPICS.specs.name and index % 100 == 99:
                good = TopicSpec(name=f"{prefix}-{index}", partitions=1, replicas=2)
                valid.append(good.name)
                goods.append((topic, good.key.encode(), encode(good), None))
        landed: list[tuple[str, int, int]] = []
        busio.produce(bus, items, delivered=landed)
        hostile.update(landed)
        busio.produce(bus, goods)
        outcome.sent[topic] = records
        progress(f"sent {records} hostile records to {topic}")
        _health(stack, outcome)
    outcome.valid_sent = len(valid)
    deadline = time.monotonic() + timeout_s
    counted = _count_dead_letters(bus, hostile, deadline)
    outcome.dead_lettered = counted
    outcome.drained_s = time.monotonic() - started
    progress(f"dead letters: {sum(counted.values())} of {sum(outcome.sent.values())}")
    while True:
        statuses = busio.latest(bus, TOPICS.status)
        outcome.valid_converged = sum(1 for n in valid if getattr(statuses.get(n), "ready", False))
        if outcome.valid_converged == len(valid) or time.monotonic() >= deadline:
            break
        time.sleep(1)
    _health(stack, outcome)
    if restart:
        for service in SERVICES:
            try:
                begun = time.monotonic()
                stack.restart_service(service)
                outcome.restart_s.append(time.monotonic() - begun)
                outcome.restarts_healthy += 1
            except (RuntimeError, TimeoutError) as exc:
                outcome.crashes.append(f"{service} did not come back: {str(exc)[:200]}")
        progress("every service killed and restarted")
    outcome.seconds = time.monotonic() - started
    return outcome


def _count_dead_letters(bus, hostile: set[tuple[str, int, int]], deadline: float) -> dict[str, int]:
    """Dead letters of the hostile records (matched by topic, partition and offset), one per record."""
    seen: set[tuple[str, int, int]] = set()
    counts: dict[str, int] = {}
    for letter in busio.events(bus, TOPICS.dead_letters, follow=True, deadline=deadline):
        where = (letter.source_topic, letter.partition or 0, letter.offset if letter.offset is not None else -1)
        if where in hostile and where not in seen:
            seen.add(where)
            counts[letter.source_topic] = counts.get(letter.source_topic, 0) + 1
        if len(seen) >= len(hostile):
            break
    return counts


def render(outcome: Outcome, records: int, command: str) -> str:
    rows = [f"| `{topic}` | {outcome.sent[topic]:,} | {outcome.dead_lettered.get(topic, 0):,} | "
            f"{outcome.sent[topic] - outcome.dead_lettered.get(topic, 0):,} |" for topic in outcome.sent]
    return "\n".join([
        "## Reliability: hostile input on every topic an agent reads",
        "",
        f"`{command}`",
        "",
        f"{records:,} invalid records per topic (binary, not JSON, not an envelope, unknown or misplaced schemas, "
        "loose "
        "numbers and configs, keys that are not the event's or not UTF-8, tombstones, internal topic names, one "
        f"{OVERSIZED_BYTES // 1000} KB value in 1,000), a valid spec after every 100 on the specs topic.",
        "",
        "| topic | sent | dead-lettered | lost |",
        "| --- | --- | --- | --- |",
        *rows,
        "",
        f"- total: {sum(outcome.sent.values()):,} sent, {sum(outcome.dead_lettered.values()):,} dead-lettered, "
        f"**{outcome.lost:,} lost**; valid specs among them: {outcome.valid_converged} of {outcome.valid_sent} ready",
        f"- crashes: **{len(outcome.crashes)}**" + (f" ({'; '.join(outcome.crashes)})" if outcome.crashes else ""),
        f"- dead-lettering: all {sum(outcome.sent.values()):,} within {outcome.drained_s:.0f} s of the first send "
        f"({sum(outcome.dead_lettered.values()) / max(outcome.drained_s, 1e-9):,.0f} records/s, sending included)",
        f"- kill -9 and restart of every service over these topics: {outcome.restarts_healthy} of {len(SERVICES)} "
        "healthy again (" + ", ".join(f"{s:.1f} s" for s in outcome.restart_s) + " from kill to health 200)",
        f"- {outcome.seconds:.0f} s in all on this 2-core machine",
        "",
    ])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=10_000, help="hostile records per topic")
    parser.add_argument("--write", type=Path, help="replace this benchmark's section in the given markdown file")
    args = parser.parse_args(argv)
    say = lambda m: print(m, file=sys.stderr, flush=True)  # noqa: E731
    with tempfile.TemporaryDirectory() as run_dir, LocalStack(Path(run_dir), env={"BALLAST_LOG_LEVEL": "warning"}
                                                              ) as stack:
        stack.start(say)
        outcome = run(stack, args.records, progress=say)
    command = f"python -m bench.reliability --records {args.records}" + (f" --write {args.write}" if args.write else "")
    section = render(outcome, args.records, command)
    print(section)
    if args.write:
        replace_section(args.write, section)


if __name__ == "__main__":
    main()
