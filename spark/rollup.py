"""What a window says about an entity. Pure Python: the Spark job calls these on the driver for each micro-batch; the
unit tests call them directly.

Spark aggregates each broker and each log directory per window (running sums, so its state stays small whatever the
rate). A rack-tree domain is then the sum of its brokers' figures for the same window: bytes in and out are the sum of
their mean rates, disk and replicas the sum of their latest values, growth and placements the sum of theirs.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime


@dataclass(frozen=True)
class Member:
    """One broker's (or log directory's) figures over one window."""

    name: str
    rack: str | None
    samples: int
    bytes_in_kb_s: float
    bytes_out_kb_s: float
    disk_mb: float
    disk_growth_mb: float
    replicas: int
    leaders: int
    last_sample_at: datetime | None
    placements: int = 0  # replicas Ballast placed on it in the window


def member(name: str, rack: str | None, count: int, sum_in: float, sum_out: float, first_disk: float,
           last_disk: float, replicas: int, leaders: int, last_sample_at: datetime | None, *,
           placements: int = 0) -> Member:
    """From Spark's running figures: sample count, sums of rates, disk at the first and the latest sample, and the
    replicas placed."""
    divisor = max(count, 1)
    return Member(name, rack, count, sum_in / divisor, sum_out / divisor, last_disk, last_disk - first_disk, replicas,
                  leaders, last_sample_at, placements)


def total(name: str, members: Iterable[Member]) -> Member:
    """A domain's figures: its members' summed."""
    chosen = list(members)
    times = [m.last_sample_at for m in chosen if m.last_sample_at is not None]
    return Member(name, None, max((m.samples for m in chosen), default=0),
                  sum(m.bytes_in_kb_s for m in chosen), sum(m.bytes_out_kb_s for m in chosen),
                  sum(m.disk_mb for m in chosen), sum(m.disk_growth_mb for m in chosen),
                  sum(m.replicas for m in chosen), sum(m.leaders for m in chosen), max(times, default=None),
                  sum(m.placements for m in chosen))


def domains(rack: str | None) -> list[tuple[str, int]]:
    """``/dc1/r2`` -> [("/dc1", 1), ("/dc1/r2", 2)]; a flat rack id ``r2`` is the one-level path ``/r2``."""
    parts = [p for p in (rack or "").split("/") if p]
    return [("/" + "/".join(parts[:i]), i) for i in range(1, len(parts) + 1)]


def rollup(brokers: Iterable[Member]) -> dict[tuple[str, int], Member]:
    """Every domain above these brokers -> its figures."""
    by_domain: dict[tuple[str, int], list[Member]] = {}
    for b in brokers:
        for domain in domains(b.rack):
            by_domain.setdefault(domain, []).append(b)
    return {domain: total(domain[0], members) for domain, members in by_domain.items()}
