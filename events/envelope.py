"""The envelope every event travels in: schema name, version, id, time and correlation id."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel


# Every model's wire form: camelCase names (Python names accepted too), nothing unknown. Validators are built at a
# model's first use rather than at import: a CLI call or a service uses a few of the fifty models, and building them
# all took about half of `import events` (some 130 ms of every CLI call and service start).
WIRE = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid", defer_build=True)
FROZEN_WIRE = ConfigDict(**WIRE, frozen=True)


def new_id() -> str:
    return str(uuid.uuid4())


def utcnow() -> datetime:
    return datetime.now(UTC)


class Envelope(BaseModel):
    """Wire form: {"schema", "version", "id", "time", "correlationId", "payload"}."""

    model_config = WIRE

    schema_name: str = Field(alias="schema", min_length=1)
    version: int = Field(ge=1, strict=True)
    id: str = Field(default_factory=new_id, min_length=1)
    time: datetime = Field(default_factory=utcnow)
    correlation_id: str = Field(default_factory=new_id, min_length=1)
    payload: dict[str, Any]
