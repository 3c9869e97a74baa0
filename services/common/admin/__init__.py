"""Cluster-admin port: topics, partitions, configs and brokers of the managed cluster."""

from services.common.admin.port import (
    AdminError,
    BrokerInfo,
    ClusterAdmin,
    PartitionInfo,
    TopicAlreadyExists,
    TopicDescription,
    UnknownTopic,
    make_cluster_admin,
)

__all__ = [
    "AdminError",
    "BrokerInfo",
    "ClusterAdmin",
    "PartitionInfo",
    "TopicAlreadyExists",
    "TopicDescription",
    "UnknownTopic",
    "make_cluster_admin",
]
