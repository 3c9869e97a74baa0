"""The brokers' recent load, from the Spark job's aggregates, for load-aware placement."""

from __future__ import annotations

from datetime import datetime, timedelta

from events import LoadAggregate

KEEP = 16  # windows kept per broker: enough to still have an ended one while new ones fill


class RecentLoad:
    """Per broker, the bytes in (KB/s) of its latest window that has ended: a window still filling has seen only some
    of its samples. Windows older than ``max_age`` are left out: with the job stopped, placement falls back to counts
    alone rather than to stale load."""

    def __init__(self, max_age: timedelta) -> None:
        self.max_age = max_age
        self._windows: dict[int, dict[datetime, float]] = {}

    def take(self, aggregate: LoadAggregate) -> None:
        if aggregate.entity_kind != "broker" or not aggregate.entity.isdigit():
            return
        windows = self._windows.setdefault(int(aggregate.entity), {})
        windows[aggregate.window_end] = aggregate.bytes_in_kb_s
        for old in sorted(windows)[:-KEEP]:
            del windows[old]

    def per_broker(self, now: datetime) -> dict[int, float]:
        loads = {}
        for broker, windows in self._windows.items():
            ended = [end for end in windows if end <= now and now - end <= self.max_age]
            if ended:
                loads[broker] = windows[max(ended)]
        return loads
