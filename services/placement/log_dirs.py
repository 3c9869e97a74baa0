"""Which log directory of a broker a new replica goes to (JBOD, KIP-113).

Kafka's own choice is the directory with the fewest partitions, blind to their sizes. Here a new replica goes to the
directory with the least disk used, counting every replica already sent there, since the figures were taken or
earlier in the same decision, as one average replica of that broker: a burst of new topics spreads over the
directories instead of all landing in the emptiest one before the next aggregates show it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from events import placeholders as placeholder


@dataclass(frozen=True)
class LogDirUsage:
    disk_mb: float
    replicas: int
    placed_since: int = 0  # replicas sent there after these figures were taken


def choose_log_dirs(new_replicas: Mapping[int, Sequence[int]], usage: Mapping[int, Mapping[str, LogDirUsage]]
                    ) -> dict[tuple[int, int], str]:
    """``new_replicas``: partition -> brokers that get a new replica of it. Returns (partition, broker) -> log
    directory for each on a broker with two or more known directories; the others (one directory, no figures,
    placeholders) are left to the broker."""
    placed: dict[tuple[int, str], int] = {}
    chosen: dict[tuple[int, int], str] = {}
    for partition in sorted(new_replicas):
        for broker in new_replicas[partition]:
            dirs = usage.get(broker, {})
            if placeholder.is_placeholder(broker) or len(dirs) < 2:
                continue
            best = _least_used(dirs, {name: placed.get((broker, name), 0) for name in dirs})
            placed[(broker, best)] = placed.get((broker, best), 0) + 1
            chosen[(partition, broker)] = best
    return chosen


def _least_used(dirs: Mapping[str, LogDirUsage], placed_now: Mapping[str, int]) -> str:
    replicas = sum(u.replicas for u in dirs.values())
    mean_mb = sum(u.disk_mb for u in dirs.values()) / replicas if replicas else 0.0

    def projected(name: str) -> tuple[float, int, str]:
        pending = dirs[name].placed_since + placed_now[name]
        return dirs[name].disk_mb + pending * mean_mb, dirs[name].replicas + pending, name

    return min(dirs, key=projected)
