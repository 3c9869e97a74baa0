"""``multi-level``: replicas spread level by level over a rack tree (KIP-879's algorithm, load-aware).

Rack ids form a tree (``/dc1/r1``). Every domain hands its children out in a ring: a partition's replicas arriving at
a domain go to consecutive children, so no child holds more than ceil(k / children) of the k replicas it received,
at every level. Each ring starts at a seeded random child, and before a topic is placed every ring is ordered by how
many replicas its children already hold (of this topic, then of all topics): the domains that got one more last
time get one fewer now, which keeps sibling totals and replicas per broker within one of each other cluster-wide.
Where the counts tie, the domain carrying less load goes first (``ClusterView.load``, from the Spark aggregates), so
the extra replicas the counts leave to chance land on the lighter brokers. The leader is then the replica whose
broker leads the fewest partitions.

Raising the replication factor or filling a placeholder adds replicas one at a time, each to the least-filled
domain at every level (fewest replicas of this partition, then of this topic, then of all topics), so it continues
the same spread instead of starting over.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence

from services.placement.leaders import choose_leaders, hosted_counts, water_fill
from services.placement.metrics import best_spread
from services.placement.model import (
    Assignment,
    Broker,
    BrokerState,
    ClusterView,
    InvalidReplicationFactor,
    PlacementError,
    PlacementSpec,
    check_replication_factor,
    usable_brokers,
)
from services.placement.rack_tree import Domain, broker_paths, build_tree
from events import placeholders as placeholder


class MultiLevelPlacer:
    name = "multi-level"

    def __init__(self, seed: int | None = None) -> None:
        self.seed = seed

    def place(self, spec: PlacementSpec, cluster: ClusterView, broker_ids: Iterable[int] | None = None
              ) -> Assignment:
        check_replication_factor(spec.replication_factor)
        brokers = self._eligible(spec, cluster, broker_ids)
        _check_enough(spec.replication_factor, brokers, spec.use_offline_brokers)
        layout = _Layout(build_tree(brokers), cluster, spec.topic, spec.first_partition, self._rng(spec.topic))
        partitions = [layout.place_partition(spec.replication_factor) for _ in range(spec.partitions)]
        hosted = hosted_counts(partitions, layout.alive)
        quota = layout.leader_quotas(len(partitions), hosted)
        return choose_leaders(partitions, layout.alive, quota, layout.topic_leaders, layout.all_leaders,
                              layout.broker_order(), layout.spread_ok, hosted)

    def add_replicas(self, topic: str, assignment: Sequence[Sequence[int]], replication_factor: int,
                     cluster: ClusterView, broker_ids: Iterable[int] | None = None,
                     use_offline_brokers: bool = False) -> Assignment:
        """Raise every partition of ``topic`` to ``replication_factor`` replicas, keeping those it has (placeholders,
        negative ids, are dropped and count as missing)."""
        check_replication_factor(replication_factor)
        spec = PlacementSpec(len(assignment), replication_factor, topic=topic, use_offline_brokers=use_offline_brokers)
        brokers = self._eligible(spec, cluster, broker_ids)
        _check_enough(replication_factor, brokers, use_offline_brokers)
        current = [placeholder.real(replicas) for replicas in assignment]
        layout = _Layout(build_tree(brokers), cluster.with_assignment(topic, current), topic, len(current),
                         self._rng(topic))
        return [layout.extend_partition(replicas, replication_factor) for replicas in current]

    def _rng(self, topic: str) -> random.Random:
        return random.Random(f"{self.seed}:{topic}")

    @staticmethod
    def _eligible(spec: PlacementSpec, cluster: ClusterView, broker_ids: Iterable[int] | None) -> list[Broker]:
        brokers = usable_brokers(cluster, broker_ids)
        if spec.use_offline_brokers:
            return brokers
        return [b for b in brokers if b.alive]


def _check_enough(replication_factor: int, brokers: list[Broker], offline_allowed: bool) -> None:
    alive = sum(b.alive for b in brokers)
    if alive == 0:
        raise InvalidReplicationFactor("no alive broker to lead the partitions: all brokers are fenced or offline")
    if replication_factor > len(brokers):
        what = "brokers known (alive or observed)" if offline_allowed else "alive brokers"
        raise InvalidReplicationFactor(
            f"replication factor {replication_factor} is above the {len(brokers)} {what} available to the "
            "multi-level placer; lower the replication factor, start brokers, or allow under-replicated creation")


class _Layout:
    """The rings of one placement run, ordered by the load the cluster already carries."""

    def __init__(self, root: Domain, cluster: ClusterView, topic: str, first_partition: int,
                 rng: random.Random) -> None:
        self.root = root
        self.paths = broker_paths(root)
        self.alive = {b.id for b in cluster.brokers if b.state is BrokerState.ALIVE}
        existing = list(cluster.assignments.get(topic, []))[:first_partition]
        self.topic_replicas = _per_domain(self.paths, Counter(b for r in existing for b in r))
        self.all_replicas = _per_domain(self.paths, Counter(b for t, parts in cluster.assignments.items() if t != topic
                                                            for r in parts for b in r))
        self.topic_leaders = {b: 0 for b in self.paths}
        self.all_leaders = {b: 0 for b in self.paths}
        for name, parts in cluster.assignments.items():
            counts = self.topic_leaders if name == topic else self.all_leaders
            for index, replicas in enumerate(parts):
                if replicas and replicas[0] in counts and (name != topic or index < first_partition):
                    counts[replicas[0]] += 1
        self.topic_leaders_in = _per_domain(self.paths, self.topic_leaders)
        self.all_leaders_in = _per_domain(self.paths, self.all_leaders)
        load_in = _per_domain(self.paths, {b: v for b, v in cluster.load.items() if b in self.paths})
        self.rings: dict[int, list[Domain]] = {}
        self.pointers: dict[int, int] = {}
        for node in root.walk():
            if node.children:
                start = rng.randrange(len(node.children))
                ring = node.children[start:] + node.children[:start]
                ring.sort(key=lambda c: (self.topic_replicas.get(id(c), 0), self.all_replicas.get(id(c), 0),
                                         self.topic_leaders_in.get(id(c), 0) + self.all_leaders_in.get(id(c), 0),
                                         load_in.get(id(c), 0)))
                self.rings[id(node)] = ring
                self.pointers[id(node)] = 0

    # Fresh partitions: the rings.

    def place_partition(self, replication_factor: int) -> list[int]:
        """The partition's replicas in ring order; the leader is chosen for all partitions at once afterwards."""
        chosen: list[int] = []
        self._fill(self.root, replication_factor, chosen)
        return chosen

    def leader_quotas(self, count: int, hosted: dict[int, int]) -> dict[int, int]:
        """How many of ``count`` new partitions each broker should lead: split level by level like replicas, to the
        domains leading the fewest partitions of this topic, then of all topics, so leaders per domain stay within
        one of each other as well as per broker."""
        can_lead = _per_domain(self.paths, hosted)
        quota: dict[int, int] = {}

        def replicas_after(domain: Domain) -> int:
            # Ties go to domains holding more replicas: leaders then grow where replicas did, so the domains left
            # with fewer replicas also keep fewer leaders, and a later topic that must use them (RF 1) can lead there.
            key = id(domain)
            return self.all_replicas.get(key, 0) + self.topic_replicas.get(key, 0) + can_lead.get(key, 0)

        def split(node: Domain, units: int) -> None:
            if node.is_broker:
                quota[node.broker] = units  # type: ignore[index]
                return
            ring = self.rings[id(node)]
            options = [(position, can_lead.get(id(child), 0),
                        (self.topic_leaders_in.get(id(child), 0), self.all_leaders_in.get(id(child), 0),
                         -replicas_after(child), position))
                       for position, child in enumerate(ring)]
            for position, share in water_fill(units, options).items():
                if share:
                    split(ring[position], share)  # type: ignore[index]

        split(self.root, count)
        return quota

    def spread_ok(self, replicas: list[int]) -> bool:
        """No domain holds more of these replicas than the best spread allows (see ``metrics.best_spread``)."""
        in_partition = _per_domain(self.paths, Counter(replicas))
        for node in self.root.walk():
            k = in_partition.get(id(node), 0)
            if k and node.children:
                allowed = best_spread(k, [c.capacity for c in node.children])
                if any(in_partition.get(id(c), 0) > allowed for c in node.children):
                    return False
        return True

    def broker_order(self) -> list[int]:
        """Brokers in the order the rings reach them: the tie-break that keeps placements deterministic."""
        order: list[int] = []

        def visit(node: Domain) -> None:
            if node.is_broker:
                order.append(node.broker)  # type: ignore[arg-type]
            for child in self.rings.get(id(node), ()):
                visit(child)

        visit(self.root)
        return order

    def _fill(self, node: Domain, k: int, out: list[int]) -> None:
        if k == 1:
            out.append(self._one(node))
            return
        key = id(node)
        ring, pointer = self.rings[key], self.pointers[key]
        size = len(ring)
        if k <= size:  # one replica to each of the next k children: the common case, without bookkeeping
            end = pointer + k
            chosen = ring[pointer:end] if end <= size else ring[pointer:] + ring[:end - size]
            self.pointers[key] = end % size
            for child in chosen:
                out.append(self._one(child))
            return
        taken: dict[int, int] = {}
        order: list[Domain] = []
        while k:
            child = ring[pointer]
            pointer = pointer + 1 if pointer + 1 < size else 0
            have = taken.get(id(child), 0)
            if have < child.capacity:  # a small domain that is full for this partition is skipped
                if not have:
                    order.append(child)
                taken[id(child)] = have + 1
                k -= 1
        self.pointers[key] = pointer
        for child in order:
            self._fill(child, taken[id(child)], out)

    def _one(self, node: Domain) -> int:
        """One replica into ``node``: follow each ring down to a broker (the hot path: most domains get one)."""
        rings, pointers = self.rings, self.pointers
        while node.broker is None:
            key = id(node)
            ring = rings[key]
            pointer = pointers[key]
            node = ring[pointer]
            pointers[key] = pointer + 1 if pointer + 1 < len(ring) else 0
        return node.broker

    def _lead(self, replicas: list[int]) -> list[int]:
        candidates = [b for b in replicas if b in self.alive]
        if not candidates:
            raise PlacementError("no alive broker among a partition's replicas to lead it")
        leader = min(candidates, key=lambda b: (self.topic_leaders[b], self.all_leaders[b]))
        self.topic_leaders[leader] += 1
        return [leader, *(b for b in replicas if b != leader)]

    # Existing partitions: one replica at a time into the least-filled domain.

    def extend_partition(self, replicas: list[int], replication_factor: int) -> list[int]:
        present = [b for b in replicas if b in self.paths]
        result = list(replicas)
        in_partition = _per_domain(self.paths, Counter(present))
        while len(result) < replication_factor:
            broker = self._least_filled(in_partition, set(result))
            result.append(broker)
            for domain in self.paths[broker]:
                in_partition[id(domain)] = in_partition.get(id(domain), 0) + 1
                self.topic_replicas[id(domain)] = self.topic_replicas.get(id(domain), 0) + 1
        if result and result[0] not in self.alive:
            return self._lead(result)
        return result

    def _least_filled(self, in_partition: dict[int, int], taken: set[int]) -> int:
        node = self.root
        while not node.is_broker:
            ring = self.rings[id(node)]
            options = [c for c in ring if _free(c, in_partition, taken)]
            if not options:
                raise PlacementError("no broker left to add a replica to")
            node = min(options, key=lambda c: (in_partition.get(id(c), 0), self.topic_replicas.get(id(c), 0),
                                               self.all_replicas.get(id(c), 0)))
        return node.broker  # type: ignore[return-value]


def _free(domain: Domain, in_partition: dict[int, int], taken: set[int]) -> bool:
    if domain.is_broker:
        return domain.broker not in taken
    return in_partition.get(id(domain), 0) < domain.capacity


def _per_domain(paths: dict[int, tuple[Domain, ...]], per_broker: Mapping[int, float]) -> dict[int, float]:
    """Broker figures summed up every domain above each broker (keyed by ``id(domain)``)."""
    counts: dict[int, float] = {}
    for broker, n in per_broker.items():
        if n:
            for domain in paths.get(broker, ()):
                counts[id(domain)] = counts.get(id(domain), 0) + n
    return counts
