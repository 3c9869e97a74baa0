"""Dead letters: what no consumer could accept, with the reason, kept so that nothing is dropped silently."""

from __future__ import annotations

import base64
from typing import Any, ClassVar

from events.limits import MAX_DEAD_LETTER_VALUE_CHARS, BoundedText, bounded, fingerprint
from events.models import Event


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


DEAD_LETTER_EVENT_TYPES: tuple[type[Event], ...] = (DeadLetter,)
