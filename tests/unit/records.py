"""Records as the agents hand them to the services' handlers (faust events of raw topics), for shell tests."""

from __future__ import annotations

from dataclasses import dataclass

from events import encode
from events.models import Event
from events.topics import BusTopic


@dataclass
class Message:
    topic: str
    offset: int
    partition: int = 0
    timestamp: float = 0.0


@dataclass
class Record:
    key: bytes | None
    value: bytes | None
    message: Message


def record(topic: BusTopic, event: Event, offset: int, *, key: bytes | None = None) -> Record:
    """``event`` as the record at ``offset`` of ``topic`` (keyed by its own key unless ``key`` says otherwise)."""
    return Record(key if key is not None else event.key.encode(), encode(event), Message(topic.name, offset))
