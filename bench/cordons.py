"""Benchmark: where Kafka's placer and Ballast's two placers put new partitions on a cluster with cordons (issue 55),
side by side on one real cluster in one run.

    python -m bench.cordons [--partitions 1000] [--write BENCHMARKS.md]

The real local cluster (Kafka 4.3.1, 6 brokers in /dc1/r1, /dc1/r2, /dc1/r3, /dc2/r1, /dc2/r2, /dc2/r3, two log
directories each): broker 4 has every directory cordoned and broker 1 one of its two (``cordoned.log.dirs``, as
`ballast brokers cordon` sets it). Then one topic of N partitions at RF 3 each: by Kafka's own placer (CreateTopics
without an assignment), and by Ballast's topic reconciler with the striped and with the multi-level placer (explicit assignments, and the
directory chosen for each replica on broker 1 sent with the creation). Counted from Kafka's metadata and
DescribeLogDirs once every replica is in a directory: replicas on the cordoned broker, replicas in the cordoned
directory, replicas and leaders per uncordoned broker.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from bench.markdown import replace_section
from events import TOPICS, TopicSpec
from services.adapters.admin import CORDONED_LOG_DIRS
from services.adapters.admin.kafka import KafkaClusterAdmin
from services.common.outbox import MemoryOutbox
from services.common.settings import PlacementSettings, Settings
from services.local.kafka_cluster import LocalKafka
from services.topic_reconciler.app import TopicReconciler
from tests.unit.records import record

FULL, PARTLY = 4, 1
REPLICAS = 3
RACKS = ("/dc1/r1", "/dc1/r2", "/dc1/r3", "/dc2/r1", "/dc2/r2", "/dc2/r3")


@dataclass
class Placed:
    placer: str
    partitions: int
    on_cordoned_broker: int
    in_cordoned_dir: int
    on_partly_cordoned_broker: int
    replicas_per_broker: dict[int, int]
    leaders_per_broker: dict[int, int]


async def _described(admin: KafkaClusterAdmin, topic: str, partitions: int, timeout_s: float = 300.0
                     ) -> list[tuple[tuple[int, ...], dict[int, str | None]]]:
    """Each partition's replicas and each replica's directory, once every replica is in one."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        found = (await admin.describe_topics([topic])).get(topic)
        if found is not None and len(found.partitions) == partitions:
            rows = [(p.replicas, {r.broker: r.log_dir for r in p.replica_info}) for p in found.partitions]
            if all(None not in dirs.values() and len(dirs) == len(replicas) for replicas, dirs in rows):
                return rows
        await asyncio.sleep(1.0)
    raise TimeoutError(f"{topic}: not every replica in a directory after {timeout_s:g} s")


def _count(placer: str, rows: list[tuple[tuple[int, ...], dict[int, str | None]]], cordoned_dir: str) -> Placed:
    replicas = Counter(b for r, _ in rows for b in r)
    leaders = Counter(r[0] for r, _ in rows if r)
    return Placed(placer, len(rows), replicas[FULL],
                  sum(1 for _, dirs in rows if dirs.get(PARTLY) == cordoned_dir), replicas[PARTLY],
                  dict(sorted(replicas.items())), dict(sorted(leaders.items())))


async def _ballast(admin: KafkaClusterAdmin, topic: str, partitions: int, placer: str, data_dir: Path) -> None:
    service = TopicReconciler(Settings(data_dir=data_dir, placement=PlacementSettings(placer=placer)), admin=admin,
                              outbox=MemoryOutbox())
    await service.intake.start()
    await service.intake.handover._taking  # type: ignore[union-attr,misc]  # the first load
    spec = TopicSpec(name=topic, partitions=partitions, replicas=REPLICAS)
    await service.intake.on_spec_events([record(TOPICS.specs, spec, 0)])


async def measure(kafka: LocalKafka, partitions: int, work: Path, progress: Callable[[str], None]) -> list[Placed]:
    admin = KafkaClusterAdmin({"bootstrap_servers": kafka.bootstrap_servers}, timeout_s=60)
    try:
        dirs = sorted(d.path for d in await admin.describe_log_dirs([PARTLY], replicas=False))
        cordoned_dir = dirs[1]
        await admin.alter_broker_configs(FULL, {CORDONED_LOG_DIRS: "*"})
        await admin.alter_broker_configs(PARTLY, {CORDONED_LOG_DIRS: cordoned_dir})
        results = []
        progress(f"... Kafka's placer: {partitions} partitions")
        await admin.create_topic("kafka-placed", partitions, REPLICAS, {})
        results.append(_count("Kafka's (CreateTopics, no assignment)",
                              await _described(admin, "kafka-placed", partitions), cordoned_dir))
        for placer in ("striped", "multi-level"):
            progress(f"... Ballast's {placer}: {partitions} partitions")
            topic = f"ballast-{placer}"
            await _ballast(admin, topic, partitions, placer, work / placer)
            results.append(_count(f"Ballast's {placer}", await _described(admin, topic, partitions), cordoned_dir))
        return results
    finally:
        await admin.aclose()


def render(results: list[Placed], partitions: int, command: str) -> str:
    lines = [
        "## Cordons: where new partitions go (issue 55)",
        "",
        f"Command: `{command}`",
        "",
        f"One real cluster (Kafka 4.3.1, {len(RACKS)} brokers, three racks in each of two data centres, two log "
        "directories each) in one run: broker "
        f"{FULL} has every log directory cordoned, broker {PARTLY} one of its two. Each placer places one topic of "
        f"{partitions:,} partitions at RF {REPLICAS}; counted from Kafka's metadata and DescribeLogDirs once every "
        "replica is in a directory.",
        "",
        f"| placer | replicas on cordoned broker {FULL} | replicas in broker {PARTLY}'s cordoned directory | "
        f"replicas on broker {PARTLY} | replicas per broker | leaders per broker |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for r in results:
        per_broker = ", ".join(f"{b}: {n:,}" for b, n in r.replicas_per_broker.items())
        leaders = ", ".join(f"{b}: {n:,}" for b, n in r.leaders_per_broker.items())
        lines.append(f"| {r.placer} | {r.on_cordoned_broker:,} | {r.in_cordoned_dir:,} | "
                     f"{r.on_partly_cordoned_broker:,} | {per_broker} | {leaders} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None, progress: Callable[[str], None] = print) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--partitions", type=int, default=1000, help="partitions of each placer's topic")
    parser.add_argument("--write", type=Path, help="replace this benchmark's section in the given markdown file")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="ballast-bench-cordons-") as tmp:
        progress("... starting the real cluster")
        kafka = LocalKafka(Path(tmp), racks=RACKS, heap_mb=512).start()
        try:
            results = asyncio.run(measure(kafka, args.partitions, Path(tmp), progress))
        finally:
            kafka.stop()
    command = "python -m bench.cordons" + (f" --partitions {args.partitions}" if args.partitions != 1000 else "") \
        + (f" --write {args.write}" if args.write else "")
    section = render(results, args.partitions, command)
    print(section)
    if args.write:
        replace_section(args.write, section)


if __name__ == "__main__":
    main()
