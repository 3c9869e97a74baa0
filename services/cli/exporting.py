"""``ballast export``: specs for topics that already exist, so a team can take over a running cluster. Pure functions
over what the CLI read from the cluster and the bus.

Each spec says what the topic is now (partitions, replication factor, the configs set on the topic itself) with
``adopt: true``, so applying it changes nothing and makes the topic Ballast's, deletion included (``ballast diff``
shows that before anything is published). Kafka's internal topics and Ballast's own are never exported; topics that
already have a spec are left out unless asked for."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from events import TopicSpec
from events import topics
from events.topics import reserved_topic
from services.cli.manifests import ADOPT_ANNOTATION, CLUSTER_LABEL
from services.adapters.admin.port import TopicDescription

# A Kubernetes object name (RFC 1123 subdomain): a topic name that is not one goes to spec.topicName.
_K8S_NAME = re.compile(r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$")


class Form(StrEnum):
    plain = "plain"
    strimzi = "strimzi"


@dataclass
class Export:
    specs: list[TopicSpec] = field(default_factory=list)
    # Topics left out, with why (already specified, or not one Ballast may manage).
    skipped: dict[str, str] = field(default_factory=dict)


def export(topics: dict[str, TopicDescription], specified: set[str], *, match: re.Pattern[str] | None = None,
           include_specified: bool = False) -> Export:
    """Specs with ``adopt: true`` for ``topics`` (the cluster's, described) whose name ``match`` finds, in name order;
    ``specified``: the topics that have a spec on the bus."""
    result = Export()
    for name in sorted(topics):
        if match is not None and not match.search(name):
            continue
        if reason := reserved_topic(name):
            result.skipped[name] = reason
            continue
        if name in specified and not include_specified:
            result.skipped[name] = "has a spec already (--include-specified exports it again)"
            continue
        actual = topics[name]
        result.specs.append(TopicSpec(name=name, partitions=actual.partition_count,
                                      replicas=actual.replication_factor, config=actual.own_config, adopt=True))
    return result


def document(spec: TopicSpec, form: Form) -> dict[str, Any]:
    """One spec as a YAML document of the form ``ballast apply`` reads."""
    if form is Form.plain:
        plain: dict[str, Any] = {"name": spec.name, "partitions": spec.partitions, "replicas": spec.replicas}
        if spec.config:
            plain["config"] = dict(sorted(spec.config.items()))
        plain["adopt"] = spec.adopt
        if spec.cluster:
            plain["cluster"] = spec.cluster
        return plain
    metadata: dict[str, Any] = {"name": spec.name if _K8S_NAME.match(spec.name) else _k8s_name(spec.name)}
    if cluster := spec.cluster or topics.CLUSTER:
        metadata["labels"] = {CLUSTER_LABEL: cluster}
    if spec.adopt:
        metadata["annotations"] = {ADOPT_ANNOTATION: "true"}
    body: dict[str, Any] = {"partitions": spec.partitions, "replicas": spec.replicas}
    if metadata["name"] != spec.name:
        body = {"topicName": spec.name, **body}
    if spec.config:
        body["config"] = dict(sorted(spec.config.items()))
    return {"apiVersion": "kafka.strimzi.io/v1beta2", "kind": "KafkaTopic", "metadata": metadata, "spec": body}


def _k8s_name(topic: str) -> str:
    """A Kubernetes name for a topic whose own is not one (as Strimzi's operator makes them: lower case, other
    characters as '-', and a hash of the name so that two topics never share one)."""
    import hashlib

    base = re.sub(r"[^a-z0-9.-]", "-", topic.lower()).strip("-.")[:200] or "topic"
    return f"{base}---{hashlib.sha1(topic.encode()).hexdigest()[:40]}"
