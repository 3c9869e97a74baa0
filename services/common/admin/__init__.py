"""Cluster-admin port: topics, partitions, configs and brokers of the managed cluster."""

from services.common.admin.port import (
    AdminError,
    Assignment,
    BrokerInfo,
    ClusterAdmin,
    LogDirsUnsupported,
    PartitionInfo,
    ReassignmentUnsupported,
    TopicAlreadyExists,
    TopicDescription,
    UnknownTopic,
)
from services.common.admin.factory import make_cluster_admin

__all__ = [
    "AdminError",
    "Assignment",
    "BrokerInfo",
    "ClusterAdmin",
    "LogDirsUnsupported",
    "PartitionInfo",
    "ReassignmentUnsupported",
    "TopicAlreadyExists",
    "TopicDescription",
    "UnknownTopic",
    "make_cluster_admin",
]
