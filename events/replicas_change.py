"""Changes of a topic's replication factor: the reconciler's command, the replicas-change service's memory of each
change and of its request in flight, and the ``replicasChange`` block of a topic's status."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import ClassVar

from pydantic import BaseModel, Field

from events.envelope import FROZEN_WIRE, utcnow
from events.limits import BoundedText
from events.models import Event
from events.names import TopicName


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


REPLICAS_CHANGE_EVENT_TYPES: tuple[type[Event], ...] = (ReplicasChangeCommand, ReplicasChangeRecord,
                                                        ReplicasChangeBatch)
