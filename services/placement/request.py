"""The seed's ``createReplicaPlacement(numPartitions, replicationFactor, forceSimplePlacement, brokerIds)``: one
entry point for every caller (the topic reconciler, ``ballast place``) so they place alike."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from services.placement.model import Assignment, ClusterView, PlacementSpec
from services.placement.placer import place, placer_named


def create_replica_placement(cluster: ClusterView, topic: str, partitions: int, replication_factor: int, *,
                             placer: str, seed: int | None, force_simple_placement: bool = False,
                             broker_ids: Iterable[int] | None = None, use_offline_brokers: bool = False
                             ) -> Assignment:
    """Replicas for ``partitions`` new partitions of ``topic``, numbered after those it already has in ``cluster``
    (so adding partitions continues where the placement left off). ``force_simple_placement`` ignores racks, as
    Kafka's ``--disable-rack-aware`` does. Raises PlacementError."""
    if force_simple_placement:
        cluster = replace(cluster, brokers=tuple(replace(b, rack=None) for b in cluster.brokers))
        placer = "striped"
    first = len(cluster.assignments.get(topic, []))
    spec = PlacementSpec(partitions, replication_factor, first_partition=first, topic=topic,
                         use_offline_brokers=use_offline_brokers)
    return place(spec, cluster, placer_named(placer, seed), broker_ids, seed=seed)
