"""``multi-level``: replicas spread level by level over a rack tree (KIP-879's idea), each topic evenly over the
brokers, the one more of each going to the brokers that hold fewer replicas and leaderships of the others.

Rack ids form a tree (``/dc1/r1``). A partition's ``k`` replicas arriving at a domain give each child at most
``best_spread(k)`` of them (ceil(k / children) when the children are large enough), at every level: the spread rule.
Within it, a topic's own spread comes first (as Kafka's placer spreads every topic, and Cruise Control keeps a
per-topic distribution goal): at each domain, top down, the children receive the replicas that raise their brokers'
counts of this topic to one common line, each child no more than the spread rule lets it take, nested domain by
nested domain, and each broker at most one replica per partition; so every broker ends within one of the others for
this topic, as far as the spread rule allows. The skew of the other topics is compensated within that: units left
below the next line (the "one more") go to the child holding fewest replicas (all topics, then this topic), then
leading fewest, then carrying less load (``ClusterView.load``, from the Spark aggregates), then the earlier in a
seeded ring; sibling domains of the same size are then evened to within one where no broker of the topic goes
beyond the line + 1. Each domain then deals its share to the partitions: one replica per partition in rounds,
several in McNaughton's wrap-around, so no child exceeds its share of any partition.

Leaders are water-filled the same way over the topic's own leaderships (never more than the partitions a broker
hosts), the cluster's deciding who leads one more, then matched to partitions (``leaders.choose_leaders``).

Raising the replication factor or filling a placeholder adds replicas one at a time, each to the least-filled
domain at every level (fewest replicas of this partition, then fewest replicas per broker of this topic, then of
all topics), so it continues the same spread instead of starting over.
"""

from __future__ import annotations

import math
import random
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence

from services.placement.leaders import choose_leaders, hosted_counts
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
from services.placement.water import Group, fill, water_line
from events import placeholders as placeholder


# Added to the level of a broker that is not alive: above anything an alive broker can reach.
_FILLED_LAST = 1 << 40


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
        partitions = layout.place(spec.partitions, spec.replication_factor)
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
    """One placement run: what every broker and domain already holds, and the rings that break ties."""

    def __init__(self, root: Domain, cluster: ClusterView, topic: str, first_partition: int,
                 rng: random.Random) -> None:
        self.root = root
        self.paths = broker_paths(root)
        self.alive = {b.id for b in cluster.brokers if b.state is BrokerState.ALIVE}
        existing = list(cluster.assignments.get(topic, []))[:first_partition]
        topic_on = Counter(b for r in existing for b in r if b in self.paths)
        # The other topics' replicas and leaders: counted by the view (kept as placements go, where its maker keeps
        # them), not here for every placement.
        other_on = {b: n for b, n in cluster.replica_counts(exclude_topic=topic).items() if b in self.paths}
        self.topic_on = {b: topic_on[b] for b in self.paths}
        self.topic_replicas = _per_domain(self.paths, topic_on)
        self.all_replicas = _per_domain(self.paths, other_on)
        self.topic_leaders = {b: 0 for b in self.paths}
        others_lead = cluster.leader_counts(exclude_topic=topic)
        self.all_leaders = {b: others_lead.get(b, 0) for b in self.paths}
        for replicas in existing:
            if replicas and replicas[0] in self.topic_leaders:
                self.topic_leaders[replicas[0]] += 1
        self.topic_leaders_in = _per_domain(self.paths, self.topic_leaders)
        self.all_leaders_in = _per_domain(self.paths, self.all_leaders)
        self.load_in = _per_domain(self.paths, {b: v for b, v in cluster.load.items() if b in self.paths})
        self.brokers_under: dict[int, list[int]] = {}
        for broker, path in self.paths.items():
            for domain in path:
                self.brokers_under.setdefault(id(domain), []).append(broker)
        # The rings: each domain's children from a seeded random start, emptiest first. Where the water-filling
        # leaves a choice, the earlier child in the ring takes it.
        self.rings: dict[int, list[Domain]] = {}
        for node in root.walk():
            if node.children:
                start = rng.randrange(len(node.children))
                ring = node.children[start:] + node.children[:start]
                ring.sort(key=lambda c: (self.topic_replicas.get(id(c), 0), self.all_replicas.get(id(c), 0),
                                         self.topic_leaders_in.get(id(c), 0) + self.all_leaders_in.get(id(c), 0),
                                         self.load_in.get(id(c), 0)))
                self.rings[id(node)] = ring
        self._allowed: dict[tuple[int, int], int] = {}

    # Fresh partitions: water-filling, level by level.

    def place(self, count: int, replication_factor: int) -> list[list[int]]:
        """The replicas of ``count`` new partitions, followers in ring order (leaders are chosen afterwards)."""
        partitions: list[list[int]] = [[] for _ in range(count)]
        self._distribute(self.root, list(range(count)), replication_factor, partitions)
        return partitions

    def _distribute(self, node: Domain, rows: list[int], ks: int | list[int], out: list[list[int]]) -> None:
        """Send ``ks`` replicas of each partition in ``rows`` (one figure for all, or one per row) into ``node``."""
        if node.broker is not None:
            broker = node.broker
            for row in rows:
                out[row].append(broker)
            return
        ring = self.rings[id(node)]
        if len(ring) == 1:
            self._distribute(ring[0], rows, ks, out)
            return
        targets = self._targets(node, ring, rows, ks)
        for child, (child_rows, child_ks) in zip(ring, _split(rows, ks, targets,
                                                              lambda i, k: self._limit(node, ring[i], k))):
            if child_rows:
                self._distribute(child, child_rows, child_ks, out)

    def _limit(self, node: Domain, child: Domain, k: int) -> int:
        """The most of one partition's ``k`` replicas in ``node`` that ``child`` may hold: the spread rule."""
        allowed = self._allowed.get((id(node), k))
        if allowed is None:
            allowed = self._allowed[(id(node), k)] = best_spread(k, [c.capacity for c in node.children])
        return min(allowed, child.capacity)

    def _targets(self, node: Domain, ring: list[Domain], rows: list[int], ks: int | list[int]) -> list[int]:
        """How many of the replicas arriving at ``node`` each child receives: water-filled over the brokers' replica
        counts (every broker at most one replica per partition, every child what the spread rule allows)."""
        per_k = Counter(ks) if isinstance(ks, list) else Counter({ks: len(rows)})
        units = sum(k * n for k, n in per_k.items())
        groups = [self._group(child, self._below(node, child, per_k), len(rows)) for child in ring]
        keys = [id(child) for child in ring]
        held = [self.topic_replicas.get(key, 0) + self.all_replicas.get(key, 0) for key in keys]

        def tie_break(index: int, given: int) -> tuple:
            key = keys[index]
            return (held[index] + given, self.topic_replicas.get(key, 0) + given,
                    self.topic_leaders_in.get(key, 0) + self.all_leaders_in.get(key, 0),
                    self.load_in.get(key, 0), index)

        line = water_line(units, groups)
        targets = fill(units, groups, tie_break, line=line)
        if sum(targets) < units:
            raise PlacementError(f"{node.path}: no room for {units} replicas within the spread rule")
        # Siblings evened within what keeps the topic's brokers within one of each other: none above the line + 1.
        _even_siblings(targets, held, ring, groups, line, line)
        return targets

    def _group(self, node: Domain, per_k: dict[int, int], rows: int) -> Group:
        """``node`` as a water-filling group when it receives at most ``k`` replicas of ``per_k[k]`` partitions:
        its cap, and its children's caps below it, from the spread rule."""
        if node.broker is not None:
            # A broker that is not alive (fenced, or offline and observed) is filled last, as KRaft uses fenced
            # brokers only when the unfenced ones run out: only where the spread rule leaves no alive choice.
            # The topic's own replicas are the level, so that its spread comes first: every broker ends within one
            # of the others for this topic (as far as the spread rule allows); the skew of the other topics only
            # decides, in ``_targets``' tie-break, which brokers take the one more.
            level = self.topic_on[node.broker] + (0 if node.broker in self.alive else _FILLED_LAST)
            return Group([(level, rows)], rows)
        cap = sum(k * n for k, n in per_k.items())
        if len(node.children) == 1:
            return Group((), cap, [self._group(node.children[0], per_k, rows)])
        return Group((), cap, [self._group(child, self._below(node, child, per_k), rows) for child in node.children])

    def _below(self, node: Domain, child: Domain, per_k: dict[int, int]) -> dict[int, int]:
        """What ``child`` may receive when ``node`` receives ``per_k``: the spread rule applied to every k."""
        below: dict[int, int] = {}
        for k, n in per_k.items():
            limit = self._limit(node, child, k)
            below[limit] = below.get(limit, 0) + n
        return below

    def leader_quotas(self, count: int, hosted: dict[int, int]) -> dict[int, int]:
        """How many of ``count`` new partitions each broker should lead: water-filled over the leaderships brokers
        already hold (never more than the partitions a broker hosts), level by level so that sibling domains stay
        within one of each other where the counts tie."""
        can_lead = _per_domain(self.paths, hosted)
        quota: dict[int, int] = {}

        def split(node: Domain, units: int) -> None:
            if node.broker is not None:
                quota[node.broker] = units
                return
            ring = self.rings[id(node)]
            # The topic's own leaderships are the level (its leaders spread first); the cluster's decide the ties.
            groups = [Group([(self.topic_leaders[b], hosted.get(b, 0)) for b in self.brokers_under[id(child)]],
                            units) for child in ring]
            keys = [id(child) for child in ring]

            def tie_break(index: int, given: int) -> tuple:
                # Ties go to domains holding more replicas: leaders then grow where replicas did, so the domains
                # left with fewer replicas also keep fewer leaders, and a later topic that must use them (RF 1)
                # can lead there.
                key = keys[index]
                replicas = self.all_replicas.get(key, 0) + self.topic_replicas.get(key, 0) + can_lead.get(key, 0)
                return (self.topic_leaders_in.get(key, 0) + self.all_leaders_in.get(key, 0) + given,
                        self.topic_leaders_in.get(key, 0) + given, -replicas, index)

            for child, share in zip(ring, fill(units, groups, tie_break)):
                if share:
                    split(child, share)

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
            # Fewest of this partition (the spread), then the fewest replicas per broker of this topic (its own
            # spread), then of all topics (the skew).
            node = min(options, key=lambda c: (in_partition.get(id(c), 0),
                                               self.topic_replicas.get(id(c), 0) / c.capacity,
                                               (self.topic_replicas.get(id(c), 0) + self.all_replicas.get(id(c), 0))
                                               / c.capacity))
        return node.broker  # type: ignore[return-value]


def _even_siblings(targets: list[int], held: list[int], ring: list[Domain], groups: list[Group], line: int,
                   best_max: int) -> None:
    """Bring sibling domains of equal capacity within one of each other where the water-filling left them further
    apart (a domain whose own spread rule keeps its brokers from taking more): a unit moves from the fuller to the
    emptier as long as no broker of the receiver goes above the best maximum + 1 and none of the giver below the
    water line, so every broker stays within one of the best."""
    by_capacity: dict[int, list[int]] = {}
    for index, child in enumerate(ring):
        by_capacity.setdefault(child.capacity, []).append(index)
    for members in by_capacity.values():
        if len(members) < 2:
            continue
        most = {i: groups[i].need(best_max + 1) for i in members}
        least = {i: groups[i].need(line) for i in members}
        while True:
            fuller = max(members, key=lambda i: (held[i] + targets[i], -i))
            emptier = min(members, key=lambda i: (held[i] + targets[i], i))
            if held[fuller] + targets[fuller] - held[emptier] - targets[emptier] < 2 \
                    or targets[emptier] >= most[emptier] \
                    or targets[fuller] <= least[fuller]:
                break
            targets[fuller] -= 1
            targets[emptier] += 1


def _split(rows: list[int], ks: int | list[int], targets: list[int], limit: Callable[[int, int], int]
           ) -> list[tuple[list[int], int | list[int]]]:
    """Deal the partitions in ``rows`` (``ks`` replicas each) to children so that child ``i`` receives
    ``targets[i]`` replicas and never more than ``limit(i, k)`` of one partition's ``k``. Partitions asking for more
    replicas go first, each child taking from them in proportion to what it still has to receive (Ryser's order,
    which meets any targets that can be met)."""
    if isinstance(ks, int):
        return _deal(rows, targets) if ks == 1 else _columns(rows, ks, targets)
    by_k: dict[int, list[int]] = {}
    for row, k in zip(rows, ks):
        by_k.setdefault(k, []).append(row)
    remaining = list(targets)
    child_rows: list[list[int]] = [[] for _ in targets]
    child_ks: list[list[int]] = [[] for _ in targets]
    for k in sorted(by_k, reverse=True):
        group = by_k[k]
        rooms = [limit(i, k) * len(group) for i in range(len(targets))]
        shares = fill(k * len(group), [Group([(-left, room)], room) for left, room in zip(remaining, rooms)],
                      lambda index, given: (index,))
        pieces = _deal(group, shares) if k == 1 else _columns(group, k, shares)
        for index, (share, (piece_rows, piece_ks)) in enumerate(zip(shares, pieces)):
            remaining[index] -= share
            child_rows[index].extend(piece_rows)
            child_ks[index].extend([piece_ks] * len(piece_rows) if isinstance(piece_ks, int) else piece_ks)
    return [(r, 1 if all(k == 1 for k in c) else c) for r, c in zip(child_rows, child_ks)]


def _deal(rows: list[int], targets: list[int]) -> list[tuple[list[int], int | list[int]]]:
    """One replica per partition: round after round, one partition to each child that has not had its share."""
    if sum(targets) != len(rows):
        raise PlacementError(f"cannot deal {len(rows)} replicas to shares {targets}")
    pieces: list[list[int]] = [[] for _ in targets]
    active = [i for i, target in enumerate(targets) if target > 0]
    start = done = 0
    while active:
        rounds = min(targets[i] for i in active) - done
        width = len(active)
        end = start + rounds * width
        for offset, index in enumerate(active):  # the rounds in which the same children take part, as slices
            pieces[index].extend(rows[start + offset:end:width])
        start, done = end, done + rounds
        active = [i for i in active if targets[i] > done]
    return [(piece, 1) for piece in pieces]


def _columns(rows: list[int], k: int, targets: list[int]) -> list[tuple[list[int], int | list[int]]]:
    """``k`` replicas per partition (McNaughton's wrap-around): the k replica slots of all partitions in one long
    column-major line, each child a run of ``targets[i]`` consecutive slots. A run no longer than c columns meets a
    partition at most c times, so no child gets more of a partition than its share of the run allows."""
    n = len(rows)
    if sum(targets) != n * k:
        raise PlacementError(f"cannot lay {n} partitions x {k} replicas into shares {targets}")
    rows = _scattered(rows)
    pieces: list[tuple[list[int], int | list[int]]] = []
    start = 0
    for target in targets:
        offset = start % n
        full, part = divmod(target, n)
        if full == 0:
            pieces.append((_window(rows, offset, part), 1))
        elif part == 0:
            pieces.append((list(rows), full))
        else:
            extra = set(_window(list(range(n)), offset, part))
            pieces.append((list(rows), [full + (i in extra) for i in range(n)]))
        start += target
    return pieces


def _scattered(rows: list[int]) -> list[int]:
    """``rows`` visited with a stride coprime to their number: a child's run then holds partitions from all over the
    topic instead of one block, so the leaders (chosen afterwards, partition by partition) find every broker's
    quota in use everywhere."""
    n = len(rows)
    if n < 3:
        return rows
    stride = int(n * 0.6180339887) or 1
    while math.gcd(stride, n) != 1:
        stride += 1
    return [rows[(q * stride) % n] for q in range(n)]


def _window(items: list[int], offset: int, length: int) -> list[int]:
    end = offset + length
    return items[offset:end] if end <= len(items) else items[offset:] + items[:end - len(items)]


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
