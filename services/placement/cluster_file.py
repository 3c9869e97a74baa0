"""The file formats of ``ballast place``: the cluster description it reads and the reassignment JSON it prints.

Input: ``{"brokers": [{"id": 1, "rack": "/dc1/r1", "state": "alive"}], "assignments": {"topic": [[1, 2, 3], ...]}}``
(``rack``, ``state`` and ``assignments`` optional; a broker may list its log directories with their usage,
``"logDirs": {"/data-0": {"diskMb": 120.5, "replicas": 4}}``, for ``--log-dirs``). Output: the JSON
``kafka-reassign-partitions.sh --reassignment-json-file`` takes.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from events import placeholders as placeholder
from services.placement.log_dirs import LogDirUsage
from services.placement.model import Assignment, Broker, BrokerState, ClusterView, PlacementError


class _LogDirEntry(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    disk_mb: float = Field(default=0.0, ge=0, alias="diskMb")
    replicas: int = Field(default=0, ge=0)


class _BrokerEntry(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    id: int = Field(ge=0)
    rack: str | None = None
    state: BrokerState = BrokerState.ALIVE
    load: float | None = None
    log_dirs: dict[str, _LogDirEntry] = Field(default_factory=dict, alias="logDirs")


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
    parsed = _parse(raw, source)
    ids = [b.id for b in parsed.brokers]
    if len(set(ids)) != len(ids):
        raise PlacementError(f"{source}: broker ids repeat: {sorted(i for i in set(ids) if ids.count(i) > 1)}")
    for topic, partitions in parsed.assignments.items():
        for index, replicas in enumerate(partitions):
            # Placeholders stand for replicas a topic was created without (brokers that were down): not brokers.
            if unknown := [b for b in placeholder.real(replicas) if b not in ids]:
                raise PlacementError(f"{source}: assignments.{topic}[{index}] names broker(s) {unknown} that are "
                                     f"not among the brokers ({', '.join(map(str, sorted(ids)))})")
    brokers = [Broker(b.id, b.rack, b.state, b.load) for b in parsed.brokers]
    return ClusterView.of(brokers, parsed.assignments)


def _parse(raw: Any, source: str) -> _ClusterFile:
    if not isinstance(raw, dict):
        raise PlacementError(f'{source}: expected an object ({{"brokers": [...], "assignments": {{...}}}}), '
                             f"not {_json_kind(raw)}")
    try:
        return _ClusterFile.model_validate(raw)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc']) or '(root)'}: {e['msg']}" for e in exc.errors())
        raise PlacementError(f"{source}: {problems}") from None


def _json_kind(value: Any) -> str:
    kinds = {list: "an array", str: "a string", bool: "a boolean", int: "a number", float: "a number"}
    return "null" if value is None else kinds.get(type(value), type(value).__name__)


def read_log_dir_usage(path: Path) -> dict[int, dict[str, LogDirUsage]]:
    """The brokers' ``logDirs`` of a cluster file (brokers without them are left out)."""
    parsed = _parse(json.loads(path.read_text()), str(path))
    return {b.id: {name: LogDirUsage(d.disk_mb, d.replicas) for name, d in b.log_dirs.items()}
            for b in parsed.brokers if b.log_dirs}


def reassignment_json(topic: str, assignment: Assignment, first_partition: int = 0,
                      log_dirs: dict[tuple[int, int], str] | None = None) -> dict[str, Any]:
    """``log_dirs``: (partition index in ``assignment``, broker) -> directory; "any" (the broker's choice) elsewhere."""
    chosen = log_dirs or {}
    return {"version": 1, "partitions": [
        {"topic": topic, "partition": first_partition + index, "replicas": list(replicas),
         "log_dirs": [chosen.get((index, b), "any") for b in replicas]}
        for index, replicas in enumerate(assignment)]}
