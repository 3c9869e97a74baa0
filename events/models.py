"""Pydantic models for every event on the bus.

JSON field names are camelCase, as in Strimzi's KafkaTopic status (``replicasChange``, ``targetReplicas``), so users
coming from Strimzi read familiar documents. Each event class names its schema and version; the envelope carries them.
"""

from __future__ import annotations

import base64
import re
from datetime import datetime
from enum import StrEnum
from typing import Annotated, Any, ClassVar, Literal

from pydantic import AfterValidator, BaseModel, Field, Strict, field_validator

from events.envelope import FROZEN_WIRE, utcnow
from events import placeholders as placeholder
from events.limits import MAX_DEAD_LETTER_VALUE_CHARS, BoundedText, bounded, chunks, fingerprint

# Kafka's own rule for topic names (kafka.common.internals.Topic).
_TOPIC_NAME = re.compile(r"^[a-zA-Z0-9._-]{1,249}$")


def check_topic_name(name: str) -> str:
    if name in {".", ".."} or not _TOPIC_NAME.match(name):
        raise ValueError(
            f"invalid Kafka topic name {name!r}: use 1-249 characters from [a-zA-Z0-9._-], not '.' or '..'"
        )
    return name


TopicName = Annotated[str, AfterValidator(check_topic_name)]

# A Kafka cluster's name as Strimzi's KafkaTopics give it (label strimzi.io/cluster: a Kubernetes name), and a
# tenant's: each also goes into bus topics' and consumer groups' names (events.topics).
_BUS_NAME = re.compile(r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$")


def _bus_name(name: str, what: str, why: str) -> str:
    if not _BUS_NAME.match(name):
        raise ValueError(f"invalid {what} name {name!r}: use 1-63 lower-case letters, digits and '-', beginning and "
                         f"ending with a letter or digit ({why})")
    return name


def check_cluster_name(name: str) -> str:
    return _bus_name(name, "cluster", "a Kubernetes name, as strimzi.io/cluster takes")


ClusterName = Annotated[str, AfterValidator(check_cluster_name)]


def check_tenant_name(name: str) -> str:
    return _bus_name(name, "tenant", "it names the tenant's topics on the bus")


# A tenant of the tenants file (services/domain/tenants.py) by its name, which also names its topics on the bus.
TenantName = Annotated[str, AfterValidator(check_tenant_name)]

# Numbers and flags in what users write are taken as they are: ``true`` is not 1 and ``"3"`` is not 3 (a loose
# ``"replicas": true`` once cut a topic to one replica).
StrictInt = Annotated[int, Strict()]
StrictBool = Annotated[bool, Strict()]


def kafka_config_value(key: str, value: Any) -> str:
    """A topic config value as Kafka takes it: strings as they are, numbers rendered as Kafka renders them. Anything
    else (a boolean, null, a list, an object) is refused: Kafka would get ``"None"`` or ``"{'compact': True}"``."""
    if isinstance(value, str):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if isinstance(value, float) and value == value and value not in (float("inf"), float("-inf")):
        return repr(value)
    kinds = {bool: "a boolean", type(None): "null", list: "a list", dict: "an object"}
    kind = kinds.get(type(value), type(value).__name__)
    raise ValueError(f"config value of {key!r} must be a string or a number, not {kind}"
                     + (' (write "true" or "false")' if isinstance(value, bool) else ""))

# The replica placers a spec or the settings may name (services.placement.placer registers one class per name).
PlacerName = Literal["striped", "multi-level"]
TopicOrigin = Literal["created", "adopted"]


class Event(BaseModel):
    model_config = FROZEN_WIRE

    SCHEMA: ClassVar[str]
    VERSION: ClassVar[int] = 1

    @property
    def key(self) -> str:
        """The Kafka record key: the resource the event is about."""
        raise NotImplementedError

    def to_payload(self) -> dict[str, Any]:
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)


# What the topic reconciler does with a topic found changed outside Ballast after its spec was applied: set it back,
# or only say so in the status.
DriftMode = Literal["correct", "report"]


class TopicSpec(Event):
    """Desired state of one Kafka topic. The latest spec per topic wins."""

    SCHEMA: ClassVar[str] = "ballast.TopicSpec"

    name: TopicName
    # None (a KafkaTopic may leave them out): the cluster's num.partitions and default.replication.factor when the
    # topic is created, and whatever it has from then on, as Strimzi's Topic Operator does.
    partitions: StrictInt | None = Field(default=None, ge=1, le=100_000)
    replicas: StrictInt | None = Field(default=None, ge=1, le=32)
    config: dict[str, str] = Field(default_factory=dict)
    # Where new replicas go when the topic is created or grows partitions; None: the placer in the settings.
    placer: PlacerName | None = None
    # With too few brokers alive, under-replicated creation (when the policy allows it) needs at least this many
    # replicas on alive brokers; None: min(min.insync.replicas, replicas).
    min_required_replicas: StrictInt | None = Field(default=None, ge=1, le=32)
    # Where the placer has a choice, prefer the brokers carrying less load (the Spark aggregates); false: counts only.
    load_aware: StrictBool = True
    # The topic may already exist: Ballast then owns it as if it had created it, deletion included. Without it an
    # existing topic's partitions, configs and replicas are still reconciled, but withdrawing the spec leaves it.
    adopt: StrictBool = False
    # Nothing is changed on the topic while paused (Strimzi's strimzi.io/pause-reconciliation); its status says so.
    paused: StrictBool = False
    # false: Ballast lets go of the topic (Strimzi's strimzi.io/managed): nothing is changed on it, and withdrawing the
    # spec leaves it, whoever created it.
    managed: StrictBool = True
    # When the topic is found changed outside Ballast: set it back (correct) or only say so (report); None: the
    # reconciler's setting (BALLAST_RECONCILER__DRIFT).
    drift: DriftMode | None = None
    # A KafkaTopic's metadata.name where it differs from the topic's name (spec.topicName): statuses can be asked for
    # by it too.
    resource_name: str | None = Field(default=None, max_length=253)
    # The cluster the spec is for (a KafkaTopic's strimzi.io/cluster label): a deployment named for another cluster
    # (BALLAST_CLUSTER) does not act on it. None: whichever deployment reads it.
    cluster: ClusterName | None = None
    # The tenant whose spec this is (issue 53): set by Ballast's tenant gate as it forwards a spec from the tenant's
    # own spec topic, never taken from the tenant (the gate writes over it). None: an admin's spec.
    owner: TenantName | None = None

    @field_validator("config", mode="before")
    @classmethod
    def _render_config(cls, value: Any) -> Any:
        # YAML users write `retention.ms: 604800000` and `min.insync.replicas: 2`; Kafka configs are strings.
        if isinstance(value, dict):
            return {k: kafka_config_value(k, v) if isinstance(k, str) else v for k, v in value.items()}
        return value

    @property
    def key(self) -> str:
        return self.name


class TopicSpecDeleted(Event):
    """The spec was withdrawn: Ballast deletes the topic."""

    SCHEMA: ClassVar[str] = "ballast.TopicSpecDeleted"

    name: TopicName
    # The tenant that withdrew it (set by the tenant gate, as on TopicSpec): its status topic hears of the deletion.
    owner: TenantName | None = None

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
    message: BoundedText | None = None
    generation: int = 0
    attempts: int = 0
    next_attempt_at: datetime | None = None
    # The request in flight that carries this change (in the service's memory; on the bus the ReplicasChangeBatch
    # says it). It is sent as Cruise Control's ``reason``, so that after a crash between the request and the record
    # of its User-Task-ID the task can still be found in ``user_tasks``.
    batch_id: str | None = None
    # Set while Cruise Control's refusal of a request is pinned on the changes it is about: changes of one group
    # are sent only together (services.replicas_change.isolation).
    group: str | None = None
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

    model_config = FROZEN_WIRE

    state: ReplicasChangeState
    target_replicas: int
    session_id: str | None = None
    message: BoundedText | None = None


class Condition(BaseModel):
    model_config = FROZEN_WIRE

    type: str
    status: str  # "True" | "False" | "Unknown", as in Kubernetes conditions
    reason: str | None = None
    message: BoundedText | None = None
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
    # Whose topic it is: "created" by Ballast, or "adopted" by a spec with ``adopt: true``; only then does
    # withdrawing the spec delete it.
    origin: TopicOrigin | None = None
    # The spec's resourceName (a KafkaTopic's metadata.name where it differs from the topic's name).
    resource_name: str | None = None
    # The tenant whose topic it is (the spec's owner, issue 53); None: an admin's.
    owner: str | None = None

    @property
    def key(self) -> str:
        return self.topic

    def named(self, name: str) -> bool:
        """This is the status of ``name``: the topic's, or its KafkaTopic's (metadata.name)."""
        return name in (self.topic, self.resource_name)

    def condition(self, type_: str) -> Condition | None:
        return next((c for c in self.conditions if c.type == type_), None)


class DeadLetter(Event):
    """An event that no consumer could accept, with the reason. Nothing is dropped silently.

    A dead letter always fits on the bus, whatever it rejects: the value is kept up to 64 KiB (``valueTruncated``
    says when it was cut) with the whole value's size and SHA-256, so the original can be found at its topic,
    partition and offset."""

    SCHEMA: ClassVar[str] = "ballast.DeadLetter"

    source_topic: str
    partition: int | None = None
    offset: int | None = None
    record_key: BoundedText | None = None
    key_encoding: str = "utf-8"
    reason: BoundedText
    service: str
    value: str | None = None
    value_encoding: str = "utf-8"
    value_size: int | None = None
    value_sha256: str | None = None
    value_truncated: bool = False

    @property
    def key(self) -> str:
        return self.record_key or self.source_topic

    @classmethod
    def of_record(cls, *, source_topic: str, key: bytes | None, value: bytes | None, reason: str, service: str,
                  partition: int | None = None, offset: int | None = None) -> DeadLetter:
        """The dead letter for one rejected record, whatever its key and value hold."""
        record_key, key_encoding = _readable(key[:1024]) if key is not None else (None, "utf-8")
        fields: dict[str, Any] = {}
        if value is not None:
            kept = value[:MAX_DEAD_LETTER_VALUE_CHARS]
            text, encoding = _readable(kept)
            fields = {"value": text, "value_encoding": encoding, "value_size": len(value),
                      "value_sha256": fingerprint(value), "value_truncated": len(kept) < len(value)}
        return cls(source_topic=source_topic, partition=partition, offset=offset, record_key=record_key,
                   key_encoding=key_encoding, reason=bounded(reason), service=service, **fields)


def _readable(data: bytes) -> tuple[str, str]:
    """Text as it is when it is UTF-8 (a cut may split a character: it is dropped), base64 otherwise."""
    try:
        return data.decode(), "utf-8"
    except UnicodeDecodeError as exc:
        if exc.start >= len(data) - 3 and exc.reason == "unexpected end of data":
            return data[:exc.start].decode(), "utf-8"
        return base64.b64encode(data).decode(), "base64"


class ObservedBroker(Event):
    """A broker the cluster has had, alive or not now: the registry placement uses to keep room for brokers that
    are down (seed 002's "observed brokers")."""

    SCHEMA: ClassVar[str] = "ballast.ObservedBroker"

    id: StrictInt = Field(ge=0)
    rack: str | None = None
    first_seen: datetime = Field(default_factory=utcnow)

    @property
    def key(self) -> str:
        return str(self.id)


class BrokerForgotten(Event):
    """An operator's word that a broker is decommissioned: placement stops keeping room for it."""

    SCHEMA: ClassVar[str] = "ballast.BrokerForgotten"

    id: StrictInt = Field(ge=0)

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
        return 0 if self.filled else placeholder.count(self.assignment)


class PlacementRequest(Event):
    """The seed's createReplicaPlacement over the bus: where would ``partitions`` new partitions of ``topic`` go on
    the cluster as it is now? Answered with a PlacementResponse carrying the same ``request_id``; nothing is
    created."""

    SCHEMA: ClassVar[str] = "ballast.PlacementRequest"

    request_id: str = Field(min_length=1, max_length=200)
    topic: TopicName
    partitions: StrictInt = Field(ge=1, le=100_000)
    replication_factor: StrictInt = Field(ge=1, le=32)
    placer: PlacerName | None = None
    seed: StrictInt | None = None
    broker_ids: list[StrictInt] | None = None
    force_simple_placement: StrictBool = False

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
    error: BoundedText | None = None
    # A large answer comes in several records, each numbered from its own ``first_partition``: part 1 of ``parts``.
    part: int = Field(default=1, ge=1)
    parts: int = Field(default=1, ge=1)

    # Partitions per record: at most 32 replicas of ~6 bytes each, so a part stays well within MAX_RECORD_BYTES.
    PART_SIZE: ClassVar[int] = 2_000

    @property
    def key(self) -> str:
        return self.request_id

    def split(self) -> list[PlacementResponse]:
        """This answer in records that each fit on the bus."""
        if self.assignment is None or len(self.assignment) <= self.PART_SIZE:
            return [self]
        pieces = list(chunks(self.assignment, self.PART_SIZE))
        return [self.model_copy(update={"assignment": list(piece), "part": i + 1, "parts": len(pieces),
                                        "first_partition": self.first_partition + i * self.PART_SIZE})
                for i, piece in enumerate(pieces)]


class PlacedReplica(BaseModel):
    model_config = FROZEN_WIRE

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

    # Replicas per record: ~100 bytes each in the worst case, so a part stays well within MAX_RECORD_BYTES.
    PART_SIZE: ClassVar[int] = 4_000

    @property
    def key(self) -> str:
        return self.topic

    def split(self) -> list[ReplicasPlaced]:
        """The same decision in records that each fit on the bus (the Spark job sums them alike)."""
        if len(self.placed) <= self.PART_SIZE:
            return [self]
        return [self.model_copy(update={"placed": list(part)}) for part in chunks(self.placed, self.PART_SIZE)]


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
