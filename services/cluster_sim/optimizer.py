"""The simulated Cruise Control's optimizer: proposals for rebalance, add_broker, remove_broker, and between the
log directories of each broker (``rebalance_disk``, ``remove_disks``).

It runs Ballast's own placement algorithms on the simulator's cluster model (``services.placement.rebalance``):
add-brokers moves replicas only onto the new brokers, remove-brokers only off the removed ones, full evens replica
and leader counts; all keep the rack spread (the rack ids read as a tree, as the multi-level placer does; ids that
are not paths count as one level, which is Cruise Control's flat rack awareness)."""

from __future__ import annotations

import re

from collections.abc import Mapping, Set

from services.cluster_sim.load import LoadModel
from services.cluster_sim.model import Cluster, IntraBrokerMove, ReplicaMove
from services.placement.disk_balance import Directory, NoDirectory, Replica, plan_moves
from services.placement.model import Broker, BrokerState, ClusterView
from services.placement.rebalance import drain, even_out, spread_onto

# IntraBrokerDiskUsageDistributionGoal: each disk within (disk.balance.threshold - 1) x BALANCE_MARGIN of the
# broker's average utilization (Cruise Control's defaults: 1.10 and 0.9).
DISK_BALANCE_THRESHOLD = 1.10
BALANCE_MARGIN = 0.9
# IntraBrokerDiskCapacityGoal / remove_disks: disk.capacity.threshold.
DISK_CAPACITY_THRESHOLD = 0.8
INTRA_BROKER_GOALS = ["IntraBrokerDiskCapacityGoal", "IntraBrokerDiskUsageDistributionGoal"]


class DiskRemovalRefused(ValueError):
    """remove_disks refused, with Cruise Control's words (``RemoveDisksRunnable.checkCanRemoveDisks``)."""


def cluster_view(cluster: Cluster, excluded: re.Pattern[str] | None = None,
                 avoid: Set[int] = frozenset()) -> ClusterView:
    """The optimizer's view: every broker, and the topics it may move (``excluded`` ones left out); ``avoid``:
    brokers that take no replica (removed recently: Cruise Control's excludedBrokersForReplicaMove)."""
    brokers = [Broker(b.id, _as_path(b.rack), BrokerState.ALIVE if b.alive and b.id not in avoid
                      else BrokerState.OFFLINE)
               for b in cluster.brokers.values()]
    assignments = {name: [list(p.replicas) for p in topic.partitions] for name, topic in cluster.topics.items()
                   if excluded is None or not excluded.fullmatch(name)}
    return ClusterView.of(brokers, assignments)


def _as_path(rack: str | None) -> str:
    if not rack:
        return "/none"
    return rack if rack.startswith("/") else f"/{rack}"


def propose(cluster: Cluster, mode: str, brokers: list[int], excluded_topics: str | None = None,
            avoid: Set[int] = frozenset()) -> list[ReplicaMove]:
    """Movements for ``mode`` (rebalance | add_broker | remove_broker). Raises PlacementError.

    ``excluded_topics`` (a regex) are left out of the optimization, so balance is reached by moving the other
    topics; as in Cruise Control, replicas on a broker being removed move whatever their topic. ``avoid``: brokers
    no replica moves to (removed recently)."""
    excluded = re.compile(excluded_topics) if excluded_topics else None
    if mode == "add_broker":
        after = spread_onto(cluster_view(cluster, excluded, avoid), brokers, only_onto_new=True)
    elif mode == "remove_broker":
        after = drain(cluster_view(cluster, avoid=avoid), brokers)
    else:
        after = even_out(cluster_view(cluster, excluded, avoid))
    return movements_to(cluster, after)


def movements_to(cluster: Cluster, after: Mapping[str, list[list[int]]]) -> list[ReplicaMove]:
    """The movements from the cluster's assignment to ``after`` (topic -> replicas per partition), changed ones only."""
    moves = []
    for name, parts in after.items():
        topic = cluster.topics[name]
        for partition, new in zip(topic.partitions, parts):
            if list(new) != list(partition.replicas):
                moves.append(ReplicaMove(name, partition.index, tuple(partition.replicas), tuple(new),
                                         partition.size_mb))
    return moves


def broker_disks(cluster: Cluster, load: LoadModel, broker_id: int, draining: Set[str] = frozenset()
                 ) -> tuple[list[Directory], list[Replica]]:
    """One broker's directories (capacity, bytes used, online) and the replicas in each, as the load model sees
    them."""
    broker = cluster.brokers[broker_id]
    replicas = []
    used = {d: 0.0 for d in broker.log_dirs}
    for topic in cluster.topics.values():
        for p in topic.partitions:
            if broker_id in p.replicas:
                log_dir = load.log_dir(topic.name, p, broker_id)
                replicas.append(Replica(topic.name, p.index, p.size_mb, log_dir))
                used[log_dir] = used.get(log_dir, 0.0) + p.size_mb
    dirs = [Directory(d, broker.capacity_mb(d), used.get(d, 0.0), online=d not in broker.offline_log_dirs,
                      draining=d in draining) for d in broker.log_dirs]
    return dirs, replicas


def _intra_moves(broker_id: int, dirs: list[Directory], replicas: list[Replica]) -> list[IntraBrokerMove]:
    online = [d for d in dirs if d.accepts]
    if not online:
        return []
    average = sum(d.used_mb for d in dirs if d.online) / sum(d.capacity_mb for d in online)
    tolerance = average * (DISK_BALANCE_THRESHOLD - 1) * BALANCE_MARGIN
    return [IntraBrokerMove(m.topic, m.partition, broker_id, m.source, m.destination, m.size_mb)
            for m in plan_moves(dirs, replicas, tolerance=tolerance)]


def propose_disk_balance(cluster: Cluster, load: LoadModel) -> list[IntraBrokerMove]:
    """``rebalance?rebalance_disk=true``: within each alive broker, disks evened out to the usage-distribution
    goal's band; no replica changes broker."""
    moves: list[IntraBrokerMove] = []
    for broker_id in sorted(cluster.alive_ids):
        if len(cluster.brokers[broker_id].log_dirs) > 1:
            moves.extend(_intra_moves(broker_id, *broker_disks(cluster, load, broker_id)))
    return moves


def propose_remove_disks(cluster: Cluster, load: LoadModel, removal: Mapping[int, Set[str]]) -> list[IntraBrokerMove]:
    """``remove_disks``: every replica off the named directories, onto the broker's other disks."""
    moves: list[IntraBrokerMove] = []
    for broker_id, removing in sorted(removal.items()):
        broker = cluster.brokers[broker_id]
        if not set(removing) <= set(broker.log_dirs):
            raise DiskRemovalRefused(f"Invalid log dirs provided for broker {broker_id}.")
        if len(broker.log_dirs) == len(set(removing)):
            raise DiskRemovalRefused(f"No log dir remaining to move replicas to for broker {broker_id}.")
        dirs, replicas = broker_disks(cluster, load, broker_id, draining=removing)
        remaining = sum(d.capacity_mb for d in dirs if not d.draining)
        if sum(d.used_mb for d in dirs) / remaining > DISK_CAPACITY_THRESHOLD:
            raise DiskRemovalRefused(f"Not enough remaining capacity to move replicas to for broker {broker_id}.")
        try:
            # Only what must leave: the other disks are not rebalanced among themselves.
            moves.extend(m for m in _intra_moves(broker_id, dirs, replicas) if m.source in removing)
        except NoDirectory as exc:
            raise DiskRemovalRefused(f"No log dir remaining to move replicas to for broker {broker_id}.") from exc
    return moves
