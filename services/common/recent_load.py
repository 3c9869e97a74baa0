"""The brokers' and log directories' recent load, from the Spark job's aggregates, for load-aware placement."""

from __future__ import annotations

import bisect
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TypeVar

from events import LoadAggregate
from services.placement.log_dirs import LogDirUsage

T = TypeVar("T")
KEEP = 16  # windows kept per entity: enough to still have an ended one while new ones fill


@dataclass(frozen=True)
class _DirFigures:
    disk_mb: float
    replicas: int
    taken_at: datetime  # the newest sample behind the figures: replicas placed later are not in them
    growth_mb_per_day: float = 0.0


class RecentLoad:
    """Per broker, the bytes in (KB/s) of its latest window that has ended: a window still filling has seen only some
    of its samples; per log directory, its disk used and replicas in the same way, plus the replicas Ballast has
    placed there since. Windows older than ``max_age`` are left out: with the job stopped, placement falls back to
    counts alone rather than to stale load."""

    def __init__(self, max_age: timedelta) -> None:
        self.max_age = max_age
        self._windows: dict[int, dict[datetime, float]] = {}
        self._dirs: dict[tuple[int, str], dict[datetime, _DirFigures]] = {}
        self._placed: dict[tuple[int, str], list[datetime]] = {}  # per directory, in time order

    def take(self, aggregate: LoadAggregate) -> None:
        if aggregate.entity_kind == "broker" and aggregate.entity.isdigit():
            self._keep(self._windows.setdefault(int(aggregate.entity), {}), aggregate.window_end,
                       aggregate.bytes_in_kb_s)
        elif aggregate.entity_kind == "log-dir":
            broker, _, log_dir = aggregate.entity.partition(":")
            if broker.isdigit() and log_dir:
                window_s = (aggregate.window_end - aggregate.window_start).total_seconds()
                growth = aggregate.disk_growth_mb * 86_400 / window_s if window_s > 0 else 0.0
                figures = _DirFigures(aggregate.disk_mb, aggregate.replicas,
                                      aggregate.last_sample_at or aggregate.window_end, max(0.0, growth))
                self._keep(self._dirs.setdefault((int(broker), log_dir), {}), aggregate.window_end, figures)

    @staticmethod
    def _keep(windows: dict[datetime, T], end: datetime, value: T) -> None:
        windows[end] = value
        for old in sorted(windows)[:-KEEP]:
            del windows[old]

    def _latest_ended(self, windows: dict[datetime, T], now: datetime) -> T | None:
        ended = [end for end in windows if end <= now and now - end <= self.max_age]
        return windows[max(ended)] if ended else None

    def per_broker(self, now: datetime) -> dict[int, float]:
        loads = {}
        for broker, windows in self._windows.items():
            if (latest := self._latest_ended(windows, now)) is not None:
                loads[broker] = latest
        return loads

    def placed(self, broker: int, log_dir: str, at: datetime) -> None:
        """A replica Ballast just put in this directory."""
        times = self._placed.setdefault((broker, log_dir), [])
        bisect.insort(times, at)
        del times[:bisect.bisect_left(times, at - self.max_age)]

    def log_dirs(self, now: datetime) -> dict[int, dict[str, LogDirUsage]]:
        usage: dict[int, dict[str, LogDirUsage]] = {}
        for (broker, log_dir), windows in self._dirs.items():
            figures = self._latest_ended(windows, now)
            if figures is None:
                continue
            times = self._placed.get((broker, log_dir), [])
            since = len(times) - bisect.bisect_right(times, figures.taken_at)
            usage.setdefault(broker, {})[log_dir] = LogDirUsage(figures.disk_mb, figures.replicas, since,
                                                                growth_mb_per_day=figures.growth_mb_per_day)
        return usage
