"""JSON-schema export of the envelope and every event (``ballast schema``)."""

from __future__ import annotations

from typing import Any

from events.envelope import Envelope
from events.serde import REGISTRY


def json_schemas() -> dict[str, dict[str, Any]]:
    schemas: dict[str, dict[str, Any]] = {"ballast.Envelope": Envelope.model_json_schema(by_alias=True)}
    for name, cls in sorted(REGISTRY.items()):
        schema = cls.model_json_schema(by_alias=True)
        schema["$comment"] = f"payload of an envelope with schema={name!r}, version={cls.VERSION}"
        schemas[name] = schema
    return schemas
