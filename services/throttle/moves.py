"""What is moving on the managed cluster now, whoever started it (Cruise Control, Ballast, Kafka's tools by hand):
partition reassignments (ListPartitionReassignments) and moves between one broker's log directories (the future
replicas DescribeLogDirs shows). Pure."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from services.adapters.admin import LogDirInfo, Reassignment


def item(partition: int, broker: int) -> str:
    """A replica as Kafka's throttled-replicas lists name it."""
    return f"{partition}:{broker}"


@dataclass(frozen=True)
class Moves:
    # Per topic, as Kafka's reassignment tool throttles them: the replicas a moving partition had before (they send
    # the copy: leader.replication.throttled.replicas) and the replicas being built (follower...replicas).
    sending: Mapping[str, frozenset[tuple[int, int]]] = field(default_factory=dict)
    building: Mapping[str, frozenset[tuple[int, int]]] = field(default_factory=dict)
    # Per broker, the log directories a move between its directories reads from or writes to.
    dir_moves: Mapping[int, frozenset[str]] = field(default_factory=dict)
    moving_log_dirs: int = 0  # replicas being moved between directories

    @property
    def partitions(self) -> frozenset[tuple[str, int]]:
        return frozenset((topic, p) for topic, replicas in self.building.items() for p, _ in replicas)

    @property
    def inter_brokers(self) -> frozenset[int]:
        """The brokers a reassignment copies from or to."""
        return frozenset(b for replicas in (*self.sending.values(), *self.building.values()) for _, b in replicas)

    @property
    def in_flight(self) -> bool:
        return bool(self.building) or bool(self.dir_moves)

    def is_building(self, topic: str, partition: int, broker: int) -> bool:
        return (partition, broker) in self.building.get(topic, ())


def find_moves(reassignments: Sequence[Reassignment], log_dirs: Sequence[LogDirInfo]) -> Moves:
    sending: dict[str, set[tuple[int, int]]] = {}
    building: dict[str, set[tuple[int, int]]] = {}
    for r in reassignments:
        if not r.adding:
            continue  # only leaders reordered or replicas dropped: nothing to copy
        existing = [b for b in r.replicas if b not in r.adding]
        sending.setdefault(r.topic, set()).update((r.partition, b) for b in existing)
        building.setdefault(r.topic, set()).update((r.partition, b) for b in r.adding)
    current: dict[tuple[int, str, int], str] = {}
    futures: list[tuple[int, str, int, str]] = []
    for d in log_dirs:
        for replica in d.replicas:
            if replica.is_future:
                futures.append((d.broker, replica.topic, replica.partition, d.path))
            else:
                current[(d.broker, replica.topic, replica.partition)] = d.path
    dirs: dict[int, set[str]] = {}
    for broker, topic, partition, path in futures:
        taking_part = dirs.setdefault(broker, set())
        taking_part.add(path)
        if (source := current.get((broker, topic, partition))) is not None:
            taking_part.add(source)
    return Moves(sending={t: frozenset(r) for t, r in sending.items()},
                 building={t: frozenset(r) for t, r in building.items()},
                 dir_moves={b: frozenset(d) for b, d in dirs.items()}, moving_log_dirs=len(futures))


def throttled_items(moves: Moves, brokers: Iterable[int]) -> dict[tuple[str, str], frozenset[str]]:
    """The throttled-replicas items the moves need, (topic, config) -> items, for the replicas on ``brokers`` only:
    the brokers whose rate the controller sets (another's rate is for the replicas that other chose)."""
    ours = set(brokers)
    wanted: dict[tuple[str, str], frozenset[str]] = {}
    for config, per_topic in (("leader.replication.throttled.replicas", moves.sending),
                              ("follower.replication.throttled.replicas", moves.building)):
        for topic, replicas in per_topic.items():
            items = frozenset(item(p, b) for p, b in replicas if b in ours)
            if items:
                wanted[(topic, config)] = items
    return wanted


def union(*views: Mapping[str, frozenset[tuple[int, int]]]) -> dict[str, frozenset[tuple[int, int]]]:
    merged: dict[str, frozenset[tuple[int, int]]] = {}
    for view in views:
        for topic, replicas in view.items():
            merged[topic] = merged.get(topic, frozenset()) | replicas
    return merged
