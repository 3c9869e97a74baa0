"""The test's own reads and writes of the bus, run inside the driver's namespace (``python -m``), where the bus is.

    python -m tests.spark_cluster.bus_probe produce < samples.jsonl     # one record per request
    python -m tests.spark_cluster.bus_probe aggregates DAY              # the aggregates of windows starting on DAY

Samples go one produce request each: Tansu's high watermark is the base offset of a topic's last record batch + 1,
so a batch of sixteen would show Spark's JVM kafka source one record (Ballast's own source reads past it)."""

from __future__ import annotations

import json
import sys

from events import TOPICS
from services.common import busio
from services.common.settings import get_settings


def produce(lines: list[str]) -> None:
    bus = get_settings().bus
    for line in lines:
        value = json.loads(line)
        busio.produce(bus, [(TOPICS.load_samples.name, f"broker:{value['payload']['broker']}".encode(),
                             line.encode(), None)])


def aggregates(day: str) -> list[dict]:
    found = busio.latest(get_settings().bus, TOPICS.load_aggregates, timeout_s=10).values()
    return [a.model_dump(mode="json") for a in found if a.window_start.isoformat().startswith(day)]


if __name__ == "__main__":
    if sys.argv[1] == "produce":
        produce([line for line in sys.stdin.read().splitlines() if line.strip()])
    else:
        print(json.dumps(aggregates(sys.argv[2])))
