"""The live traffic of each broker and log directory, outside the moves: what a throttle must leave room for. Two
sources, said in the status with their age: Cruise Control's load (the load collector's samples: leader and follower
bytes in, a model of the produce traffic that leaves reassignment copies out), and the brokers' own log growth
between two DescribeLogDirs (every replica's bytes written, less the replicas being built by a move). Only the log
growth has figures per directory. Pure."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal

from events import BrokerLoadSample
from events.throttle import TrafficSource
from services.adapters.admin import LogDirInfo

CRUISE_CONTROL_KB = 1024  # Cruise Control's KB/s are of 1024 bytes
Choice = Literal["auto", "cruise-control", "log-growth"]


@dataclass(frozen=True)
class LogSizes:
    """Every present replica's size, (broker, directory, topic, partition) -> bytes, at one moment, and every online
    directory (one may hold nothing but the copy a move writes)."""

    taken_at: datetime
    sizes: Mapping[tuple[int, str, str, int], int]
    dirs: frozenset[tuple[int, str]] = frozenset()


def log_sizes(log_dirs: Sequence[LogDirInfo], taken_at: datetime) -> LogSizes:
    return LogSizes(taken_at, {(d.broker, d.path, r.topic, r.partition): r.size_bytes
                               for d in log_dirs for r in d.replicas if not r.is_future},
                    frozenset((d.broker, d.path) for d in log_dirs if d.online))


@dataclass(frozen=True)
class Traffic:
    source: TrafficSource
    taken_at: datetime | None = None  # when the figures were measured (the newest of them)
    brokers: Mapping[int, float] = field(default_factory=dict)  # bytes per second
    log_dirs: Mapping[tuple[int, str], float] = field(default_factory=dict)

    def age_s(self, now: datetime) -> float | None:
        return None if self.taken_at is None else max(0.0, (now - self.taken_at).total_seconds())


NO_TRAFFIC = Traffic("none")


def log_growth(before: LogSizes, after: LogSizes, building: Mapping[str, frozenset[tuple[int, int]]]) -> Traffic:
    """Bytes written per second between the two, per broker and directory, leaving out the replicas a reassignment is
    building (``building``: in either look, so a copy that ended in between is not taken for live traffic) and any
    replica not in both (a move between directories that ended, a new partition). A log that shrank (retention) counts
    as nothing written."""
    seconds = (after.taken_at - before.taken_at).total_seconds()
    if seconds <= 0:
        return NO_TRAFFIC
    brokers: dict[int, float] = {broker: 0.0 for broker, _ in after.dirs}
    dirs: dict[tuple[int, str], float] = {d: 0.0 for d in after.dirs}
    for key, size in after.sizes.items():
        broker, path, topic, partition = key
        brokers.setdefault(broker, 0.0)
        dirs.setdefault((broker, path), 0.0)
        if (earlier := before.sizes.get(key)) is None or (partition, broker) in building.get(topic, ()):
            continue
        written = max(0, size - earlier) / seconds
        brokers[broker] += written
        dirs[(broker, path)] += written
    return Traffic("log-growth", after.taken_at, brokers, dirs)


def cruise_control_load(samples: Mapping[int, BrokerLoadSample]) -> Traffic:
    """Each broker's latest sample: leader and follower bytes in."""
    if not samples:
        return NO_TRAFFIC
    return Traffic("cruise-control", max(s.sampled_at for s in samples.values()),
                   {b: s.bytes_in_kb_s * CRUISE_CONTROL_KB for b, s in samples.items()})


def choose(choice: Choice, cruise_control: Traffic, growth: Traffic, now: datetime, max_age_s: float) -> Traffic:
    """The figures the rates are computed from. ``auto``: Cruise Control's load while it is fresh, otherwise the log
    growth. The directories' figures are always the log growth's."""
    def fresh(t: Traffic) -> bool:
        age = t.age_s(now)
        return age is not None and age <= max_age_s

    use_cruise_control = choice == "cruise-control" or (choice == "auto" and fresh(cruise_control))
    if use_cruise_control and fresh(cruise_control):
        return Traffic("cruise-control", cruise_control.taken_at, cruise_control.brokers, growth.log_dirs)
    if choice == "cruise-control":
        return Traffic("none", None, {}, growth.log_dirs)  # asked for Cruise Control's, which is stale or missing
    return growth
