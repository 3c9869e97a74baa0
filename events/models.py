"""Pydantic models for every event on the bus.

JSON field names are camelCase, as in Strimzi's KafkaTopic status (``replicasChange``, ``targetReplicas``), so users
coming from Strimzi read familiar documents. Each event class names its schema and version; the envelope carries them.
"""

from __future__ import annotations

import re
from datetime import datetime
from enum import StrEnum
from typing import Annotated, Any, ClassVar, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator
from pydantic.alias_generators import to_camel

from events.envelope import utcnow

# Kafka's own rule for topic names (kafka.common.internals.Topic).
_TOPIC_NAME = re.compile(r"^[a-zA-Z0-9._-]{1,249}$")


def _check_topic_name(name: str) -> str:
    if name in {".", ".."} or not _TOPIC_NAME.match(name):
        raise ValueError(
            f"invalid Kafka topic name {name!r}: use 1-249 characters from [a-zA-Z0-9._-], not '.' or '..'"
        )
    return name


TopicName = Annotated[str, AfterValidator(_check_topic_name)]

# The replica placers a spec or the settings may name (services.placement.placer registers one class per name).
PlacerName = Literal["striped", "multi-level"]


class Event(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid", frozen=True)

    SCHEMA: ClassVar[str]
    VERSION: ClassVar[int] = 1

    @property
    def key(self) -> str:
        """The Kafka record key: the resource the event is about."""
        raise NotImplementedError

    def to_payload(self) -> dict[str, Any]:
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)


class TopicSpec(Event):
    """Desired state of one Kafka topic. The latest spec per topic wins."""

    SCHEMA: ClassVar[str] = "ballast.TopicSpec"

    name: TopicName
    partitions: int = Field(ge=1, le=100_000)
    replicas: int = Field(ge=1, le=32)
    config: dict[str, str] = Field(default_factory=dict)
    # Where new replicas go when the topic is created or grows partitions; None: the placer in the settings.
    placer: PlacerName | None = None
    # With too few brokers alive, under-replicated creation (when the policy allows it) needs at least this many
    # replicas on alive brokers; None: min(min.insync.replicas, replicas).
    min_required_replicas: int | None = Field(default=None, ge=1, le=32)
    # Where the placer has a choice, prefer the brokers carrying less load (the Spark aggregates); false: counts only.
    load_aware: bool = True

    @field_validator("config", mode="before")
    @classmethod
    def _stringify_config(cls, value: Any) -> Any:
        # YAML users write `retention.ms: 604800000` and `min.insync.replicas: 2`; Kafka configs are strings.
        if isinstance(value, dict):
            return {str(k): str(v).lower() if isinstance(v, bool) else str(v) for k, v in value.items()}
        return value

    @property
    def key(self) -> str:
        return self.name


class TopicSpecDeleted(Event):
    """The spec was withdrawn: Ballast deletes the topic."""

    SCHEMA: ClassVar[str] = "ballast.TopicSpecDeleted"

    name: TopicName

    @property
    def key(self) -> str:
        return self.name


class ReplicasChangeCommand(Event):
    """Reconciler -> replicas-change service: make this topic's replication factor ``target_replicas``."""

    SCHEMA: ClassVar[str] = "ballast.ReplicasChangeCommand"

    topic: TopicName
    target_replicas: int = Field(ge=1)
    generation: int = Field(ge=0, default=0)

    @property
    def key(self) -> str:
        return self.topic


class ReplicasChangeState(StrEnum):
    # Not in Cruise Control's queue: not sent yet, or the last request failed (then ``message`` says why).
    PENDING = "pending"
    # In Cruise Control's queue (task Active or InExecution), identified by ``session_id``.
    ONGOING = "ongoing"
    # The topic has the target replication factor.
    COMPLETED = "completed"


class ReplicasChangeRecord(Event):
    """The replicas-change service's durable memory for one topic (compacted topic, last record per key wins)."""

    SCHEMA: ClassVar[str] = "ballast.ReplicasChangeRecord"

    topic: str
    state: ReplicasChangeState
    target_replicas: int = Field(ge=1)
    session_id: str | None = None
    message: str | None = None
    generation: int = 0
    attempts: int = 0
    next_attempt_at: datetime | None = None
    # The request in flight that carries this change (in the service's memory; on the bus the ReplicasChangeBatch
    # says it). It is sent as Cruise Control's ``reason``, so that after a crash between the request and the record
    # of its User-Task-ID the task can still be found in ``user_tasks``.
    batch_id: str | None = None
    updated_at: datetime = Field(default_factory=utcnow)

    @property
    def key(self) -> str:
        return self.topic


class ReplicasChangeBatch(Event):
    """The replicas-change service's topic_configuration request in flight (there is at most one at a time, so one
    key holds it): written before the request with the topics it carries, and again with ``open: false`` once the
    outcome is in their own records. Found open after a crash, it makes those topics in doubt: their task is looked
    up in user_tasks by the batch id, which the request carried as Cruise Control's ``reason``."""

    SCHEMA: ClassVar[str] = "ballast.ReplicasChangeBatch"
    KEY: ClassVar[str] = "#batch-in-flight"  # '#' is not allowed in Kafka topic names: no topic's record has it

    batch_id: str
    topics: list[str] = Field(default_factory=list)
    open: bool = True
    created_at: datetime = Field(default_factory=utcnow)

    @property
    def key(self) -> str:
        return self.KEY


class ReplicasChangeStatus(BaseModel):
    """The ``replicasChange`` block of a topic status, as in Strimzi's KafkaTopic status."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid", frozen=True)

    state: ReplicasChangeState
    target_replicas: int
    session_id: str | None = None
    message: str | None = None


class Condition(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid", frozen=True)

    type: str
    status: str  # "True" | "False" | "Unknown", as in Kubernetes conditions
    reason: str | None = None
    message: str | None = None
    last_transition_time: datetime = Field(default_factory=utcnow)


class TopicStatus(Event):
    """What Ballast knows about one topic: published on every transition, compacted."""

    SCHEMA: ClassVar[str] = "ballast.TopicStatus"

    topic: str
    ready: bool
    generation: int = 0
    observed_generation: int = 0
    partitions: int | None = None
    replicas: int | None = None
    replicas_change: ReplicasChangeStatus | None = None
    conditions: list[Condition] = Field(default_factory=list)
    deleted: bool = False

    @property
    def key(self) -> str:
        return self.topic

    def condition(self, type_: str) -> Condition | None:
        return next((c for c in self.conditions if c.type == type_), None)


class DeadLetter(Event):
    """An event that no consumer could accept, with the reason. Nothing is dropped silently."""

    SCHEMA: ClassVar[str] = "ballast.DeadLetter"

    source_topic: str
    partition: int | None = None
    offset: int | None = None
    record_key: str | None = None
    reason: str
    service: str
    value: str | None = None
    value_encoding: str = "utf-8"

    @property
    def key(self) -> str:
        return self.record_key or self.source_topic


class ObservedBroker(Event):
    """A broker the cluster has had, alive or not now: the registry placement uses to keep room for brokers that
    are down (seed 002's "observed brokers")."""

    SCHEMA: ClassVar[str] = "ballast.ObservedBroker"

    id: int = Field(ge=0)
    rack: str | None = None
    first_seen: datetime = Field(default_factory=utcnow)

    @property
    def key(self) -> str:
        return str(self.id)


class BrokerForgotten(Event):
    """An operator's word that a broker is decommissioned: placement stops keeping room for it."""

    SCHEMA: ClassVar[str] = "ballast.BrokerForgotten"

    id: int = Field(ge=0)

    @property
    def key(self) -> str:
        return str(self.id)


class PlaceholderRecord(Event):
    """Replicas a topic was created without because their brokers were down: the topic reconciler's memory of them
    (compacted, one per topic). ``assignment`` is the full placement, placeholders as -1, -2, ... in each partition;
    ``intended`` names, per partition, the offline brokers the placer chose for them (enabled_prefer_observed)."""

    SCHEMA: ClassVar[str] = "ballast.PlaceholderRecord"

    topic: TopicName
    replication_factor: int = Field(ge=1)
    assignment: list[list[int]] = Field(default_factory=list)
    intended: dict[int, list[int]] = Field(default_factory=dict)
    # True once every placeholder holds a real replica (the record stays, compacted, as the last word).
    filled: bool = False

    @property
    def key(self) -> str:
        return self.topic

    @property
    def placeholders(self) -> int:
        return 0 if self.filled else sum(1 for replicas in self.assignment for b in replicas if b < 0)


class PlacementRequest(Event):
    """The seed's createReplicaPlacement over the bus: where would ``partitions`` new partitions of ``topic`` go on
    the cluster as it is now? Answered with a PlacementResponse carrying the same ``request_id``; nothing is
    created."""

    SCHEMA: ClassVar[str] = "ballast.PlacementRequest"

    request_id: str = Field(min_length=1, max_length=200)
    topic: TopicName
    partitions: int = Field(ge=1, le=100_000)
    replication_factor: int = Field(ge=1, le=32)
    placer: PlacerName | None = None
    seed: int | None = None
    broker_ids: list[int] | None = None
    force_simple_placement: bool = False

    @property
    def key(self) -> str:
        return self.request_id


class PlacementResponse(Event):
    """The answer to one PlacementRequest: partition -> replicas (leader first, numbered from ``first_partition``),
    or ``error`` saying why it cannot be placed."""

    SCHEMA: ClassVar[str] = "ballast.PlacementResponse"

    request_id: str
    topic: str
    placer: str
    first_partition: int = 0
    assignment: list[list[int]] | None = None
    error: str | None = None

    @property
    def key(self) -> str:
        return self.request_id


class PlacedReplica(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid", frozen=True)

    partition: int = Field(ge=0)
    broker: int
    rack: str | None = None  # the broker's rack path, so aggregates can sum placements into its domains
    log_dir: str | None = None  # where Ballast chose one (load-aware placement on a cluster that supports it)


PlacementReason = Literal["create", "add-partitions", "fill-placeholders"]


class ReplicasPlaced(Event):
    """Replicas Ballast just placed (one record per decision, keyed by topic): the Spark job counts them per broker,
    log directory and domain as the window's placements."""

    SCHEMA: ClassVar[str] = "ballast.ReplicasPlaced"

    topic: TopicName
    reason: PlacementReason
    placed_at: datetime
    placed: list[PlacedReplica] = Field(default_factory=list)

    @property
    def key(self) -> str:
        return self.topic


EVENT_TYPES: tuple[type[Event], ...] = (
    TopicSpec,
    TopicSpecDeleted,
    ReplicasChangeCommand,
    ReplicasChangeRecord,
    ReplicasChangeBatch,
    TopicStatus,
    DeadLetter,
    ObservedBroker,
    BrokerForgotten,
    PlaceholderRecord,
    PlacementRequest,
    PlacementResponse,
    ReplicasPlaced,
)
