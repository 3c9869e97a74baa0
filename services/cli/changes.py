"""What applying specs would change: per topic, against the live cluster and the specs already on the bus
(``ballast diff``, ``ballast apply --dry-run``), and when applied specs have settled (``apply --wait``).

Pure functions over what the CLI gathered. What the cluster gets is decided by the topic reconciler's own ``plan``
(services/topic_reconciler/logic.py: configs only for the keys a spec names, partitions never removed, a replication
factor held while too few brokers are alive), rendered here, never re-derived."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum

from events import conditions
from events import RebalanceRequest, RebalanceState, RebalanceStatus, ReplicasChangeState, TopicSpec, TopicStatus
from events.topic_configs import topic_config_problem
from services.adapters.admin.port import TopicDefaults, TopicDescription
from services.topic_reconciler.logic import (
    Action,
    AlterConfig,
    CreatePartitions,
    CreateTopic,
    RequestReplicasChange,
    ConfigOwnership,
    effective_spec,
    plan,
)
from services.domain.policy import Policy, Violation, check_withdrawal, refusals
from services.rebalancer.logic import on_request


class Verdict(StrEnum):
    CREATE = "create"
    CHANGE = "change"
    UNCHANGED = "unchanged"
    WITHDRAW = "withdraw"  # --prune: a managed topic the files no longer name
    REFUSED = "refused"


@dataclass
class Diff:
    """What applying one manifest would do."""

    name: str
    verdict: Verdict
    changes: list[str] = field(default_factory=list)  # what the cluster gets
    warnings: list[str] = field(default_factory=list)

    @property
    def label(self) -> str:
        return self.name

    def document(self) -> dict[str, object]:
        raise NotImplementedError


@dataclass
class TopicDiff(Diff):
    spec_changes: list[str] = field(default_factory=list)  # what changes in the spec alone (placement choices)
    publish: bool = True  # False: the same spec is on the bus already (its generation stays)

    def document(self) -> dict[str, object]:
        return {"topic": self.name, "verdict": self.verdict.value, "changes": self.changes,
                "specChanges": self.spec_changes, "warnings": self.warnings, "publish": self.publish}


@dataclass
class RebalanceDiff(Diff):
    """What applying a rebalance request would do; the rebalancer's own ``on_request`` decides."""

    @property
    def label(self) -> str:
        return f"rebalance {self.name}"

    def document(self) -> dict[str, object]:
        return {"rebalance": self.name, "verdict": self.verdict.value, "changes": self.changes,
                "warnings": self.warnings}


def rebalance_diff(request: RebalanceRequest, current: RebalanceStatus | None, now: datetime) -> RebalanceDiff:
    """``current``: the rebalance's status on the bus now (None: never requested)."""
    asked = f"mode {request.mode}" + (f", brokers {', '.join(map(str, request.brokers))}" if request.brokers else "")
    then = ("executed as soon as it is ready (auto-approved)" if request.auto_approve
            else f"executed once approved (ballast rebalance approve {request.name})")
    after = on_request(current, request, now)
    if after is None:
        assert current is not None, "a first request always starts a rebalance"
        if request == current.pending_request:
            return RebalanceDiff(request.name, Verdict.UNCHANGED, changes=[
                "the same request is waiting: the execution goes on with the previous one until a refresh"])
        return RebalanceDiff(request.name, Verdict.UNCHANGED, changes=[f"the same request is {current.state}"])
    if current is None or current.deleted:
        return RebalanceDiff(request.name, Verdict.CREATE,
                             changes=[f"{asked}: Cruise Control computes a proposal, {then}"])
    if after.state == current.state == RebalanceState.REBALANCING:
        if after.pending_request is None:  # the request being executed, asked again
            return RebalanceDiff(request.name, Verdict.CHANGE, changes=[
                f"{asked}: the request waiting for a refresh is dropped; the execution goes on with this one"])
        return RebalanceDiff(request.name, Verdict.CHANGE, changes=[
            f"{asked}: waits, the execution goes on with the previous request (refresh to start over with this one)"])
    return RebalanceDiff(request.name, Verdict.CHANGE, changes=[
        f"{asked}: starts over ({current.state} -> {after.state}), Cruise Control computes a new proposal, {then}"])


_SPEC_ONLY = {"placer": "placer", "load_aware": "loadAware", "adopt": "adopt",
              "min_required_replicas": "minRequiredReplicas", "paused": "paused", "managed": "managed",
              "drift": "drift"}


def policy_refusal(name: str, violations: list[Violation]) -> TopicDiff | None:
    """A spec the policy refuses, as its diff (the reconciler would refuse it too), or None."""
    if broken := refusals(violations):
        return TopicDiff(name, Verdict.REFUSED, warnings=[str(v) for v in broken], publish=False)
    return None


def diff_topic(spec: TopicSpec, current: TopicSpec | None, actual: TopicDescription | None,
               alive_brokers: int | None, violations: list[Violation] | None = None, *,
               config_ownership: ConfigOwnership = "named", defaults: TopicDefaults | None = None) -> TopicDiff:
    """``current``: the spec on the bus now; ``actual``: the topic in the cluster (None: absent); ``alive_brokers``:
    None when unknown; ``violations``: the policy's rules it breaks; ``config_ownership``: the reconciler's;
    ``defaults``: the cluster's topic defaults, where the spec leaves a new topic's partitions or replicas to them.
    What the cluster gets is the topic reconciler's own plan for the effective spec, said in words; the CLI adds only
    what concerns the spec itself (its config and the policy checked before publishing, adoption, placement
    choices)."""
    if problem := topic_config_problem(spec.config):
        return TopicDiff(spec.name, Verdict.REFUSED, warnings=[f"config: {problem}"], publish=False)
    if refused := policy_refusal(spec.name, violations or []):
        return refused
    result = TopicDiff(spec.name, Verdict.CREATE if actual is None else Verdict.UNCHANGED, publish=spec != current)
    effective = effective_spec(spec, actual, None, defaults)
    if effective is None:
        result.warnings.append("partitions or replicas left to the cluster, whose defaults could not be read")
        result.verdict = Verdict.CREATE
        return result
    planned = plan(effective, actual, None, alive_brokers=alive_brokers, config_ownership=config_ownership)
    result.changes = [line for action in planned.actions for line in _said(action, actual)]
    result.warnings = [c.message for c in planned.warnings if c.message] + [str(v) for v in violations or []]
    if actual is None and spec.adopt:
        result.warnings.append("adopt: true, but there is no topic to adopt: Ballast creates it")
    if actual is None and alive_brokers is not None and effective.replicas > alive_brokers:  # type: ignore[operator]
        result.warnings.append(
            f"replication factor {effective.replicas} is more than the {alive_brokers} broker(s) alive: the topic is "
            "created only where the cluster's placement creates topics under-replicated (placeholder replicas, "
            "filled when brokers return: BALLAST_PLACEMENT__UNDER_REPLICATED); otherwise its status says why not")
    if actual is not None and current is None:
        result.spec_changes.append("added: Ballast reconciles this existing topic from now on")
    if actual is not None and current is None and not spec.adopt:
        result.warnings.append("the topic exists and Ballast did not create it: it is reconciled, but withdrawing "
                               "the spec leaves it (adopt: true makes it Ballast's, deletion included)")
    if current is not None:
        for attribute, shown in _SPEC_ONLY.items():
            before, after = getattr(current, attribute), getattr(spec, attribute)
            if before != after:
                result.spec_changes.append(f"{shown}: {_text(before)} -> {_text(after)}")
        if actual is not None:
            result.spec_changes += _already_there(spec, current, actual, planned.actions)
    if result.verdict is Verdict.UNCHANGED and (result.changes or result.spec_changes or planned.warnings
                                                or current is None):
        result.verdict = Verdict.CHANGE
    return result


def _already_there(spec: TopicSpec, current: TopicSpec, actual: TopicDescription, actions: list[Action]) -> list[str]:
    """What changes in the spec on the bus that the cluster needs no action for (it has it already, or the spec only
    stops naming a config): publishing the spec is still a change, a new generation, and says so."""
    said: list[str] = []
    for field, has in (("partitions", actual.partition_count), ("replicas", actual.replication_factor)):
        before, after = getattr(current, field), getattr(spec, field)
        if before != after and after in (None, has):  # what the plan does or warns about otherwise says it
            said.append(f"{field}: {_text(before)} -> {_text(after)} (the topic has {has})")
    altered = {k for a in actions if isinstance(a, AlterConfig) for k in a.config}
    for key in sorted(current.config.keys() | spec.config.keys()):
        before, after = current.config.get(key), spec.config.get(key)
        if before == after or key in altered:
            continue
        if after is None:
            said.append(f"config {key}: no longer in the spec (the topic keeps {actual.config.get(key, '(default)')})")
        else:
            said.append(f"config {key}: {_text(before)} -> {after} (the topic has it already)")
    return said


def _said(action: Action, actual: TopicDescription | None) -> list[str]:
    """One planned action in words (with the cluster's values it replaces)."""
    if isinstance(action, CreateTopic):
        configs = ", ".join(f"{k}={v}" for k, v in sorted(action.config.items()))
        return [f"create: {action.partitions} partitions, replication factor {action.replication_factor}"
                + (f", {configs}" if configs else "")]
    assert actual is not None, "only a create has no topic in the cluster"
    if isinstance(action, CreatePartitions):
        return [f"partitions {actual.partition_count} -> {action.total}"]
    if isinstance(action, AlterConfig):
        return [f"config {key}: {actual.config.get(key, '(default)')} -> "
                + (value if value is not None else "(default: removed, not in the spec)")
                for key, value in sorted(action.config.items())]
    if isinstance(action, RequestReplicasChange) and action.differs:
        return [f"replication factor {actual.replication_factor} -> {action.target_replicas} (through Cruise Control)"]
    return []


def _text(value: object) -> str:
    if value is None:
        return "(default)"
    return str(value).lower() if isinstance(value, bool) else str(value)


# -- withdrawing (delete, --prune) -------------------------------------------------------------------------------------

class Withdrawal(StrEnum):
    DELETES = "deletes"  # Ballast created or adopted the topic: it is deleted with its data
    RETAINS = "retains"  # the topic stays: Ballast neither created nor adopted it (or the spec let go of it)
    NO_TOPIC = "no-topic"  # there is no such topic in the cluster


def withdrawal(status: TopicStatus) -> Withdrawal:
    """What withdrawing a topic's spec does, from its status: the reconciler deletes what it created or adopted,
    whatever its last status showed of the topic; the status's partitions are the cluster's."""
    if status.origin is not None:
        return Withdrawal.DELETES
    return Withdrawal.NO_TOPIC if status.partitions is None else Withdrawal.RETAINS


_WITHDRAWN = {Withdrawal.DELETES: "spec withdrawn: the topic is deleted with its data",
              Withdrawal.RETAINS: "spec withdrawn: the topic stays (Ballast neither created nor adopted it)",
              Withdrawal.NO_TOPIC: "spec withdrawn: there is no such topic in the cluster"}


def prune(specified: Iterable[str], named: Iterable[str], statuses: Mapping[str, TopicStatus],
          policy: Policy | None = None) -> list[TopicDiff]:
    """``--prune``: the specs on the bus (``specified``) that the files no longer name, each withdrawn, with what
    that does to its topic, or refused where the policy protects it. Internal and Ballast's own topics never have a
    spec, so never appear here."""
    named = set(named)
    diffs = []
    for name in sorted(set(specified) - named):
        if policy is not None and (protected := check_withdrawal(policy, name)) is not None:
            diffs.append(TopicDiff(name, Verdict.REFUSED, warnings=[str(protected)], publish=False))
            continue
        status = statuses.get(name)
        effect = withdrawal(status) if status is not None and not status.deleted else Withdrawal.NO_TOPIC
        diffs.append(TopicDiff(name, Verdict.WITHDRAW, changes=[_WITHDRAWN[effect]]))
    return diffs


# -- --wait ----------------------------------------------------------------------------------------------------------

class Outcome(StrEnum):
    WAITING = "waiting"
    READY = "ready"
    # The topic is there and ready, but the spec's RF cannot be reached now (too few brokers): what the status says.
    BLOCKED = "blocked"
    # Paused or let go of before its topic existed: settled as the spec asks, but there is no topic (not ready).
    HELD = "held"
    FAILED = "failed"


def outcome(spec: TopicSpec, generation: int, status: TopicStatus | None) -> tuple[Outcome, str]:
    """Where an applied spec stands: ready once the reconciler has acted on ``generation`` (or a later one) and the
    topic has what the spec asks; failed when it says it cannot get there."""
    if status is None or status.observed_generation < generation or status.deleted:
        return Outcome.WAITING, "waiting for the reconciler"
    ready = status.condition(conditions.READY)
    if ready is not None and ready.status == "False" and ready.reason in (
            "ReconcileError", "PolicyViolation", conditions.NOT_OWNER, conditions.QUOTA_EXCEEDED):
        # A tenant's refusals (issue 53) say why in their own condition.
        refused = next((c for c in (status.condition(conditions.POLICY_VIOLATION),
                                    status.condition(conditions.NOT_OWNER), status.condition(conditions.QUOTA_EXCEEDED))
                        if c is not None), None)
        return Outcome.FAILED, (refused or ready).message or "the reconciler failed"
    blocked = status.condition(conditions.REPLICAS_CHANGE_BLOCKED)
    if blocked is not None and blocked.status == "True":
        ready_now = f"ready at replication factor {status.replicas}; " if status.ready else ""
        return Outcome.BLOCKED, ready_now + (blocked.message or "the replication-factor change is blocked")
    for held, asked in ((conditions.RECONCILIATION_PAUSED, spec.paused), (conditions.UNMANAGED, not spec.managed)):
        if asked and (condition := status.condition(held)) is not None:
            if status.ready:
                return Outcome.READY, condition.message or held
            ready = status.condition(conditions.READY)
            return Outcome.HELD, (ready.message if ready is not None else None) or condition.message or held
    change = status.replicas_change
    # What the spec leaves to the cluster is whatever the topic got.
    if status.ready and spec.replicas in (None, status.replicas) and (status.partitions or 0) >= (
            spec.partitions or 0) and (change is None or change.state == ReplicasChangeState.COMPLETED):
        return Outcome.READY, "ready"
    if change is not None and change.state != ReplicasChangeState.COMPLETED:
        return Outcome.WAITING, f"replication factor {status.replicas} -> {change.target_replicas}: {change.state}"
    return Outcome.WAITING, "not ready yet"
