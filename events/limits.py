"""How big one record on the bus may be, and how Ballast keeps what it writes within that.

Kafka refuses a record over the broker's ``message.max.bytes`` (1,048,588 by default) and producers refuse one over
their ``max.request.size`` (1,000,000 by default, faust's and aiokafka's too): a record Ballast cannot write is an
event lost and, worse, an agent that crashes on it. So every text that can carry user input is bounded where the
model is built, and events that grow with a topic's size are split (``chunks``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Sequence
from typing import Annotated, TypeVar

from pydantic import AfterValidator

# What one Ballast record may take, envelope included; below both defaults, with room for the record's headers.
MAX_RECORD_BYTES = 900_000
# Messages and reasons: long enough for any error Ballast or Cruise Control writes, short enough that a status
# with a handful of them stays small whatever the input was.
MAX_TEXT_CHARS = 2_000
# A dead letter keeps this much of the rejected value (and its size and hash, so the whole can be found again).
MAX_DEAD_LETTER_VALUE_CHARS = 64 * 1024

T = TypeVar("T")


def bounded(text: str, limit: int = MAX_TEXT_CHARS) -> str:
    """``text`` cut to ``limit`` characters, saying how much was cut."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... [{len(text) - limit} more characters]"


def fingerprint(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def chunks(items: Sequence[T], size: int) -> Iterator[Sequence[T]]:
    for start in range(0, len(items), size):
        yield items[start:start + size]


# A text field that holds a message or reason (which may quote user input).
BoundedText = Annotated[str, AfterValidator(bounded)]
