"""The bus contract: every event schema and topic name Ballast uses, in one place."""

from events.conditions import Condition
from events.dead_letters import DeadLetter
from events.envelope import Envelope
from events.names import PlacerName
from events.placement import (
    BrokerForgotten,
    ObservedBroker,
    PlaceholderRecord,
    PlacedReplica,
    PlacementReason,
    PlacementRequest,
    PlacementResponse,
    ReplicasPlaced,
)
from events.replicas_change import (
    ReplicasChangeBatch,
    ReplicasChangeCommand,
    ReplicasChangeRecord,
    ReplicasChangeState,
    ReplicasChangeStatus,
)
from events.topic_specs import TopicSpec, TopicSpecDeleted
from events.topic_status import TopicStatus
from events.load import BrokerLoadSample, LoadAggregate, LogDirLoadSample, PartitionLoadSample
from events.rebalance import (
    BrokerLoadChange,
    BrokerLogDirs,
    BrokerRemovalRequested,
    BrokerStatus,
    CruiseControlThrottle,
    DiskRemoval,
    KnownBrokers,
    LogDirState,
    ProposalSummary,
    RebalanceAction,
    RebalanceMode,
    RebalanceProgress,
    RebalanceRequest,
    RebalanceState,
    RebalanceStatus,
    ThrottledReplicas,
)
from events.throttle import (
    BrokerThrottle,
    LogDirThrottle,
    ThrottleLedger,
    ThrottleRateChanged,
    ThrottleStatus,
)
from events.serde import Decoded, InvalidEvent, decode, encode
from events.topics import TOPICS, Topics

__all__ = [
    "BrokerLoadSample",
    "LoadAggregate",
    "LogDirLoadSample",
    "PartitionLoadSample",
    "BrokerLoadChange",
    "BrokerLogDirs",
    "BrokerRemovalRequested",
    "BrokerStatus",
    "CruiseControlThrottle",
    "DiskRemoval",
    "KnownBrokers",
    "LogDirState",
    "ProposalSummary",
    "RebalanceAction",
    "RebalanceMode",
    "RebalanceProgress",
    "RebalanceRequest",
    "RebalanceState",
    "RebalanceStatus",
    "ThrottledReplicas",
    "TOPICS",
    "BrokerThrottle",
    "LogDirThrottle",
    "ThrottleLedger",
    "ThrottleRateChanged",
    "ThrottleStatus",
    "BrokerForgotten",
    "Condition",
    "DeadLetter",
    "Decoded",
    "Envelope",
    "InvalidEvent",
    "ObservedBroker",
    "PlaceholderRecord",
    "PlacedReplica",
    "PlacementReason",
    "PlacementRequest",
    "PlacementResponse",
    "PlacerName",
    "ReplicasChangeBatch",
    "ReplicasChangeCommand",
    "ReplicasChangeRecord",
    "ReplicasChangeState",
    "ReplicasPlaced",
    "ReplicasChangeStatus",
    "TopicSpec",
    "TopicSpecDeleted",
    "TopicStatus",
    "Topics",
    "decode",
    "encode",
]
