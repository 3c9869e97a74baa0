"""Benchmark: what a topic reconciler's restart takes in memory: at its peak, what it keeps, and what the process
keeps of it (issue 52, goal 4).

    python -m bench.restart_memory [--topics 30000]

An embedded stack with the topic reconciler only creates N topics (1 partition, RF 3); the service is then killed
and a topic reconciler started in this process over the same bus and cluster (its records published nowhere: the
rebuild is measured, not the statuses it would send), with Python's allocations traced (tracemalloc, which slows it)
from just before its start until its first resync is done. Printed: the allocations made by the restart at their peak
and still held, the objects it holds by type, and this process's resident memory before and after.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import sys
import tempfile
import time
import tracemalloc
from collections import Counter
from pathlib import Path
from typing import Any

from bench.creation import Statuses
from bench.scale import publish, rss_mb, until_ready
from events import TopicSpec
from services.common.busio import read_compacted_async
from services.common.garbage_collection import tune_garbage_collection
from services.common.settings import BusSettings, Settings
from services.local.stack import LocalStack
from services.topic_reconciler.app import TopicReconciler


class BusReadsOnly:
    """The outbox of the restarted reconciler: the compacted topics read from the bus, nothing published."""

    def __init__(self, bus: BusSettings) -> None:
        self.bus = bus

    async def read_compacted(self, topic: Any, *, keys: Any = None) -> Any:
        return await read_compacted_async(self.bus, topic, keys=keys)

    async def publish(self, topic: Any, event: Any, **_: Any) -> asyncio.Future[None]:
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        done.set_result(None)
        return done


def census() -> Counter[str]:
    return Counter(type(o).__name__ for o in gc.get_objects())


async def restart(settings: Settings) -> None:
    tune_garbage_collection()
    service = TopicReconciler(settings, outbox=BusReadsOnly(settings.bus))
    gc.collect()
    before, rss_before = census(), rss_mb(os.getpid())
    tracemalloc.start()
    began = time.monotonic()
    await service.intake.start()
    await service.intake.handover._taking  # type: ignore[union-attr,misc]  # the rebuild and the first resync
    took = time.monotonic() - began
    gc.unfreeze()  # what the service froze out of the collector counts too
    gc.collect()
    held, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    print(f"rebuilt and resynced in {took:.1f} s (traced); allocations at their peak {peak / 1e6:.0f} MB, "
          f"held after {held / 1e6:.0f} MB; resident memory {rss_before:.0f} -> {rss_mb(os.getpid()):.0f} MB")
    grown = census() - before
    print("objects held, by type:", ", ".join(f"{name} {count:,}" for name, count in grown.most_common(12)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--topics", type=int, default=30_000)
    args = parser.parse_args()
    with LocalStack(Path(tempfile.mkdtemp(prefix="ballast-bench-restart-")), env={"BALLAST_LOG_LEVEL": "warning"},
                    services=("topic-reconciler",)) as stack:
        stack.start()
        statuses = Statuses(stack.settings().bus)
        try:
            generations = publish(stack, [TopicSpec(name=f"restart-{i:06d}", partitions=1, replicas=3)
                                          for i in range(args.topics)])
            until_ready(statuses, generations, 1800, "creation")
        finally:
            statuses.close()
        print(f"{args.topics:,} topics ready; the service held "
              f"{rss_mb(stack.processes['topic-reconciler'].pid):.0f} MB", flush=True)
        stack.processes["topic-reconciler"].kill()
        asyncio.run(restart(stack.settings()))


if __name__ == "__main__":
    sys.exit(main())
