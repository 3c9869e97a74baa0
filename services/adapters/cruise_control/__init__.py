"""Cruise Control REST port: one async httpx client with typed responses."""

from services.adapters.cruise_control.client import CruiseControlClient, Submission
from services.adapters.cruise_control.options import OptimizationOptions
from services.adapters.cruise_control.topic_names import all_topics_but, compact_topic_regex, topic_regex
from services.adapters.cruise_control.errors import (
    AuthorizationError,
    ClusterModelNotReady,
    ConnectionFailed,
    CruiseControlError,
    MalformedAnswer,
    OngoingExecution,
    RequestRejected,
    ServletFull,
    StillComputing,
)
from services.adapters.cruise_control.models import (
    CruiseControlState,
    ErrorResponse,
    KafkaClusterState,
    OptimizationResult,
    ProgressResponse,
    TaskStatus,
    UserTask,
    UserTasks,
)

__all__ = [
    "OptimizationOptions",
    "AuthorizationError",
    "ClusterModelNotReady",
    "ConnectionFailed",
    "CruiseControlClient",
    "CruiseControlError",
    "MalformedAnswer",
    "CruiseControlState",
    "ErrorResponse",
    "KafkaClusterState",
    "OngoingExecution",
    "OptimizationResult",
    "ProgressResponse",
    "RequestRejected",
    "ServletFull",
    "StillComputing",
    "Submission",
    "TaskStatus",
    "UserTask",
    "UserTasks",
    "all_topics_but",
    "compact_topic_regex",
    "topic_regex",
]
