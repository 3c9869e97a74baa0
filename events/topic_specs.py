"""Specs: the desired state of each Kafka topic, and the withdrawal of one (Ballast then deletes the topic)."""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import Field, field_validator

from events.models import Event
from events.names import ClusterName, PlacerName, TenantName, TopicName
from events.strict import StrictBool, StrictInt


def kafka_config_value(key: str, value: Any) -> str:
    """A topic config value as Kafka takes it: strings as they are, numbers rendered as Kafka renders them. Anything
    else (a boolean, null, a list, an object) is refused: Kafka would get ``"None"`` or ``"{'compact': True}"``."""
    if isinstance(value, str):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if isinstance(value, float) and value == value and value not in (float("inf"), float("-inf")):
        return repr(value)
    kinds = {bool: "a boolean", type(None): "null", list: "a list", dict: "an object"}
    kind = kinds.get(type(value), type(value).__name__)
    raise ValueError(f"config value of {key!r} must be a string or a number, not {kind}"
                     + (' (write "true" or "false")' if isinstance(value, bool) else ""))


# What the topic reconciler does with a topic found changed outside Ballast after its spec was applied: set it back,
# or only say so in the status.
DriftMode = Literal["correct", "report"]


class TopicSpec(Event):
    """Desired state of one Kafka topic. The latest spec per topic wins."""

    SCHEMA: ClassVar[str] = "ballast.TopicSpec"

    name: TopicName
    # None (a KafkaTopic may leave them out): the cluster's num.partitions and default.replication.factor when the
    # topic is created, and whatever it has from then on, as Strimzi's Topic Operator does.
    partitions: StrictInt | None = Field(default=None, ge=1, le=100_000)
    replicas: StrictInt | None = Field(default=None, ge=1, le=32)
    config: dict[str, str] = Field(default_factory=dict)
    # Where new replicas go when the topic is created or grows partitions; None: the placer in the settings.
    placer: PlacerName | None = None
    # With too few brokers alive, under-replicated creation (when the policy allows it) needs at least this many
    # replicas on alive brokers; None: min(min.insync.replicas, replicas).
    min_required_replicas: StrictInt | None = Field(default=None, ge=1, le=32)
    # Where the placer has a choice, prefer the brokers carrying less load (the Spark aggregates); false: counts only.
    load_aware: StrictBool = True
    # The topic may already exist: Ballast then owns it as if it had created it, deletion included. Without it an
    # existing topic's partitions, configs and replicas are still reconciled, but withdrawing the spec leaves it.
    adopt: StrictBool = False
    # Nothing is changed on the topic while paused (Strimzi's strimzi.io/pause-reconciliation); its status says so.
    paused: StrictBool = False
    # false: Ballast lets go of the topic (Strimzi's strimzi.io/managed): nothing is changed on it, and withdrawing the
    # spec leaves it, whoever created it.
    managed: StrictBool = True
    # When the topic is found changed outside Ballast: set it back (correct) or only say so (report); None: the
    # reconciler's setting (BALLAST_RECONCILER__DRIFT).
    drift: DriftMode | None = None
    # A KafkaTopic's metadata.name where it differs from the topic's name (spec.topicName): statuses can be asked for
    # by it too.
    resource_name: str | None = Field(default=None, max_length=253)
    # The cluster the spec is for (a KafkaTopic's strimzi.io/cluster label): a deployment named for another cluster
    # (BALLAST_CLUSTER) does not act on it. None: whichever deployment reads it.
    cluster: ClusterName | None = None
    # The tenant whose spec this is (issue 53): set by Ballast's tenant gate as it forwards a spec from the tenant's
    # own spec topic, never taken from the tenant (the gate writes over it). None: an admin's spec.
    owner: TenantName | None = None

    @field_validator("config", mode="before")
    @classmethod
    def _render_config(cls, value: Any) -> Any:
        # YAML users write `retention.ms: 604800000` and `min.insync.replicas: 2`; Kafka configs are strings.
        if isinstance(value, dict):
            return {k: kafka_config_value(k, v) if isinstance(k, str) else v for k, v in value.items()}
        return value

    @property
    def key(self) -> str:
        return self.name


class TopicSpecDeleted(Event):
    """The spec was withdrawn: Ballast deletes the topic."""

    SCHEMA: ClassVar[str] = "ballast.TopicSpecDeleted"

    name: TopicName
    # The tenant that withdrew it (set by the tenant gate, as on TopicSpec): its status topic hears of the deletion.
    owner: TenantName | None = None

    @property
    def key(self) -> str:
        return self.name


TOPIC_SPEC_EVENT_TYPES: tuple[type[Event], ...] = (TopicSpec, TopicSpecDeleted)
