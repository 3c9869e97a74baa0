"""Which log directory of a broker a new replica goes to (JBOD, KIP-113).

Kafka's own choice is the directory with the fewest partitions, blind to their sizes. Here a new replica goes to the
directory the disk-balance planner (``disk_balance.choose_dir``) picks: least utilized by bytes against capacity,
projected at its growth rate, counting every replica already sent there, since the figures were taken or earlier in
the same decision, as one average replica of that broker: a burst of new topics spreads over the directories instead
of all landing in the emptiest one before the next aggregates show it. Draining directories (a remove-disks request,
kept empty until released) are never chosen.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from events import placeholders as placeholder
from services.placement.disk_balance import Directory, NoDirectory, choose_dir


@dataclass(frozen=True)
class LogDirUsage:
    disk_mb: float
    replicas: int
    placed_since: int = 0  # replicas sent there after these figures were taken
    growth_mb_per_day: float = 0.0
    capacity_mb: float | None = None  # None: unknown, all directories of the broker count as equal
    draining: bool = False


def choose_log_dirs(new_replicas: Mapping[int, Sequence[int]], usage: Mapping[int, Mapping[str, LogDirUsage]], *,
                    explicit: Collection[int] = (),
                    placed_before: Mapping[tuple[int, str], int] | None = None) -> dict[tuple[int, int], str]:
    """``new_replicas``: partition -> brokers that get a new replica of it. Returns (partition, broker) -> log
    directory for each on a broker with two or more known directories, or one on the brokers ``explicit`` names
    (those whose other directories were left out of ``usage``: cordoned ones, which the broker's own choice must not
    be trusted to avoid); the others (one directory, no figures, placeholders, every directory draining) are left to
    the broker. ``placed_before``: (broker, directory) -> replicas sent there by the same decision's earlier topics
    (a batch of creations) that ``usage`` does not count yet."""
    placed: dict[tuple[int, str], int] = dict(placed_before or {})
    chosen: dict[tuple[int, int], str] = {}
    for partition in sorted(new_replicas):
        for broker in new_replicas[partition]:
            dirs = usage.get(broker, {})
            if placeholder.is_placeholder(broker) or len(dirs) < (1 if broker in explicit else 2):
                continue
            mean_mb = _mean_replica_mb(dirs)
            planned = {name: (u.placed_since + placed.get((broker, name), 0)) * (mean_mb + 1e-9)
                       for name, u in dirs.items()}
            try:
                best = choose_dir(_directories(dirs), planned_mb=planned)
            except NoDirectory:
                continue
            placed[(broker, best)] = placed.get((broker, best), 0) + 1
            chosen[(partition, broker)] = best
    return chosen


def _mean_replica_mb(dirs: Mapping[str, LogDirUsage]) -> float:
    replicas = sum(u.replicas for u in dirs.values())
    return sum(u.disk_mb for u in dirs.values()) / replicas if replicas else 0.0


def _directories(dirs: Mapping[str, LogDirUsage]) -> list[Directory]:
    known = [u.capacity_mb for u in dirs.values() if u.capacity_mb]
    # Unknown capacities: 1 MB each, so that utilization orders by bytes exactly as before capacities were known.
    default = sum(known) / len(known) if known else 1.0
    # Ties (empty directories, no growth) go to the fewest replicas, then the name: Kafka's order.
    return [Directory(path=name, capacity_mb=u.capacity_mb or default,
                      used_mb=u.disk_mb + 1e-9 * u.replicas, growth_mb_per_day=u.growth_mb_per_day,
                      draining=u.draining)
            for name, u in sorted(dirs.items())]
