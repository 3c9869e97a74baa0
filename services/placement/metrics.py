"""How good a placement is: the measures of ``placement.md``, used by the tests, the benchmark and ``ballast place``.

Everything is computed from the cluster view alone, so any placer (or a hand-made assignment) can be judged.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from services.placement.model import Broker, ClusterView
from services.placement.rack_tree import Domain, broker_paths, build_tree
from events import placeholders as placeholder


@dataclass
class Quality:
    partitions: int = 0
    replicas: int = 0
    # Problems that make an assignment unusable: duplicate brokers, unknown brokers, a leader that is not alive.
    invalid: list[str] = field(default_factory=list)
    # Level (1 = first level below the root) -> partitions where a domain at that level holds more replicas of the
    # partition than the best spread allows.
    spread_violations: dict[int, int] = field(default_factory=dict)
    # Level -> largest difference between the replica totals of sibling domains of equal capacity.
    sibling_total_range: dict[int, int] = field(default_factory=dict)
    replicas_per_broker: tuple[int, int] = (0, 0)
    leaders_per_broker: tuple[int, int] = (0, 0)
    # Largest (max - min) over single topics, across the brokers the topic could use.
    topic_replicas_range: int = 0
    topic_leaders_range: int = 0
    # Fraction of partitions with two or more replicas in one top-level domain while another top-level domain has none.
    top_level_doubled: float = 0.0

    @property
    def replicas_range(self) -> int:
        return self.replicas_per_broker[1] - self.replicas_per_broker[0]

    @property
    def leaders_range(self) -> int:
        return self.leaders_per_broker[1] - self.leaders_per_broker[0]

    @property
    def spread_ok(self) -> bool:
        return not any(self.spread_violations.values())


def best_spread(k: int, capacities: Sequence[int]) -> int:
    """The smallest per-child maximum that fits k replicas into children of these capacities (ceil(k / n) when each
    child can take that many)."""
    if k <= 0:
        return 0
    low = -(-k // len(capacities))
    while sum(min(c, low) for c in capacities) < k and low < k:
        low += 1
    return low


def evaluate(cluster: ClusterView, topics: Iterable[str] | None = None, brokers: Iterable[Broker] | None = None
             ) -> Quality:
    """Judge the assignments of ``topics`` (default: all) against the rack tree of ``brokers`` (default: the
    cluster's). Counts per broker are cluster-wide over the same topics."""
    brokers = list(brokers if brokers is not None else cluster.brokers)
    names = list(topics) if topics is not None else list(cluster.assignments)
    racked = all(b.rack and b.rack.startswith("/") for b in brokers)
    root = build_tree(brokers) if racked else None
    paths = broker_paths(root) if root else {}
    alive = {b.id for b in brokers if b.alive}
    known = {b.id for b in brokers}
    quality = Quality()
    replicas = dict.fromkeys(known, 0)
    leaders = dict.fromkeys(known, 0)
    doubled = 0
    for name in names:
        topic_replicas = dict.fromkeys(known, 0)
        topic_leaders = dict.fromkeys(known, 0)
        for index, partition in enumerate(cluster.assignments.get(name, [])):
            quality.partitions += 1
            real = placeholder.real(partition)
            quality.replicas += len(real)
            if len(set(partition)) != len(partition):
                quality.invalid.append(f"{name}-{index}: a broker appears twice in {list(partition)}")
            if unknown := [b for b in real if b not in known]:
                quality.invalid.append(f"{name}-{index}: unknown broker(s) {unknown}")
            if not partition or partition[0] not in alive:
                quality.invalid.append(f"{name}-{index}: leader {partition[0] if partition else None} is not alive")
            for b in real:
                if b in known:
                    replicas[b] += 1
                    topic_replicas[b] += 1
            if partition and partition[0] in known:
                leaders[partition[0]] += 1
                topic_leaders[partition[0]] += 1
            if root is not None:
                doubled += _check_spread(root, paths, real, quality.spread_violations)
        if any(topic_replicas.values()):
            quality.topic_replicas_range = max(quality.topic_replicas_range, _range(topic_replicas.values()))
            quality.topic_leaders_range = max(quality.topic_leaders_range, _range(topic_leaders.values()))
    if known:
        quality.replicas_per_broker = (min(replicas.values()), max(replicas.values()))
        quality.leaders_per_broker = (min(leaders.values()), max(leaders.values()))
    if root is not None:
        _sibling_totals(root, replicas, 1, quality.sibling_total_range)
    quality.top_level_doubled = doubled / quality.partitions if quality.partitions else 0.0
    return quality


def _range(values: Iterable[int]) -> int:
    values = list(values)
    return max(values) - min(values) if values else 0


def _check_spread(root: Domain, paths: Mapping[int, tuple[Domain, ...]], replicas: list[int],
                  violations: dict[int, int]) -> int:
    in_domain: dict[int, int] = {}
    for b in replicas:
        for domain in paths.get(b, ()):
            in_domain[id(domain)] = in_domain.get(id(domain), 0) + 1
    violated: set[int] = set()

    def visit(node: Domain, level: int) -> None:
        k = in_domain.get(id(node), 0)
        if k == 0 or node.is_broker:
            return
        allowed = best_spread(k, [c.capacity for c in node.children])
        for child in node.children:
            if in_domain.get(id(child), 0) > allowed and not child.is_broker:
                violated.add(level)
            visit(child, level + 1)

    visit(root, 1)
    for level in violated:
        violations[level] = violations.get(level, 0) + 1
    top = [in_domain.get(id(c), 0) for c in root.children]
    return int(len(top) > 1 and max(top) >= 2 and min(top) == 0)


def _sibling_totals(node: Domain, replicas: Mapping[int, int], level: int, out: dict[int, int]) -> int:
    if node.is_broker:
        return replicas.get(node.broker, 0)  # type: ignore[arg-type]
    totals = [(child.capacity, _sibling_totals(child, replicas, level + 1, out)) for child in node.children]
    if node.children and not node.children[0].is_broker:
        by_capacity: dict[int, list[int]] = {}
        for capacity, total in totals:
            by_capacity.setdefault(capacity, []).append(total)
        worst = max(_range(group) for group in by_capacity.values())
        out[level] = max(out.get(level, 0), worst)
    return sum(total for _, total in totals)


def moved_replicas(before: Mapping[str, Sequence[Sequence[int]]], after: Mapping[str, Sequence[Sequence[int]]]) -> int:
    """Replicas that must be copied to a broker that did not hold them: the cost of going from before to after."""
    moved = 0
    for topic, partitions in after.items():
        old = before.get(topic, [])
        for index, replicas in enumerate(partitions):
            had = set(old[index]) if index < len(old) else set()
            moved += sum(1 for b in placeholder.real(replicas) if b not in had)
    return moved


def is_symmetric(root: Domain) -> bool:
    """Every domain's children have the same capacity: the topologies where per-broker balance is achievable
    together with the spread."""
    return all(len({c.capacity for c in node.children}) <= 1 for node in root.walk() if node.children)
