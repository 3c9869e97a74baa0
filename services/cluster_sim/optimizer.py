"""The simulated Cruise Control's optimizer: proposals for rebalance, add_broker and remove_broker.

It runs Ballast's own placement algorithms on the simulator's cluster model (``services.placement.rebalance``):
add-brokers moves replicas only onto the new brokers, remove-brokers only off the removed ones, full evens replica
and leader counts; all keep the rack spread (the rack ids read as a tree, as the multi-level placer does; ids that
are not paths count as one level, which is Cruise Control's flat rack awareness)."""

from __future__ import annotations

import re

from services.cluster_sim.model import Cluster, ReplicaMove
from services.placement.model import Broker, BrokerState, ClusterView
from services.placement.rebalance import drain, even_out, spread_onto


def cluster_view(cluster: Cluster, excluded: re.Pattern[str] | None = None) -> ClusterView:
    """The optimizer's view: every broker, and the topics it may move (``excluded`` ones left out)."""
    brokers = [Broker(b.id, _as_path(b.rack), BrokerState.ALIVE if b.alive else BrokerState.OFFLINE)
               for b in cluster.brokers.values()]
    assignments = {name: [list(p.replicas) for p in topic.partitions] for name, topic in cluster.topics.items()
                   if excluded is None or not excluded.fullmatch(name)}
    return ClusterView.of(brokers, assignments)


def _as_path(rack: str | None) -> str:
    if not rack:
        return "/none"
    return rack if rack.startswith("/") else f"/{rack}"


def propose(cluster: Cluster, mode: str, brokers: list[int], excluded_topics: str | None = None
            ) -> list[ReplicaMove]:
    """Movements for ``mode`` (rebalance | add_broker | remove_broker). Raises PlacementError.

    ``excluded_topics`` (a regex) are left out of the optimization, so balance is reached by moving the other
    topics; as in Cruise Control, replicas on a broker being removed move whatever their topic."""
    excluded = re.compile(excluded_topics) if excluded_topics else None
    if mode == "add_broker":
        after = spread_onto(cluster_view(cluster, excluded), brokers, only_onto_new=True)
    elif mode == "remove_broker":
        after = drain(cluster_view(cluster), brokers)
    else:
        after = even_out(cluster_view(cluster, excluded))
    moves = []
    for name, parts in after.items():
        topic = cluster.topics[name]
        for partition, new in zip(topic.partitions, parts):
            if list(new) != list(partition.replicas):
                moves.append(ReplicaMove(name, partition.index, tuple(partition.replicas), tuple(new),
                                         partition.size_mb))
    return moves
