"""What one window of samples says about one entity. Pure Python: the Spark job collects each (window, entity)'s
samples and calls these on the driver; the unit tests call them directly.

A domain's figures are totals over its members (brokers): its bytes in are the sum of its members' mean rates over the
window, its disk the sum of each member's latest disk, its growth the sum of each member's latest minus earliest. A
broker or a log directory is a domain of one. Summing per member keeps the figures right while a window is still
filling: a micro-batch may end between two members' samples of the same moment.
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
    last_sample_at: datetime | None


def figures(samples: Iterable[Sample]) -> Figures:
    # One value per (member, time): a sample delivered twice counts once.
    unique: dict[tuple[str, datetime], Sample] = {(s.member, s.at): s for s in samples}
    if not unique:
        return Figures(0, 0.0, 0.0, 0.0, 0.0, 0, 0, None)
    by_member: dict[str, list[Sample]] = {}
    for (member, _at), sample in sorted(unique.items()):
        by_member.setdefault(member, []).append(sample)  # in time order
    firsts = [series[0] for series in by_member.values()]
    lasts = [series[-1] for series in by_member.values()]
    return Figures(
        samples=len({at for _member, at in unique}),
        bytes_in_kb_s=sum(sum(s.bytes_in_kb_s for s in series) / len(series) for series in by_member.values()),
        bytes_out_kb_s=sum(sum(s.bytes_out_kb_s for s in series) / len(series) for series in by_member.values()),
        disk_mb=sum(s.disk_mb for s in lasts),
        disk_growth_mb=sum(s.disk_mb for s in lasts) - sum(s.disk_mb for s in firsts),
        replicas=sum(s.replicas for s in lasts),
        leaders=sum(s.leaders for s in lasts),
        last_sample_at=max(at for _member, at in unique),
    )


def domains(rack: str | None) -> list[tuple[str, int]]:
    """``/dc1/r2`` -> [("/dc1", 1), ("/dc1/r2", 2)]; a flat rack id ``r2`` is the one-level path ``/r2``."""
    parts = [p for p in (rack or "").split("/") if p]
    return [("/" + "/".join(parts[:i]), i) for i in range(1, len(parts) + 1)]
