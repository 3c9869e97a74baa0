"""The names users give in specs and settings, checked by the rules of whoever takes them: Kafka's for topics,
Kubernetes' for clusters and tenants (whose names also go into bus topics' names), and the replica placers Ballast
has."""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import AfterValidator

# Kafka's own rule for topic names (kafka.common.internals.Topic).
_TOPIC_NAME = re.compile(r"^[a-zA-Z0-9._-]{1,249}$")


def check_topic_name(name: str) -> str:
    if name in {".", ".."} or not _TOPIC_NAME.match(name):
        raise ValueError(
            f"invalid Kafka topic name {name!r}: use 1-249 characters from [a-zA-Z0-9._-], not '.' or '..'"
        )
    return name


TopicName = Annotated[str, AfterValidator(check_topic_name)]

# A Kafka cluster's name as Strimzi's KafkaTopics give it (label strimzi.io/cluster: a Kubernetes name), and a
# tenant's: each also goes into bus topics' and consumer groups' names (events.topics).
_BUS_NAME = re.compile(r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$")


def _bus_name(name: str, what: str, why: str) -> str:
    if not _BUS_NAME.match(name):
        raise ValueError(f"invalid {what} name {name!r}: use 1-63 lower-case letters, digits and '-', beginning and "
                         f"ending with a letter or digit ({why})")
    return name


def check_cluster_name(name: str) -> str:
    return _bus_name(name, "cluster", "a Kubernetes name, as strimzi.io/cluster takes")


ClusterName = Annotated[str, AfterValidator(check_cluster_name)]


def check_tenant_name(name: str) -> str:
    return _bus_name(name, "tenant", "it names the tenant's topics on the bus")


# A tenant of the tenants file (services/domain/tenants.py) by its name, which also names its topics on the bus.
TenantName = Annotated[str, AfterValidator(check_tenant_name)]

# The replica placers a spec or the settings may name (services.placement.placer registers one class per name).
PlacerName = Literal["striped", "multi-level"]
