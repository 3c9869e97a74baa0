"""What the topic reconciler knows of each topic, in one record per topic, and the rules for what it accepts into it
(records read again after a restart or a handover change nothing)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from pydantic import BaseModel

from events import conditions
from events import Condition, PlaceholderRecord, ReplicasChangeRecord, TopicSpec, TopicSpecDeleted, TopicStatus
from events.topic_status import TopicOrigin
from events.topics import not_ours, reserved_topic
from services.adapters.admin import TopicDescription
from services.common.busio import Stored
from services.topic_reconciler.refusals import Refusal
from services.topic_reconciler.tenancy import tenant_generation


Model = TypeVar("Model", bound=BaseModel)
# Each distinct set of fields given of the records kept, shared by all of them: pydantic keeps one set per instance
# (216-728 bytes: more than the record's own values for a spec or a status's condition), and a frozen record never
# changes it (a copy, model_copy's too, gets its own).
_FIELDS_SETS: dict[frozenset[str], set[str]] = {}


def kept(record: Model) -> Model:
    """``record`` (a frozen event) as the memory keeps it, its nested records too: with its set of fields shared."""
    fields = record.__pydantic_fields_set__
    object.__setattr__(record, "__pydantic_fields_set__", _FIELDS_SETS.setdefault(frozenset(fields), fields))
    for value in record.__dict__.values():
        if isinstance(value, BaseModel):
            kept(value)
        elif isinstance(value, list):
            for item in value:
                if isinstance(item, BaseModel):
                    kept(item)
    return record


@dataclass(slots=True)
class TopicMemory:
    # Desired state: the spec (None once deleted) and its generation (the spec record's offset + 1).
    spec: TopicSpec | None = None
    specified: bool = False
    generation: int = 0
    correlation: str | None = None
    # The replicas-change service's last record for it, and that record's offset.
    change: ReplicasChangeRecord | None = None
    change_offset: int = -1
    # The tenant whose topic it is (issue 53): its spec's owner; a withdrawal by an admin leaves it, so that the tenant
    # hears of its topic's deletion. None: an admin's topic.
    owner: str | None = None
    # The spec's generation in its tenant's eyes, where a tenant sent it (tenancy.tenant_generation): the statuses on
    # the tenant's own status topic carry it, so that what the tenant's CLI waits for is comparable.
    tenant_generation: int | None = None
    # The last status published, and whether Ballast created or adopted the topic (only those are ever deleted).
    status: TopicStatus | None = None
    origin: TopicOrigin | None = None
    # The last description of the topic (``described``: there is one; ``actual`` None means it does not exist).
    described: bool = False
    actual: TopicDescription | None = None
    # Replicas it was created without, while they wait for brokers.
    placeholders: PlaceholderRecord | None = None
    # The last reconcile's error and warning conditions, kept in statuses published between resyncs, and the inputs of
    # the last status built (to skip building one that cannot differ).
    outcome: tuple[str | None, list[Any]] = (None, [])
    status_inputs: tuple[Any, ...] | None = None
    # The cluster's last permanent refusal of its actions, which the topic waits out (``refusals``). Not on the bus:
    # a restarted or new owner asks once more.
    refusal: Refusal | None = None
    # The last drift corrected, and the generation of the spec it was corrected to: said in the status until the spec
    # changes.
    drift: tuple[int, Condition] | None = None
    # The replica count and the spec's, where they differed with no move in flight at the last look.
    differing_count: tuple[int, int] | None = None
    # The last look found it absent where the one before showed it (``logic.absence_unconfirmed``).
    absent_once: bool = False


@dataclass
class Memory:
    topics: dict[str, TopicMemory] = field(default_factory=dict)

    def __getitem__(self, name: str) -> TopicMemory:
        topic = self.topics.get(name)
        if topic is None:
            topic = self.topics[name] = TopicMemory()
        return topic

    def get(self, name: str) -> TopicMemory | None:
        return self.topics.get(name)

    def spec(self, name: str) -> TopicSpec | None:
        topic = self.topics.get(name)
        return topic.spec if topic is not None else None

    def specified(self) -> list[str]:
        """Every topic a spec (or its deletion) names."""
        return sorted(n for n, t in self.topics.items() if t.specified)

    def with_placeholders(self) -> list[str]:
        return sorted(n for n, t in self.topics.items() if t.placeholders is not None)

    def is_new_spec(self, name: str, offset: int) -> bool:
        """A spec record at ``offset`` is newer than the spec applied (generations are offsets + 1)."""
        topic = self.topics.get(name)
        return topic is None or offset + 1 > topic.generation

    def is_new_change(self, name: str, offset: int) -> bool:
        topic = self.topics.get(name)
        return topic is None or offset > topic.change_offset

    def apply_spec(self, name: str, spec: TopicSpec | TopicSpecDeleted, offset: int, correlation_id: str,
                   event_id: str = "") -> None:
        topic = self[name]
        topic.tenant_generation = tenant_generation(event_id)
        topic.spec = kept(spec) if isinstance(spec, TopicSpec) else None
        if spec.owner is not None or isinstance(spec, TopicSpec):
            topic.owner = spec.owner
        topic.specified = True
        topic.generation = offset + 1
        topic.correlation = correlation_id

    # What the compacted topics say of topics just taken over (nothing is known of them yet), one topic at a time and
    # in this order (each reads what the ones before it left): a service taking over reads one, remembers it and
    # drops its records before reading the next.

    def remember_placeholders(self, placeholders: Mapping[str, Stored[Any]]) -> None:
        for name, item in placeholders.items():
            if item.decoded.event.placeholders:
                self[name].placeholders = kept(item.decoded.event)

    def remember_specs(self, specs: Mapping[str, Stored[Any]]) -> None:
        for name, item in specs.items():
            # A reserved name, or a spec for another cluster, was dead-lettered when it arrived.
            if not reserved_topic(name) and not not_ours(item.decoded.event):
                self.apply_spec(name, item.decoded.event, item.offset, item.decoded.envelope.correlation_id,
                                item.decoded.envelope.id)

    def remember_statuses(self, statuses: Mapping[str, Stored[Any]]) -> None:
        for name, item in statuses.items():
            status = self[name].status = kept(item.decoded.event)
            self[name].origin = status.origin
            if self[name].spec is None and self[name].owner is None:
                self[name].owner = status.owner  # withdrawn by an admin: its tenant still hears of it
            if (drift := status.condition(conditions.DRIFT)) is not None and drift.reason == "Corrected":
                self[name].drift = (status.generation, drift)

    def remember_changes(self, changes: Mapping[str, Stored[Any]]) -> None:
        for name, item in changes.items():
            if isinstance(item.decoded.event, ReplicasChangeRecord):
                self[name].change = kept(item.decoded.event)
                self[name].change_offset = item.offset

    def forget(self, whose: Callable[[str], bool]) -> None:
        """Drop every topic ``whose`` picks (shards another instance now has; it rebuilds them from the bus)."""
        for name in [n for n in self.topics if whose(n)]:
            del self.topics[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self.topics)

    def counts(self) -> dict[str, int]:
        topics = self.topics.values()
        return {"specs": sum(t.specified for t in topics), "statuses": sum(t.status is not None for t in topics),
                "changes": sum(t.change is not None for t in topics),
                "topics_with_placeholders": sum(t.placeholders is not None for t in topics)}
