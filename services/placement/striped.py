"""``striped``: the behaviour of Kafka's KRaft ``StripedReplicaPlacer``, the compatible default.

Brokers are grouped by rack. Each partition takes its leader from the next rack (in rotation) that still has an
unfenced broker this round, and its followers from the racks after it, one per rack; fenced brokers are used only
when a rack's unfenced brokers run out. After as many partitions as there are unfenced brokers the rack and broker
orders are reshuffled so the same sets do not repeat. Adding partitions to a topic continues after the rack of the
last partition's leader. Validation errors carry Kafka's own wording. Random numbers come from a Python
``java.util.Random`` drawn in Kafka's order, so a seed gives Kafka's own placement (tests/kafka/test_striped_vs_kafka.py
runs Kafka's class on the same inputs).
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable

from services.placement.java_random import JavaRandom, hashmap_order
from services.placement.model import (
    Assignment,
    Broker,
    ClusterView,
    InvalidReplicationFactor,
    PlacementSpec,
    check_replication_factor,
    usable_brokers,
)


class _Rotation:
    """Brokers of one rack and state, handed out once each per round, starting one further every round."""

    def __init__(self, brokers: list[int]) -> None:
        self.brokers = sorted(brokers)
        self.offset = 0
        self.index = 0
        self.round = 0

    def start_at(self, offset: int) -> None:
        if self.brokers:
            self.offset = offset % len(self.brokers)

    def next(self, round_: int) -> int | None:
        if not self.brokers:
            return None
        if round_ != self.round:
            self.round, self.index = round_, 0
            self.offset = (self.offset + 1) % len(self.brokers)
        if self.index >= len(self.brokers):
            return None
        broker = self.brokers[(self.index + self.offset) % len(self.brokers)]
        self.index += 1
        return broker


class _Rack:
    def __init__(self, unfenced: list[int], fenced: list[int]) -> None:
        self.unfenced = _Rotation(unfenced)
        self.fenced = _Rotation(fenced)

    def next_unfenced(self, round_: int) -> int | None:
        return self.unfenced.next(round_)

    def next_any(self, round_: int) -> int | None:
        broker = self.unfenced.next(round_)
        return broker if broker is not None else self.fenced.next(round_)


class _RackRing:
    """Racks in Kafka's order, drawing random numbers in Kafka's order: each rack initialised in the iteration order
    of Kafka's ``HashMap<Optional<String>, Rack>`` (fenced list, then unfenced), then the starting rack; so the same
    ``java.util.Random`` seed gives Kafka's placement (tests/kafka/test_striped_vs_kafka.py)."""

    def __init__(self, rng: JavaRandom, brokers: Iterable[Broker], existing: list[list[int]]) -> None:
        self.rng = rng
        by_rack: dict[str | None, tuple[list[int], list[int]]] = {}
        rack_of: dict[int, str | None] = {}
        for broker in brokers:
            unfenced, fenced = by_rack.setdefault(broker.rack, ([], []))
            (unfenced if broker.alive else fenced).append(broker.id)
            rack_of[broker.id] = broker.rack
        self.racks = {name: _Rack(*lists) for name, lists in by_rack.items()}
        self.hash_order = hashmap_order(list(self.racks))
        # Racks sorted by name, the rack-less group (None) first, as Kafka sorts Optional<String>.
        self.names = sorted(self.racks, key=lambda n: (n is not None, n or ""))
        self.total = len(rack_of)
        self.unfenced = sum(len(u) for u, _ in by_rack.values())
        self.round = 0
        for name in self.hash_order:
            rack = self.racks[name]
            rack.fenced.start_at(rng.randrange(len(rack.fenced.brokers)) if rack.fenced.brokers else 0)
            previous = _last_broker_in_rack(existing, rack_of, name)
            if previous is not None and previous in rack.unfenced.brokers:
                rack.unfenced.start_at(rack.unfenced.brokers.index(previous) + 1)
            else:
                rack.unfenced.start_at(rng.randrange(len(rack.unfenced.brokers)) if rack.unfenced.brokers else 0)
        last_leader_rack = _last_leader_rack(existing, rack_of)
        if last_leader_rack is not _MISSING and last_leader_rack in self.racks:
            self.offset = (self.names.index(last_leader_rack) + 1) % len(self.names)
        else:
            self.offset = rng.randrange(len(self.names)) if self.names else 0

    def place(self, replication_factor: int) -> list[int]:
        if self.round == self.unfenced and self.unfenced > 1:
            self._shuffle()
            self.round = 0
        if self.offset == len(self.names):
            self.offset = 0
        replicas: list[int] = []
        leader_rack = self.offset
        while True:
            leader = self.racks[self.names[leader_rack]].next_unfenced(self.round)
            if leader is not None:
                replicas.append(leader)
                break
            leader_rack = (leader_rack + 1) % len(self.names)
        rack_index, skip = self.offset, leader_rack
        while len(replicas) < replication_factor:
            follower = None
            while follower is None:
                if rack_index == skip:
                    skip = -1  # the leader's rack gives no follower in the first pass only
                else:
                    follower = self.racks[self.names[rack_index]].next_any(self.round)
                rack_index = (rack_index + 1) % len(self.names)
            replicas.append(follower)
        self.round += 1
        self.offset += 1
        return replicas

    def _shuffle(self) -> None:
        self.rng.shuffle(self.names)
        for name in self.hash_order:
            self.rng.shuffle(self.racks[name].fenced.brokers)
            self.rng.shuffle(self.racks[name].unfenced.brokers)


_MISSING = object()


def _last_leader_rack(existing: list[list[int]], rack_of: dict[int, str | None]) -> object:
    if not existing or not existing[-1]:
        return _MISSING
    return rack_of.get(existing[-1][0], _MISSING)


def _last_broker_in_rack(existing: list[list[int]], rack_of: dict[int, str | None], rack: str | None) -> int | None:
    for replicas in reversed(existing):
        for broker in replicas:
            if broker in rack_of and rack_of[broker] == rack:
                return broker
    return None


class StripedPlacer:
    name = "striped"

    def __init__(self, seed: int | None = None) -> None:
        self.seed = seed

    def place(self, spec: PlacementSpec, cluster: ClusterView, broker_ids: Iterable[int] | None = None
              ) -> Assignment:
        brokers = [b for b in usable_brokers(cluster, broker_ids) if b.state != "offline"]
        existing = [list(r) for r in cluster.assignments.get(spec.topic, [])][: spec.first_partition]
        # One java.util.Random per topic, seeded from the placer's seed and the topic's name.
        rng = JavaRandom(zlib.crc32(f"{self.seed}:{spec.topic}".encode()))
        return place_striped(rng, brokers, spec.replication_factor, spec.partitions, existing)


def place_striped(rng: JavaRandom, brokers: Iterable[Broker], replication_factor: int, partitions: int,
                  existing: list[list[int]] | None = None) -> Assignment:
    """Kafka's ``StripedReplicaPlacer(random).place(...)``: the racks built (drawing from ``rng``), then validated
    with Kafka's messages, then ``partitions`` placed; ``existing`` partitions are continued after as newer Kafka
    does (4.3's placer starts afresh)."""
    ring = _RackRing(rng, brokers, existing or [])
    check_replication_factor(replication_factor)
    if ring.unfenced == 0:
        raise InvalidReplicationFactor("All brokers are currently fenced, or have all their log directories cordoned.")
    if replication_factor > ring.total:
        raise InvalidReplicationFactor(
            f"The target replication factor of {replication_factor} cannot be reached because only "
            f"{ring.total} broker(s) are registered or some brokers have all their log directories cordoned.")
    return [ring.place(replication_factor) for _ in range(partitions)]
