"""Creating topics while brokers are down (seed 002): placeholders for the replicas that cannot be placed yet.

Policies: ``disabled`` (Kafka's behaviour: every replica on an alive broker, or no topic), ``enabled`` (with fewer
alive brokers than the replication factor, place what fits on the alive ones and keep placeholders for the rest)
and ``enabled_prefer_observed`` (place over every broker ever observed, so the rack spread is the one the full
cluster would get; replicas that land on offline brokers become placeholders). Either way at least
min(min.insync.replicas, RF) replicas - or the spec's minRequiredReplicas - must be on alive brokers.

Kafka itself only takes the real replicas, and every partition of a manual assignment must have the same number of
them; placeholders live in Ballast's state (-1, -2, ... within a partition) until a broker joins or returns.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum

from services.placement.model import Assignment, BrokerState, ClusterView, PlacementError
from services.placement.request import create_replica_placement
from services.placement.selector import shared_levels
from events import placeholders as placeholder


class Policy(StrEnum):
    DISABLED = "disabled"
    ENABLED = "enabled"
    PREFER_OBSERVED = "enabled_prefer_observed"


@dataclass(frozen=True)
class Placed:
    """``assignment`` goes to Kafka; ``full`` is the same with placeholders appended where replicas are missing;
    ``intended`` names, per partition, the offline brokers its placeholders stand for (prefer-observed only)."""

    assignment: Assignment
    full: Assignment
    intended: dict[int, list[int]] = field(default_factory=dict)

    @property
    def placeholders(self) -> int:
        return placeholder.count(self.full)


def required_alive_replicas(replication_factor: int, config: dict[str, str], min_required: int | None) -> int:
    """How many replicas must be on alive brokers for an under-replicated creation."""
    if min_required is not None:
        return min(min_required, replication_factor)
    try:
        min_insync = int(config.get("min.insync.replicas", "1"))
    except ValueError:
        min_insync = 1
    return max(1, min(min_insync, replication_factor))


def place_topic(cluster: ClusterView, topic: str, partitions: int, replication_factor: int, *, placer: str,
                seed: int | None, policy: Policy | str, required: int) -> Placed:
    """Raises PlacementError with what would make the request placeable."""
    policy = Policy(policy)
    alive = [b for b in cluster.brokers if b.alive]
    offline = [b for b in cluster.brokers if not b.alive]

    def normal() -> Placed:
        assignment = create_replica_placement(cluster, topic, partitions, replication_factor, placer=placer,
                                              seed=seed)
        return Placed(assignment, assignment)

    if policy is Policy.DISABLED or (len(alive) >= replication_factor and not
                                     (policy is Policy.PREFER_OBSERVED and offline)):
        return normal()
    if replication_factor > len(cluster.brokers):
        raise PlacementError(
            f"replication factor {replication_factor} is above the {len(cluster.brokers)} brokers ever observed "
            f"({len(alive)} alive): under-replicated creation keeps room only for brokers that were seen")
    if len(alive) < required:
        raise PlacementError(
            f"only {len(alive)} broker(s) alive: creating {topic!r} under-replicated needs at least {required} "
            "replica(s) on alive brokers (min(min.insync.replicas, replication factor), or the spec's "
            "minRequiredReplicas)")
    if policy is Policy.PREFER_OBSERVED:
        placed = _over_observed(cluster, topic, partitions, replication_factor, placer, seed, required)
        if placed is not None:
            return placed
        if len(alive) >= replication_factor:
            return normal()
    return _on_alive(cluster, topic, partitions, replication_factor, placer, seed, len(alive))


def _on_alive(cluster: ClusterView, topic: str, partitions: int, replication_factor: int, placer: str,
              seed: int | None, alive: int) -> Placed:
    fits = min(alive, replication_factor)
    assignment = create_replica_placement(cluster, topic, partitions, fits, placer=placer, seed=seed)
    return Placed(assignment, [list(r) + placeholder.placeholders(replication_factor - fits) for r in assignment])


def _over_observed(cluster: ClusterView, topic: str, partitions: int, replication_factor: int, placer: str,
                   seed: int | None, required: int) -> Placed | None:
    """Offline brokers take part as fenced ones do in KRaft: followers only, after the alive ones where the placer
    has a choice. None when the result cannot go to Kafka (too few alive replicas in a partition, or partitions
    with different numbers of them)."""
    as_fenced = replace(cluster, brokers=tuple(
        b if b.alive else replace(b, state=BrokerState.FENCED) for b in cluster.brokers))
    alive_ids = {b.id for b in cluster.brokers if b.alive}
    assignment = create_replica_placement(as_fenced, topic, partitions, replication_factor, placer=placer,
                                          seed=seed, use_offline_brokers=True)
    real = [[b for b in replicas if b in alive_ids] for replicas in assignment]
    if len({len(r) for r in real}) != 1 or len(real[0]) < required:
        return None
    full, intended = [], {}
    for index, replicas in enumerate(assignment):
        missing = [b for b in replicas if b not in alive_ids]
        full.append(real[index] + placeholder.placeholders(len(missing)))
        if missing:
            intended[index] = missing
    return Placed(real, full, intended)


def fill_placeholders(full: Sequence[Sequence[int]], intended: dict[int, list[int]], cluster: ClusterView
                      ) -> tuple[dict[int, list[int]], Assignment]:
    """Brokers for the placeholders that can be filled now. A placeholder kept for an observed broker waits for
    that broker (filling it elsewhere would give up the spread it was kept for); the others take the alive broker
    sharing the least of the rack path with the partition's replicas, then the one holding fewest replicas, never
    one the partition has. Returns the partitions to reassign (their real replicas, new ones last) and the full
    assignment after it."""
    alive = sorted(b.id for b in cluster.brokers if b.alive)
    racks = {b.id: b.rack or "/" for b in cluster.brokers}
    load = cluster.replica_counts()
    changes: dict[int, list[int]] = {}
    after: Assignment = []
    for index, replicas in enumerate(full):
        real = placeholder.real(replicas)
        missing = len(replicas) - len(real)
        waiting_for = intended.get(index, [])
        picks = [b for b in waiting_for if b in alive and b not in real][:missing]
        free = missing - len(waiting_for)  # placeholders not kept for a particular broker
        while free > 0:
            options = [b for b in alive if b not in real and b not in picks]
            if not options:
                break
            placed = real + picks
            best = min(options, key=lambda b: (max((shared_levels(racks[b], racks.get(r, "/")) for r in placed),
                                                   default=0), load.get(b, 0), b))
            picks.append(best)
            load[best] = load.get(best, 0) + 1
            free -= 1
        if picks:
            changes[index] = real + picks
        after.append(real + picks + placeholder.placeholders(missing - len(picks)))
    return changes, after
