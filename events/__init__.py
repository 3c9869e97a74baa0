"""The bus contract: every event schema and topic name Ballast uses, in one place."""

from events.envelope import Envelope
from events.models import (
    BrokerForgotten,
    Condition,
    DeadLetter,
    ObservedBroker,
    PlaceholderRecord,
    PlacementRequest,
    PlacementResponse,
    PlacerName,
    ReplicasChangeCommand,
    ReplicasChangeRecord,
    ReplicasChangeState,
    ReplicasChangeStatus,
    TopicSpec,
    TopicSpecDeleted,
    TopicStatus,
)
from events.serde import Decoded, InvalidEvent, decode, encode
from events.topics import TOPICS, Topics

__all__ = [
    "TOPICS",
    "BrokerForgotten",
    "Condition",
    "DeadLetter",
    "Decoded",
    "Envelope",
    "InvalidEvent",
    "ObservedBroker",
    "PlaceholderRecord",
    "PlacementRequest",
    "PlacementResponse",
    "PlacerName",
    "ReplicasChangeCommand",
    "ReplicasChangeRecord",
    "ReplicasChangeState",
    "ReplicasChangeStatus",
    "TopicSpec",
    "TopicSpecDeleted",
    "TopicStatus",
    "Topics",
    "decode",
    "encode",
]
