"""What one window of samples says about one entity. Pure Python: the Spark job collects each (window, entity)'s
samples and calls these on the driver; the unit tests call them directly.

A domain's figures are totals over its brokers: its bytes in are the mean, over the window's sample times, of the sum
of its brokers' rates at that time; its disk is the sum of its brokers' disks at the latest sample time. A broker or
a log directory is a domain of one.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime


@dataclass(frozen=True)
class Sample:
    at: datetime
    member: str  # the broker or log directory the sample is about
    bytes_in_kb_s: float
    bytes_out_kb_s: float
    disk_mb: float
    replicas: int
    leaders: int


@dataclass(frozen=True)
class Figures:
    samples: int
    bytes_in_kb_s: float
    bytes_out_kb_s: float
    disk_mb: float
    disk_growth_mb: float
    replicas: int
    leaders: int


def figures(samples: Iterable[Sample]) -> Figures:
    # One value per (time, member): a sample delivered twice counts once.
    latest: dict[tuple[datetime, str], Sample] = {(s.at, s.member): s for s in samples}
    by_time: dict[datetime, list[Sample]] = {}
    for (at, _member), sample in sorted(latest.items()):
        by_time.setdefault(at, []).append(sample)
    if not by_time:
        return Figures(0, 0.0, 0.0, 0.0, 0.0, 0, 0)
    times = sorted(by_time)
    first, last = by_time[times[0]], by_time[times[-1]]
    return Figures(
        samples=len(times),
        bytes_in_kb_s=sum(s.bytes_in_kb_s for group in by_time.values() for s in group) / len(times),
        bytes_out_kb_s=sum(s.bytes_out_kb_s for group in by_time.values() for s in group) / len(times),
        disk_mb=sum(s.disk_mb for s in last),
        disk_growth_mb=sum(s.disk_mb for s in last) - sum(s.disk_mb for s in first),
        replicas=sum(s.replicas for s in last),
        leaders=sum(s.leaders for s in last),
    )


def domains(rack: str | None) -> list[tuple[str, int]]:
    """``/dc1/r2`` -> [("/dc1", 1), ("/dc1/r2", 2)]; a flat rack id ``r2`` is the one-level path ``/r2``."""
    parts = [p for p in (rack or "").split("/") if p]
    return [("/" + "/".join(parts[:i]), i) for i in range(1, len(parts) + 1)]
