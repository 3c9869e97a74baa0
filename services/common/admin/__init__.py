"""Cluster-admin port: topics, partitions, configs and brokers of the managed cluster."""

from services.common.admin.port import (
    INTRA_BROKER_THROTTLE,
    AdminError,
    Assignment,
    BrokerInfo,
    ClusterAdmin,
    ClusterUnavailable,
    LogDirInfo,
    LogDirReplica,
    OperationRefused,
    PartitionInfo,
    Reassignment,
    ReplicaInfo,
    TopicAlreadyExists,
    TopicDescription,
    UnknownTopic,
    UnreadableAnswer,
    Unsupported,
)
from services.common.admin.factory import make_cluster_admin

__all__ = [
    "INTRA_BROKER_THROTTLE",
    "AdminError",
    "Assignment",
    "BrokerInfo",
    "ClusterAdmin",
    "ClusterUnavailable",
    "LogDirInfo",
    "LogDirReplica",
    "OperationRefused",
    "PartitionInfo",
    "Reassignment",
    "ReplicaInfo",
    "TopicAlreadyExists",
    "TopicDescription",
    "UnknownTopic",
    "UnreadableAnswer",
    "Unsupported",
    "make_cluster_admin",
]
