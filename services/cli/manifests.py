"""Reading desired state from YAML: topic specs (Strimzi ``KafkaTopic``, kafka.strimzi.io/v1beta2, or Ballast's plain
form) and rebalance requests (Strimzi ``KafkaRebalance``, or the plain form with ``kind: Rebalance``).

Plain form (one document, or a list)::

    name: orders
    partitions: 6
    replicas: 3
    config: {min.insync.replicas: 2}
    placer: multi-level          # optional: striped | multi-level (default: BALLAST_PLACEMENT__PLACER)
    loadAware: false             # optional: place by counts alone, not towards the lighter brokers
    adopt: true                  # optional: the topic exists already and is Ballast's from now on (deletion too)
    cluster: east                # optional: the cluster it is for (a KafkaTopic's label strimzi.io/cluster)

A ``KafkaTopic`` names its placer in the annotation ``ballast.io/placer`` and opts out of load-aware placement with
``ballast.io/load-aware: "false"``, and adopts an existing topic with ``ballast.io/adopt: "true"``.

A deployment named for its cluster (``BALLAST_CLUSTER``) takes only the specs and rebalances for it, or naming no
cluster; the others are skipped, so that one set of files can hold several clusters' topics.

Plain rebalance (the fields of a KafkaRebalance spec, plus ``name`` and ``autoApprove``)::

    kind: Rebalance
    name: scale-up
    mode: add-brokers            # full (default) | add-brokers | remove-brokers
    brokers: [7, 8, 9]
    autoApprove: true            # KafkaRebalance: annotation strimzi.io/rebalance-auto-approval: "true"
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, TextIO

import yaml
from pydantic import ValidationError

from events import RebalanceRequest, TopicSpec
from events.topic_configs import topic_config_problem
from events.topics import elsewhere

STRIMZI_API_VERSIONS = {"kafka.strimzi.io/v1beta2", "kafka.strimzi.io/v1"}
PLACER_ANNOTATION = "ballast.io/placer"
LOAD_AWARE_ANNOTATION = "ballast.io/load-aware"
ADOPT_ANNOTATION = "ballast.io/adopt"
DRIFT_ANNOTATION = "ballast.io/drift"
AUTO_APPROVAL_ANNOTATION = "strimzi.io/rebalance-auto-approval"
PAUSE_ANNOTATION = "strimzi.io/pause-reconciliation"
MANAGED_ANNOTATION = "strimzi.io/managed"
CLUSTER_LABEL = "strimzi.io/cluster"
KAFKA_TOPIC_SPEC_FIELDS = frozenset({"topicName", "partitions", "replicas", "config"})
# KafkaRebalance spec fields Cruise Control has but Ballast does not pass on; refused rather than silently dropped.
UNSUPPORTED_REBALANCE_FIELDS = ("replicaMovementStrategies",)

Manifest = TopicSpec | RebalanceRequest


class ManifestError(ValueError):
    pass


def load_manifests(text: str, source: str = "<input>") -> list[Manifest]:
    try:
        documents = [d for d in yaml.safe_load_all(text) if d is not None]
    except yaml.YAMLError as exc:
        raise ManifestError(f"{source}: not valid YAML: {exc}") from None
    manifests: list[Manifest] = []
    for index, document in enumerate(documents, start=1):
        for item in _items(document, f"{source} document {index}"):
            manifests.append(_to_manifest(item, f"{source} document {index}"))
    if not manifests:
        raise ManifestError(f"{source}: no topic specs or rebalances found")
    return manifests


def _items(document: Any, where: str) -> list[Any]:
    """A document's manifests: itself, the items of a list, or those of a Kubernetes ``kind: List`` (what
    ``kubectl get kafkatopics -o yaml`` prints), taken as they are."""
    if isinstance(document, list):
        return document
    if isinstance(document, dict) and document.get("kind") == "List":
        items = document.get("items") or []
        if not isinstance(items, list):
            raise ManifestError(f"{where}: a List's items must be a list")
        return items
    return [document]


def load_specs(text: str, source: str = "<input>") -> list[TopicSpec]:
    """Topic specs only (a rebalance in the text is an error)."""
    manifests = load_manifests(text, source)
    if others := [m for m in manifests if not isinstance(m, TopicSpec)]:
        raise ManifestError(f"{source}: expected topic specs only, found rebalance {others[0].key!r}")
    return manifests  # type: ignore[return-value]


def load_file(path: Path) -> list[Manifest]:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ManifestError(f"cannot read {path}: {exc.strerror}") from None
    return load_manifests(decode(data, str(path)), str(path))


# YAML's own rule for telling its encodings apart (YAML 1.2, 5.2): a byte-order mark, or else the pattern of zero
# bytes around the first character, which is ASCII in any manifest. Longest patterns first (UTF-32 before UTF-16).
_ENCODINGS = (
    (b"\x00\x00\xfe\xff", "utf-32-be", 4), (b"\xff\xfe\x00\x00", "utf-32-le", 4), (b"\xef\xbb\xbf", "utf-8", 3),
    (b"\xfe\xff", "utf-16-be", 2), (b"\xff\xfe", "utf-16-le", 2),
)
_ZERO_PATTERNS = (((0, 1, 2), "utf-32-be"), ((1, 2, 3), "utf-32-le"), ((0,), "utf-16-be"), ((1,), "utf-16-le"))


def decode(data: bytes, source: str) -> str:
    """The text of a manifest in any encoding YAML allows (UTF-8, UTF-16 or UTF-32); anything else (Latin-1, say) is
    refused with the first byte that is not UTF-8, rather than guessed."""
    encoding, skip = "utf-8", 0
    for mark, name, length in _ENCODINGS:
        if data.startswith(mark):
            encoding, skip = name, length
            break
    else:
        head = data[:4]
        for zeros, name in _ZERO_PATTERNS:
            width = 4 if "32" in name else 2
            if len(head) >= width and all(head[i] == 0 for i in zeros) and \
                    all(head[i] != 0 for i in range(width) if i not in zeros):
                encoding = name
                break
    try:
        return data[skip:].decode(encoding)
    except UnicodeDecodeError as exc:
        raise ManifestError(
            f"{source}: not {encoding.upper()} text: byte 0x{data[skip + exc.start]:02x} at offset {skip + exc.start} "
            "cannot be read (YAML is UTF-8, UTF-16 or UTF-32; convert the file, e.g. `iconv -f latin1 -t utf-8`)"
        ) from None


def _read(stream: TextIO | BinaryIO) -> bytes:
    """Standard input's bytes, decoded as a file's are (its text layer would guess from the locale)."""
    raw = getattr(stream, "buffer", stream)
    data = raw.read()
    return data.encode() if isinstance(data, str) else data


MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")
STDIN = "-"


@dataclass(frozen=True)
class Loaded:
    # This deployment's manifests, in the sources' order.
    manifests: list[Manifest]
    # Those for another cluster (BALLAST_CLUSTER names this one), each with where it is and why it was skipped.
    skipped: list[str]


def load_sources(sources: Iterable[str], stdin: TextIO | None = None) -> Loaded:
    """Every manifest of ``sources`` for this deployment, in their order: a file, a directory (its YAML and JSON files,
    recursively, in name order, hidden ones left out as `.git` is), or ``-`` for standard input (once). A topic or
    rebalance named twice for this deployment is refused: which one should win is not for the CLI to guess."""
    manifests: list[tuple[Manifest, str]] = []
    sources = list(sources)
    if sources.count(STDIN) > 1:
        raise ManifestError("- (standard input) is given more than once: it can be read once")
    for source in sources:
        if source == STDIN:
            manifests += [(m, "<stdin>") for m in load_manifests(decode(_read(stdin or sys.stdin), "<stdin>"),
                                                                 "<stdin>")]
        elif (path := Path(source)).is_dir():
            files = sorted(f for f in path.rglob("*") if f.is_file() and f.suffix.lower() in MANIFEST_SUFFIXES
                           and not any(part.startswith(".") for part in f.relative_to(path).parts))
            if not files:
                raise ManifestError(f"{path}: no {', '.join(MANIFEST_SUFFIXES)} file in this directory")
            for file in files:
                manifests += [(m, str(file)) for m in load_file(file)]
        else:
            manifests += [(m, str(path)) for m in load_file(path)]
    ours, skipped = [], []
    for manifest, where in manifests:
        if reason := elsewhere(manifest.cluster):
            skipped.append(f"{_kind(manifest)} {manifest.name!r} ({where}): {reason}")
        else:
            ours.append((manifest, where))
    seen: dict[tuple[type, str], str] = {}
    for manifest, where in ours:
        key = (type(manifest), manifest.name)
        if key in seen:
            place = f"in {where}" if seen[key] == where else f"in {seen[key]} and {where}"
            raise ManifestError(f"{_kind(manifest)} {manifest.name!r} is given more than once ({place}): keep one")
        seen[key] = where
    return Loaded([manifest for manifest, _ in ours], skipped)


def _kind(manifest: Manifest) -> str:
    return "topic" if isinstance(manifest, TopicSpec) else "rebalance"


def _cluster(metadata: dict[str, Any]) -> dict[str, Any]:
    labels = metadata.get("labels") or {}
    return {"cluster": labels[CLUSTER_LABEL]} if isinstance(labels, dict) and CLUSTER_LABEL in labels else {}


def _to_manifest(item: Any, where: str) -> Manifest:
    if not isinstance(item, dict):
        raise ManifestError(f"{where}: expected a mapping, got {type(item).__name__}")
    kind = item.get("kind")
    model: type[Manifest] = TopicSpec
    if kind in ("KafkaRebalance", "Rebalance"):
        model = RebalanceRequest
        fields = (_from_kafka_rebalance(item, where) if kind == "KafkaRebalance"
                  else {k: v for k, v in item.items() if k not in ("kind", "apiVersion")})
    elif kind is not None and kind != "TopicSpec":
        fields = _from_kafka_topic(item, where)
    else:
        fields = {k: v for k, v in item.items() if k not in ("kind", "apiVersion")}
    if model is TopicSpec and isinstance(fields.get("config"), dict):
        fields["config"] = _yaml_config(fields["config"])
    try:
        manifest = model.model_validate(fields)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}".lstrip(": ")
                             for e in exc.errors(include_url=False))
        raise ManifestError(f"{where}: {problems}") from None
    if isinstance(manifest, TopicSpec) and (problem := topic_config_problem(manifest.config)):
        # Refused here rather than by Kafka once the spec is on the bus, where it would only fail its status.
        raise ManifestError(f"{where}: topic {manifest.name!r}: config: {problem}")
    return manifest


def _yaml_config(config: dict[Any, Any]) -> dict[Any, Any]:
    """YAML's ``true`` for a flag such as ``unclean.leader.election.enable`` means Kafka's ``"true"``, as in a
    KafkaTopic. The bus takes strings and numbers only; this is the YAML reader's courtesy, not the contract's."""
    return {k: ("true" if v else "false") if isinstance(v, bool) else v for k, v in config.items()}


def _check_api_version(item: dict[str, Any], where: str) -> None:
    if item.get("apiVersion") not in STRIMZI_API_VERSIONS:
        raise ManifestError(f"{where}: unsupported apiVersion {item.get('apiVersion')!r} "
                            f"(expected one of {sorted(STRIMZI_API_VERSIONS)})")


def _from_kafka_rebalance(item: dict[str, Any], where: str) -> dict[str, Any]:
    _check_api_version(item, where)
    metadata = item.get("metadata") or {}
    spec = dict(item.get("spec") or {})
    if not metadata.get("name"):
        raise ManifestError(f"{where}: KafkaRebalance needs metadata.name")
    if unsupported := [f for f in UNSUPPORTED_REBALANCE_FIELDS if f in spec]:
        raise ManifestError(f"{where}: KafkaRebalance spec.{unsupported[0]} is not supported by Ballast")
    auto = str((metadata.get("annotations") or {}).get(AUTO_APPROVAL_ANNOTATION, "false")).lower() == "true"
    return {**spec, "name": metadata["name"], "autoApprove": auto, **_cluster(metadata)}


def _from_kafka_topic(item: dict[str, Any], where: str) -> dict[str, Any]:
    if item.get("kind") != "KafkaTopic":
        raise ManifestError(f"{where}: unsupported kind {item.get('kind')!r} (expected KafkaTopic, TopicSpec, "
                            "KafkaRebalance or Rebalance)")
    _check_api_version(item, where)
    metadata = item.get("metadata") or {}
    spec = item.get("spec") or {}
    if not isinstance(spec, dict):
        raise ManifestError(f"{where}: KafkaTopic spec must be a mapping")
    name = spec.get("topicName") or metadata.get("name")
    if not name:
        raise ManifestError(f"{where}: KafkaTopic needs metadata.name or spec.topicName")
    # A misspelt field would otherwise be dropped silently (the plain form refuses one too).
    if unknown := sorted(set(spec) - KAFKA_TOPIC_SPEC_FIELDS):
        raise ManifestError(f"{where}: KafkaTopic {name!r}: spec.{unknown[0]} is not a KafkaTopic field (known: "
                            f"{', '.join(sorted(KAFKA_TOPIC_SPEC_FIELDS))})")
    # Partitions or replicas left out take the cluster's defaults when the topic is created, as with Strimzi.
    fields = {"name": name, "config": spec.get("config") or {},
              **{k: spec[k] for k in ("partitions", "replicas") if spec.get(k) is not None}}
    if metadata.get("name") and metadata["name"] != name:
        fields["resource_name"] = metadata["name"]
    fields.update(_cluster(metadata))
    annotations = metadata.get("annotations") or {}
    if placer := annotations.get(PLACER_ANNOTATION):
        fields["placer"] = placer
    if LOAD_AWARE_ANNOTATION in annotations:
        fields["load_aware"] = str(annotations[LOAD_AWARE_ANNOTATION]).lower() != "false"
    if ADOPT_ANNOTATION in annotations:
        fields["adopt"] = str(annotations[ADOPT_ANNOTATION]).lower() == "true"
    if DRIFT_ANNOTATION in annotations:
        fields["drift"] = annotations[DRIFT_ANNOTATION]
    # As Strimzi reads them: only "true" pauses, only "false" lets go.
    if PAUSE_ANNOTATION in annotations:
        fields["paused"] = str(annotations[PAUSE_ANNOTATION]).lower() == "true"
    if MANAGED_ANNOTATION in annotations:
        fields["managed"] = str(annotations[MANAGED_ANNOTATION]).lower() != "false"
    return fields
