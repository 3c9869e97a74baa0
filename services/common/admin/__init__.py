"""Cluster-admin port: topics, partitions, configs and brokers of the managed cluster."""

from services.common.admin.port import (
    INTRA_BROKER_THROTTLE,
    AdminError,
    Assignment,
    BrokerInfo,
    ClusterAdmin,
    LogDirInfo,
    LogDirReplica,
    PartitionInfo,
    Reassignment,
    ReplicaInfo,
    TopicAlreadyExists,
    TopicDescription,
    UnknownTopic,
    Unsupported,
)
from services.common.admin.factory import make_cluster_admin

__all__ = [
    "INTRA_BROKER_THROTTLE",
    "AdminError",
    "Assignment",
    "BrokerInfo",
    "ClusterAdmin",
    "LogDirInfo",
    "LogDirReplica",
    "PartitionInfo",
    "Reassignment",
    "ReplicaInfo",
    "TopicAlreadyExists",
    "TopicDescription",
    "UnknownTopic",
    "Unsupported",
    "make_cluster_admin",
]
