"""The file formats of ``ballast place``: the cluster description it reads and the reassignment JSON it prints.

Input: ``{"brokers": [{"id": 1, "rack": "/dc1/r1", "state": "alive"}], "assignments": {"topic": [[1, 2, 3], ...]}}``
(``rack``, ``state`` and ``assignments`` optional). Output: the JSON ``kafka-reassign-partitions.sh
--reassignment-json-file`` takes.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from services.placement.model import Assignment, Broker, BrokerState, ClusterView, PlacementError


class _BrokerEntry(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: int = Field(ge=0)
    rack: str | None = None
    state: BrokerState = BrokerState.ALIVE
    load: float | None = None


class _ClusterFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    brokers: list[_BrokerEntry] = Field(min_length=1)
    assignments: dict[str, list[list[int]]] = Field(default_factory=dict)


def read_cluster(path: Path) -> ClusterView:
    try:
        raw = json.loads(path.read_text())
    except OSError as exc:
        raise PlacementError(f"cannot read {path}: {exc.strerror}") from None
    except json.JSONDecodeError as exc:
        raise PlacementError(f"{path} is not JSON: {exc}") from None
    return parse_cluster(raw, str(path))


def parse_cluster(raw: Any, source: str = "cluster") -> ClusterView:
    try:
        parsed = _ClusterFile.model_validate(raw)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors())
        raise PlacementError(f"{source}: {problems}") from None
    ids = [b.id for b in parsed.brokers]
    if len(set(ids)) != len(ids):
        raise PlacementError(f"{source}: broker ids repeat: {sorted(i for i in set(ids) if ids.count(i) > 1)}")
    brokers = [Broker(b.id, b.rack, b.state, b.load) for b in parsed.brokers]
    return ClusterView.of(brokers, parsed.assignments)


def reassignment_json(topic: str, assignment: Assignment, first_partition: int = 0) -> dict[str, Any]:
    return {"version": 1, "partitions": [
        {"topic": topic, "partition": first_partition + index, "replicas": list(replicas),
         "log_dirs": ["any"] * len(replicas)}
        for index, replicas in enumerate(assignment)]}
