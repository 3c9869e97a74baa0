"""Placement's events: the brokers it keeps room for, the placeholders a topic was created with, the
createReplicaPlacement request and its answer, and the replicas Ballast placed (which the Spark job counts)."""

from __future__ import annotations

from datetime import datetime
from typing import ClassVar, Literal

from pydantic import BaseModel, Field

from events import placeholders as placeholder
from events.envelope import FROZEN_WIRE, utcnow
from events.limits import BoundedText, chunks
from events.models import Event
from events.names import PlacerName, TopicName
from events.strict import StrictBool, StrictInt


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


PLACEMENT_EVENT_TYPES: tuple[type[Event], ...] = (
    ObservedBroker,
    BrokerForgotten,
    PlaceholderRecord,
    PlacementRequest,
    PlacementResponse,
    ReplicasPlaced,
)
