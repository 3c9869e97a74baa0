"""What applying specs would change: per topic, against the live cluster and the specs already on the bus
(``ballast diff``, ``ballast apply --dry-run``), and when applied specs have settled (``apply --wait``).

Pure functions over what the CLI gathered; the reconciler's own rules decide what it does (services/topic_reconciler/
logic.py): configs only for the keys a spec names, partitions never removed, a replication factor held while too few
brokers are alive."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from events import ReplicasChangeState, TopicSpec, TopicStatus
from events.topic_configs import topic_config_problem
from services.common.admin.port import TopicDescription


class Verdict(StrEnum):
    CREATE = "create"
    CHANGE = "change"
    UNCHANGED = "unchanged"
    REFUSED = "refused"


@dataclass
class TopicDiff:
    name: str
    verdict: Verdict
    changes: list[str] = field(default_factory=list)  # what the cluster gets
    spec_changes: list[str] = field(default_factory=list)  # what changes in the spec alone (placement choices)
    warnings: list[str] = field(default_factory=list)
    publish: bool = True  # False: the same spec is on the bus already (its generation stays)

    def document(self) -> dict[str, object]:
        return {"topic": self.name, "verdict": self.verdict.value, "changes": self.changes,
                "specChanges": self.spec_changes, "warnings": self.warnings, "publish": self.publish}


_SPEC_ONLY = {"placer": "placer", "load_aware": "loadAware", "adopt": "adopt",
              "min_required_replicas": "minRequiredReplicas"}


def diff_topic(spec: TopicSpec, current: TopicSpec | None, actual: TopicDescription | None,
               alive_brokers: int | None) -> TopicDiff:
    """``current``: the spec on the bus now; ``actual``: the topic in the cluster (None: absent); ``alive_brokers``:
    None when unknown."""
    if problem := topic_config_problem(spec.config):
        return TopicDiff(spec.name, Verdict.REFUSED, warnings=[f"config: {problem}"], publish=False)
    result = TopicDiff(spec.name, Verdict.UNCHANGED, publish=spec != current)
    if actual is None:
        result.verdict = Verdict.CREATE
        configs = ", ".join(f"{k}={v}" for k, v in sorted(spec.config.items()))
        result.changes.append(f"create: {spec.partitions} partitions, replication factor {spec.replicas}"
                              + (f", {configs}" if configs else ""))
        if spec.adopt:
            result.warnings.append("adopt: true, but there is no topic to adopt: Ballast creates it")
    else:
        if spec.partitions > actual.partition_count:
            result.changes.append(f"partitions {actual.partition_count} -> {spec.partitions}")
        elif spec.partitions < actual.partition_count:
            result.warnings.append(f"partitions {actual.partition_count} -> {spec.partitions}: Kafka cannot remove "
                                   f"partitions; the topic keeps {actual.partition_count}")
        if spec.replicas != actual.replication_factor:
            result.changes.append(f"replication factor {actual.replication_factor} -> {spec.replicas} (through "
                                  "Cruise Control)")
        for key, value in sorted(spec.config.items()):
            if key not in actual.config:
                result.changes.append(f"config {key}: (default) -> {value}")
            elif actual.config[key] != value:
                result.changes.append(f"config {key}: {actual.config[key]} -> {value}")
        if current is None and not spec.adopt:
            result.warnings.append("the topic exists and Ballast did not create it: it is reconciled, but withdrawing "
                                   "the spec leaves it (adopt: true makes it Ballast's, deletion included)")
    if alive_brokers is not None and spec.replicas > alive_brokers and (
            actual is None or spec.replicas != actual.replication_factor):
        result.warnings.append(f"replication factor {spec.replicas} cannot be reached: {alive_brokers} broker(s) "
                               "are alive")
    if current is not None:
        for attribute, shown in _SPEC_ONLY.items():
            before, after = getattr(current, attribute), getattr(spec, attribute)
            if before != after:
                result.spec_changes.append(f"{shown}: {_text(before)} -> {_text(after)}")
    if result.verdict is Verdict.UNCHANGED and (result.changes or result.spec_changes or current is None):
        result.verdict = Verdict.CHANGE
    return result


def _text(value: object) -> str:
    if value is None:
        return "(default)"
    return str(value).lower() if isinstance(value, bool) else str(value)


# -- --wait ----------------------------------------------------------------------------------------------------------

class Outcome(StrEnum):
    WAITING = "waiting"
    READY = "ready"
    FAILED = "failed"


def outcome(spec: TopicSpec, generation: int, status: TopicStatus | None) -> tuple[Outcome, str]:
    """Where an applied spec stands: ready once the reconciler has acted on ``generation`` (or a later one) and the
    topic has what the spec asks; failed when it says it cannot get there."""
    if status is None or status.observed_generation < generation or status.deleted:
        return Outcome.WAITING, "waiting for the reconciler"
    ready = status.condition("Ready")
    if ready is not None and ready.status == "False" and ready.reason == "ReconcileError":
        return Outcome.FAILED, ready.message or "the reconciler failed"
    blocked = status.condition("ReplicasChangeBlocked")
    if blocked is not None and blocked.status == "True":
        return Outcome.FAILED, blocked.message or "the replication-factor change is blocked"
    change = status.replicas_change
    if status.ready and status.replicas == spec.replicas and (status.partitions or 0) >= spec.partitions and (
            change is None or change.state == ReplicasChangeState.COMPLETED):
        return Outcome.READY, "ready"
    if change is not None and change.state != ReplicasChangeState.COMPLETED:
        return Outcome.WAITING, f"replication factor {status.replicas} -> {change.target_replicas}: {change.state}"
    return Outcome.WAITING, "not ready yet"
