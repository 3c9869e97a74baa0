"""Encode events into envelopes and decode them back, with a clear reason when a record is not a valid event."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Generic, TypeVar

from pydantic import ValidationError

from events.dead_letters import DEAD_LETTER_EVENT_TYPES
from events.envelope import Envelope, new_id, utcnow
from events.load import LOAD_EVENT_TYPES
from events.models import Event
from events.placement import PLACEMENT_EVENT_TYPES
from events.rebalance import REBALANCE_EVENT_TYPES
from events.replicas_change import REPLICAS_CHANGE_EVENT_TYPES
from events.tenancy import TENANCY_EVENT_TYPES
from events.throttle import THROTTLE_EVENT_TYPES
from events.topic_specs import TOPIC_SPEC_EVENT_TYPES
from events.topic_status import TOPIC_STATUS_EVENT_TYPES
from events.topics import BusTopic

E = TypeVar("E", bound=Event, covariant=True)

# Every event a record may carry, by its schema name: each module of events lists its own.
EVENT_TYPES: tuple[type[Event], ...] = (
    *TOPIC_SPEC_EVENT_TYPES, *REPLICAS_CHANGE_EVENT_TYPES, *TOPIC_STATUS_EVENT_TYPES, *DEAD_LETTER_EVENT_TYPES,
    *PLACEMENT_EVENT_TYPES, *REBALANCE_EVENT_TYPES, *LOAD_EVENT_TYPES, *THROTTLE_EVENT_TYPES, *TENANCY_EVENT_TYPES)
REGISTRY: dict[str, type[Event]] = {cls.SCHEMA: cls for cls in EVENT_TYPES}


class InvalidEvent(ValueError):
    """A record that is not a valid Ballast event. ``reason`` is what goes to the dead-letter topic."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class Decoded(Generic[E]):
    """A record read: its envelope (the payload left out: ``event`` is that payload, validated) and its event."""

    envelope: Envelope
    event: E


def envelope_for(event: Event, *, correlation_id: str | None = None, event_id: str | None = None) -> Envelope:
    """``event_id``: the envelope's id where it says where the event came from (a tenant's spec forwarded by the
    tenant gate names its record); by default a fresh one."""
    # The event is already validated; building the envelope without validating it again halves the cost of encode
    # (a hot path: every status and record Ballast publishes goes through here).
    return Envelope.model_construct(schema_name=event.SCHEMA, version=event.VERSION, id=event_id or new_id(),
                                    time=utcnow(), correlation_id=correlation_id or new_id(),
                                    payload=event.to_payload())


def encode(event: Event, *, correlation_id: str | None = None, event_id: str | None = None) -> bytes:
    return envelope_for(event, correlation_id=correlation_id, event_id=event_id).model_dump_json(by_alias=True).encode()


def _describe(error: ValidationError) -> str:
    parts = []
    for item in error.errors(include_url=False):
        where = ".".join(str(p) for p in item["loc"]) or "(root)"
        parts.append(f"{where}: {item['msg']}")
    return "; ".join(parts)


def decode(raw: bytes | str | None, *, topic: BusTopic[E] | None = None) -> Decoded[E]:
    """Parse and validate one record value (of ``topic``: one of its event types). Raises InvalidEvent with a
    human-readable reason."""
    if raw is None:
        raise InvalidEvent("empty record value (tombstone): Ballast events are never null")
    try:
        document = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InvalidEvent(f"not JSON: {exc}") from None
    if not isinstance(document, dict):
        raise InvalidEvent(f"not an event envelope: expected a JSON object, got {type(document).__name__}")
    try:
        envelope = Envelope.model_validate(document)
    except ValidationError as exc:
        raise InvalidEvent(f"invalid envelope: {_describe(exc)}") from None
    cls = REGISTRY.get(envelope.schema_name)
    if cls is None:
        raise InvalidEvent(f"unknown schema {envelope.schema_name!r}; known: {', '.join(sorted(REGISTRY))}")
    if envelope.version != cls.VERSION:
        raise InvalidEvent(f"unsupported version {envelope.version} of {cls.SCHEMA} (this Ballast reads {cls.VERSION})")
    if topic is not None and cls not in topic.events:
        wanted = ", ".join(c.SCHEMA for c in topic.events)
        raise InvalidEvent(f"schema {cls.SCHEMA} does not belong on this topic ({topic.name} carries {wanted})")
    try:
        event = cls.model_validate(envelope.payload)
    except ValidationError as exc:
        raise InvalidEvent(f"invalid {cls.SCHEMA}: {_describe(exc)}") from None
    # The payload read is the event now: kept in the envelope as well, it doubled what a service holds of the records
    # it keeps (all of a compacted topic's, as it starts).
    envelope = envelope.model_copy(update={"payload": {}})
    return Decoded(envelope=envelope, event=event)  # type: ignore[arg-type]  # one of topic.events
