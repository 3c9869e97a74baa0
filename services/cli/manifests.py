"""Reading topic specs from YAML: Strimzi ``KafkaTopic`` (kafka.strimzi.io/v1beta2) and Ballast's plain form.

Plain form (one document, or a list)::

    name: orders
    partitions: 6
    replicas: 3
    config: {min.insync.replicas: 2}
    placer: multi-level          # optional: striped | multi-level (default: BALLAST_PLACEMENT__PLACER)

A ``KafkaTopic`` names its placer in the annotation ``ballast.io/placer``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from events import TopicSpec

STRIMZI_API_VERSIONS = {"kafka.strimzi.io/v1beta2", "kafka.strimzi.io/v1"}
PLACER_ANNOTATION = "ballast.io/placer"


class ManifestError(ValueError):
    pass


def load_specs(text: str, source: str = "<input>") -> list[TopicSpec]:
    try:
        documents = [d for d in yaml.safe_load_all(text) if d is not None]
    except yaml.YAMLError as exc:
        raise ManifestError(f"{source}: not valid YAML: {exc}") from None
    specs: list[TopicSpec] = []
    for index, document in enumerate(documents, start=1):
        items = document if isinstance(document, list) else [document]
        for item in items:
            specs.append(_to_spec(item, f"{source} document {index}"))
    if not specs:
        raise ManifestError(f"{source}: no topic specs found")
    return specs


def load_file(path: Path) -> list[TopicSpec]:
    try:
        text = path.read_text()
    except OSError as exc:
        raise ManifestError(f"cannot read {path}: {exc.strerror}") from None
    return load_specs(text, str(path))


def _to_spec(item: Any, where: str) -> TopicSpec:
    if not isinstance(item, dict):
        raise ManifestError(f"{where}: expected a mapping, got {type(item).__name__}")
    if "kind" in item and item.get("kind") != "TopicSpec":
        fields = _from_kafka_topic(item, where)
    else:
        fields = {k: v for k, v in item.items() if k not in ("kind", "apiVersion")}
    try:
        return TopicSpec.model_validate(fields)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors(include_url=False))
        raise ManifestError(f"{where}: {problems}") from None


def _from_kafka_topic(item: dict[str, Any], where: str) -> dict[str, Any]:
    if item.get("kind") != "KafkaTopic":
        raise ManifestError(f"{where}: unsupported kind {item.get('kind')!r} (expected KafkaTopic or TopicSpec)")
    if item.get("apiVersion") not in STRIMZI_API_VERSIONS:
        raise ManifestError(f"{where}: unsupported apiVersion {item.get('apiVersion')!r} "
                            f"(expected one of {sorted(STRIMZI_API_VERSIONS)})")
    metadata = item.get("metadata") or {}
    spec = item.get("spec") or {}
    name = spec.get("topicName") or metadata.get("name")
    if not name:
        raise ManifestError(f"{where}: KafkaTopic needs metadata.name or spec.topicName")
    missing = [f for f in ("partitions", "replicas") if f not in spec]
    if missing:
        # Strimzi would fall back to the broker defaults; Ballast needs them explicit to manage the topic.
        raise ManifestError(f"{where}: KafkaTopic {name!r} needs spec.{' and spec.'.join(missing)}")
    fields = {"name": name, "partitions": spec["partitions"], "replicas": spec["replicas"],
              "config": spec.get("config") or {}}
    if placer := (metadata.get("annotations") or {}).get(PLACER_ANNOTATION):
        fields["placer"] = placer
    return fields
