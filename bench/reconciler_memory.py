"""Benchmark: what the topic reconciler holds in memory per managed topic, and where (issue 52, goal 3).

    python -m bench.reconciler_memory [--topics 5000]

The reconciler's shell in this process (no broker: specs handed to its handler as the agent hands them, the bus an
in-memory outbox, the cluster an in-process simulator), given N specs (1 partition, RF 3) until every topic is
ready; then a census of what it holds: the objects reachable from each part (the topics' memory, the placement
view and ledger, the rest), counted once each, in bytes per topic. The published records the in-memory outbox
keeps, the simulator and the admin client are left out: the running service holds none of them.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import sys
import tempfile
from collections.abc import Iterable
from pathlib import Path
from types import BuiltinFunctionType, FunctionType, MethodType, ModuleType
from typing import Any

from events import TOPICS, TopicSpec, encode
from services.cluster_sim.app import Simulator
from services.adapters.admin.simulator import SimulatorClusterAdmin
from services.common.outbox import MemoryOutbox
from services.common.settings import Settings, SimulatorSettings
from services.local.broker import free_port
from services.topic_reconciler.app import TopicReconciler
from tests.unit.records import Message, Record

CHUNK = 1000
SHARED = (type, ModuleType, FunctionType, BuiltinFunctionType, MethodType)


def deep_size(roots: Iterable[Any], exclude: set[int]) -> int:
    """Bytes of every object reachable from ``roots`` and not already counted (``exclude`` grows with them)."""
    total, stack = 0, list(roots)
    while stack:
        obj = stack.pop()
        if id(obj) in exclude or isinstance(obj, SHARED):
            continue
        exclude.add(id(obj))
        total += sys.getsizeof(obj)
        stack.extend(gc.get_referents(obj))
    return total


async def census(size: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="ballast-census-") as tmp:
        simulator = Simulator(SimulatorSettings(cruise_control_port=free_port(), admin_port=free_port(),
                                                brokers=["1:/dc1/r1", "2:/dc1/r2", "3:/dc2/r1", "4:/dc2/r2"]))
        await simulator.start()
        admin = SimulatorClusterAdmin(f"http://127.0.0.1:{simulator.settings.admin_port}")
        outbox = MemoryOutbox()
        service = TopicReconciler(Settings(data_dir=Path(tmp)), admin=admin, outbox=outbox)
        try:
            await service.intake.start()
            await service.intake.handover._taking  # type: ignore[union-attr,misc]  # the first load
            for start in range(0, size, CHUNK):
                records = [Record(f"scale-{i:06d}".encode(),
                                  encode(TopicSpec(name=f"scale-{i:06d}", partitions=1, replicas=3)),
                                  Message(TOPICS.specs.name, i)) for i in range(start, min(size, start + CHUNK))]
                await service.intake.on_spec_events(records)
            reconciler = service.reconciler
            ready = sum(1 for t in reconciler.memory.topics.values() if t.status is not None and t.status.ready)
            assert ready == size, f"{ready} of {size} topics ready"
            gc.collect()
            # The parts the service shares with everything else are counted as seen, not as the reconciler's.
            seen = {id(o) for o in (outbox, admin, simulator, service.app, asyncio.get_running_loop())}
            topics = reconciler.memory.topics
            parts = {"topic memory (keys and records)": deep_size([topics], seen)}
            for field in ("spec", "status", "actual", "change", "outcome", "status_inputs", "placeholders",
                          "drift", "differing_count", "refusal", "correlation", "owner"):
                parts[f"  of which {field}"] = 0
            counted: set[int] = set()
            for topic in topics.values():
                for field in ("spec", "status", "actual", "change", "outcome", "status_inputs", "placeholders",
                              "drift", "differing_count", "refusal", "correlation", "owner"):
                    parts[f"  of which {field}"] += deep_size([getattr(topic, field)], counted)
            parts["placement view"] = deep_size([reconciler.placing.view], seen)
            parts["placement ledger"] = deep_size([reconciler.placing.ledger], seen)
            parts["intake and the rest of the shell"] = deep_size([service], seen)
            return {part: size_ / size for part, size_ in parts.items()}
        finally:
            await admin.aclose()
            await simulator.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--topics", type=int, default=5000)
    args = parser.parse_args()
    per_topic = asyncio.run(census(args.topics))
    print(f"bytes per managed topic ({args.topics:,} topics, 1 partition at RF 3):")
    for part, value in per_topic.items():
        print(f"  {part}: {value:,.0f}")
    total = sum(v for k, v in per_topic.items() if not k.startswith("  "))
    print(f"  total: {total:,.0f} ({total * 10_000 / 2**20:.0f} MiB per 10,000 topics)")


if __name__ == "__main__":
    sys.exit(main())
