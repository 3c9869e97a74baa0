"""What Ballast knows about one topic, published on every transition."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field

from events.conditions import Condition
from events.models import Event
from events.replicas_change import ReplicasChangeStatus

TopicOrigin = Literal["created", "adopted"]


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


TOPIC_STATUS_EVENT_TYPES: tuple[type[Event], ...] = (TopicStatus,)
