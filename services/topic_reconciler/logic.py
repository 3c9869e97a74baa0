"""Pure logic of the topic reconciler: what to do for one topic, and what its status says.

Generation: a spec's generation is its record's offset + 1 in the specs topic (monotonic per topic, like Kubernetes'
metadata.generation); ``observedGeneration`` is the generation the reconciler last acted on.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal

from events import (
    Condition,
    PlaceholderRecord,
    ReplicasChangeCommand,
    ReplicasChangeRecord,
    ReplicasChangeState,
    ReplicasChangeStatus,
    TopicSpec,
    TopicStatus,
)
from events import placeholders as placeholder
from events.conditions import (
    CONFIG_IGNORED,
    DRIFT,
    PARTITIONS_DECREASE_NOT_SUPPORTED,
    PARTITIONS_MOVING,
    POLICY_VIOLATION,
    READY,
    RECONCILIATION_PAUSED,
    REPLICAS_CHANGE_BLOCKED,
    RF_BELOW_MIN_INSYNC,
    UNDER_REPLICATED,
    UNMANAGED,
)
from events.topic_specs import DriftMode
from events.topic_status import TopicOrigin
from events.topic_configs import THROTTLE_LISTS
from services.domain.policy import Policy, Violation, check_spec, check_withdrawal, refusals
from services.adapters.admin import AdminError, TopicDefaults, TopicDescription
from services.placement.model import PlacementError
# The replicas-change service's rule for accepting a command, which the status predicts (written once, used by both).
from services.domain.replicas_change import in_flight, in_flight_elsewhere, on_command


@dataclass(frozen=True)
class CreateTopic:
    name: str
    partitions: int
    replication_factor: int
    config: dict[str, str]
    placer: str | None = None  # None: the placer in the settings
    min_required_replicas: int | None = None


@dataclass(frozen=True)
class DeleteTopic:
    name: str


@dataclass(frozen=True)
class CreatePartitions:
    name: str
    total: int
    replication_factor: int
    # The replicas of the partitions the topic has: the placer continues after them.
    existing: tuple[tuple[int, ...], ...] = ()
    placer: str | None = None


@dataclass(frozen=True)
class AlterConfig:
    name: str
    config: dict[str, str | None]  # None: removed from the topic (back to the cluster's default)


@dataclass(frozen=True)
class RequestReplicasChange:
    name: str
    target_replicas: int
    # The RF differs from the target (False: a revert to the current RF, which the replicas-change service settles).
    differs: bool = True


Action = CreateTopic | DeleteTopic | CreatePartitions | AlterConfig | RequestReplicasChange


@dataclass
class Plan:
    actions: list[Action] = field(default_factory=list)
    warnings: list[Condition] = field(default_factory=list)
    # What differed from a spec already applied (a Drift condition, also in ``warnings``), and its kinds.
    drift: Condition | None = None
    drift_kinds: tuple[str, ...] = ()


def plan(spec: TopicSpec | None, actual: TopicDescription | None, change: ReplicasChangeRecord | None,
         placeholders: PlaceholderRecord | None = None, alive_brokers: int | None = None,
         origin: TopicOrigin | None = "created", *, applied: bool = False,
         drift_mode: DriftMode = "correct", policy: Policy | None = None, moving: int = 0,
         config_ownership: ConfigOwnership = "named", count_seen_before: bool = True,
         cordoned_brokers: int = 0) -> Plan:
    """``spec`` None means the spec was deleted. ``placeholders``: replicas the topic was created without;
    ``alive_brokers``: how many brokers are alive now (None: not known); ``origin``: whether Ballast created or
    adopted the topic (None: neither, so it is never deleted); ``applied``: this spec was carried out already, so
    whatever differs now was changed outside Ballast (drift), which the spec's ``drift`` or else ``drift_mode``
    corrects or only reports; ``policy``: the rules a spec (or its withdrawal) must meet to be acted on;
    ``moving``: how many of its partitions are being reassigned now (by anyone), which makes its replica count
    say nothing of its replication factor (``reassigning``); ``count_seen_before``: the replica count differing from
    the spec's was seen at the previous look too, with no move in flight (``differing_count``); ``config_ownership``:
    which of the topic's own configs are the spec's (``configs_to_set``); ``cordoned_brokers``: how many of the alive
    brokers have every log directory cordoned (they take no new replica). ``spec`` is the effective one (``effective_spec``): partitions and replicas
    known."""
    result = Plan()
    if spec is None:
        if actual is not None and origin is not None:
            if policy is not None and (protected := check_withdrawal(policy, actual.name)) is not None:
                result.warnings.append(policy_condition([protected]))
            else:
                result.actions.append(DeleteTopic(actual.name))
        return result
    if policy is not None and (broken := refusals(check_spec(policy, spec))):
        result.warnings.append(policy_condition(broken))
        return result
    if (hold := hands_off(spec)) is not None:
        result.warnings.append(hold)
        return result
    if actual is None:
        # Missing: never created, or deleted outside Ballast. Either way, (re)create it with the target RF.
        result.actions.append(CreateTopic(spec.name, spec.partitions, spec.replicas, dict(spec.config), spec.placer,
                                          spec.min_required_replicas))
        return result
    if spec.partitions > actual.partition_count:
        result.actions.append(CreatePartitions(spec.name, spec.partitions, actual.replication_factor,
                                               tuple(p.replicas for p in actual.partitions), spec.placer))
    elif spec.partitions < actual.partition_count:
        result.warnings.append(Condition(
            type=PARTITIONS_DECREASE_NOT_SUPPORTED, status="True", reason="NotSupported",
            message=f"Kafka cannot remove partitions: the topic keeps {actual.partition_count} "
                    f"(spec asks for {spec.partitions})"))
    differing = configs_to_set(spec, actual, config_ownership)
    if ignored := sorted(THROTTLE_LISTS & spec.config.keys()):
        result.warnings.append(Condition(
            type=CONFIG_IGNORED, status="True", reason="SetDuringMoves",
            message=f"{', '.join(ignored)}: set by Cruise Control and the throttle controller while replicas move, "
                    "and taken out when they end; not set from the spec"))
    held = reassigning(spec, actual, change, moving)
    rf_drift = replicas_drifted(spec, actual, change, placeholders) if applied and held is None else False
    # A move that ended between the topic's description and the list of reassignments shows its old and new replicas
    # without a move in flight, for a moment: a count that differs from an applied spec's is judged once seen twice.
    unconfirmed = rf_drift and not count_seen_before
    rf_drift = rf_drift and not unconfirmed
    if applied and (differing or rf_drift):
        drift_mode = spec.drift or drift_mode
        result.drift = drift_condition(spec, actual, differing, rf_drift, drift_mode)
        result.drift_kinds = tuple(k for k, found in (("config", differing), ("replicas", rf_drift)) if found)
        result.warnings.append(result.drift)
        if drift_mode == "report":
            return result
    if differing:
        result.actions.append(AlterConfig(spec.name, differing))
    if waiting_for_brokers(placeholders, actual, spec):
        assert placeholders is not None
        result.warnings.append(under_replicated_condition(placeholders, alive_brokers))
        if alive_brokers is None or alive_brokers - cordoned_brokers < spec.replicas:
            # Nothing to fill them with yet (a fully cordoned broker takes no new replica): asking Cruise Control
            # would only be refused, or put one where the operator said none may go.
            return result
        # Enough brokers again: the replication-factor change below fills the placeholders.
    if held is not None:
        result.warnings.append(held)
        return result
    if unconfirmed:
        return result  # judged at the next look
    if actual.replication_factor != spec.replicas and alive_brokers is not None and spec.replicas > alive_brokers:
        # Cruise Control would refuse it, and with it every change sent in the same request: hold it here (a change
        # sent before the brokers went stays with the replicas-change service, which retries it on its own).
        result.warnings.append(Condition(
            type=REPLICAS_CHANGE_BLOCKED, status="True", reason="NotEnoughBrokers",
            message=f"target replication factor {spec.replicas} cannot be reached: only {alive_brokers} "
                    "broker(s) are alive; the change is requested once enough are"))
        return result
    if (blocked := _cordons_block(spec, actual, alive_brokers, cordoned_brokers)) is not None:
        result.warnings.append(blocked)
        return result
    if actual.replication_factor != spec.replicas and not in_flight(change, spec.replicas):
        result.actions.append(RequestReplicasChange(spec.name, spec.replicas))
    elif actual.replication_factor == spec.replicas and in_flight_elsewhere(change, spec.replicas):
        # The spec was reverted while a change to another RF was pending or ongoing: tell the replicas-change
        # service the target is the current RF again, so it settles (or follows up) instead of retrying the old one.
        result.actions.append(RequestReplicasChange(spec.name, spec.replicas, differs=False))
    return result


def _cordons_block(spec: TopicSpec, actual: TopicDescription, alive: int | None, cordoned: int) -> Condition | None:
    """An increase only the cordoned brokers could give (KIP-1066: they take no new replica) is held, as Kafka
    refuses such a creation; it is asked for once enough brokers take replicas again."""
    if alive is None or not cordoned or actual.replication_factor >= spec.replicas:
        return None
    usable = alive - cordoned
    if spec.replicas <= usable:
        return None
    return Condition(
        type=REPLICAS_CHANGE_BLOCKED, status="True", reason="BrokersCordoned",
        message=f"target replication factor {spec.replicas} cannot be reached without a cordoned broker: {cordoned} "
                f"of the {alive} alive broker(s) have all their log directories cordoned, {usable} take new replicas; "
                "the change is requested once enough do")


ConfigOwnership = Literal["named", "all"]


def configs_to_set(spec: TopicSpec, actual: TopicDescription, ownership: ConfigOwnership) -> dict[str, str | None]:
    """The configs that differ from the spec's: each it names with another value; with ``all``, also each set on the
    topic itself that it does not name (None: removed), as Strimzi's Topic Operator owns a topic's configs. The
    replication throttles' lists are others' (``THROTTLE_LISTS``), whatever the ownership."""
    differing: dict[str, str | None] = {k: v for k, v in spec.config.items()
                                        if actual.config.get(k) != v and k not in THROTTLE_LISTS}
    if ownership == "all":
        differing.update({k: None for k in actual.own_config if k not in spec.config and k not in THROTTLE_LISTS})
    return differing


def effective_spec(spec: TopicSpec | None, actual: TopicDescription | None, placeholders: PlaceholderRecord | None,
                   defaults: TopicDefaults | None) -> TopicSpec | None:
    """The spec with what it leaves to the cluster filled in, as Strimzi's Topic Operator reads a KafkaTopic without
    partitions or replicas: an existing topic keeps its own (or the replication factor it was created for, while
    placeholders wait for brokers), a new one gets the cluster's defaults. None when a new topic needs ``defaults``
    and they are not known (``needs_defaults``)."""
    if spec is None or (spec.partitions is not None and spec.replicas is not None):
        return spec
    if actual is not None:
        waiting = placeholders is not None and placeholders.placeholders > 0
        fill = {"partitions": actual.partition_count,
                "replicas": placeholders.replication_factor if waiting else actual.replication_factor}
    elif defaults is not None:
        fill = {"partitions": defaults.partitions, "replicas": defaults.replication_factor}
    else:
        return None
    return spec.model_copy(update={k: v for k, v in fill.items() if getattr(spec, k) is None})


def needs_defaults(spec: TopicSpec | None, actual: TopicDescription | None) -> bool:
    """Creating this spec's topic takes the cluster's topic defaults."""
    return spec is not None and actual is None and (spec.partitions is None or spec.replicas is None)


def policy_condition(violations: list[Violation]) -> Condition:
    return Condition(type=POLICY_VIOLATION, status="True", reason="Refused",
                     message="; ".join(map(str, violations)))


def hands_off(spec: TopicSpec) -> Condition | None:
    """Why nothing may be changed on this spec's topic (paused, or let go of), as its status says it; None: act."""
    if not spec.managed:
        return Condition(type=UNMANAGED, status="True", reason="ManagedFalse",
                         message="managed: false: Ballast changes nothing on this topic and leaves it when the spec "
                                 "is withdrawn")
    if spec.paused:
        return Condition(type=RECONCILIATION_PAUSED, status="True", reason="Paused",
                         message="reconciliation paused: nothing is changed on the topic until the spec resumes it")
    return None


def reassigning(spec: TopicSpec, actual: TopicDescription, change: ReplicasChangeRecord | None,
                moving: int) -> Condition | None:
    """Why the replication factor is not judged now, or None. While Kafka moves a partition its metadata lists the
    old replicas and the new together, so a topic in the middle of a move (a rebalance's, another tool's) shows a
    replica count that is neither its old RF nor its next: neither drift nor a reason to ask Cruise Control for a
    change, which would alter the topic in the middle of someone's reassignment. Ballast's own change in flight
    is followed as before (its record says what the move is for)."""
    if not moving or actual.replication_factor == spec.replicas:
        return None
    if in_flight(change, spec.replicas) or in_flight_elsewhere(change, spec.replicas):
        return None
    return Condition(
        type=PARTITIONS_MOVING, status="True", reason="Reassigning",
        message=f"{moving} of {actual.partition_count} partition(s) are being reassigned, which lists old and new "
                f"replicas together ({actual.replication_factor} now): the replication factor is compared with the "
                f"spec ({spec.replicas}) once the move ends")


def absence_unconfirmed(spec: TopicSpec | None, before: TopicDescription | None, now: TopicDescription | None,
                        absent_before: bool) -> bool:
    """A specified topic the last look showed is absent from this one, for the first time: acted on only once the
    next look agrees. Each read asks one broker, and one behind the others may not show a topic created a moment ago;
    creating it again would be refused (it exists), but the log directories sent before the creation would move its
    existing replicas."""
    return spec is not None and before is not None and now is None and not absent_before


def differing_count(spec: TopicSpec | None, actual: TopicDescription | None, moving: int) -> tuple[int, int] | None:
    """The replica count and the spec's, where they differ with no move in flight (what ``count_seen_before``
    compares from one look to the next); None otherwise."""
    if moving or not replicas_in_question(spec, actual):
        return None
    assert spec is not None and actual is not None and spec.replicas is not None
    return actual.replication_factor, spec.replicas


def replicas_in_question(spec: TopicSpec | None, actual: TopicDescription | None) -> bool:
    """The topic's replica count differs from its spec's: whether its partitions are moving decides what that
    means (``reassigning``), so only these are asked about."""
    return spec is not None and actual is not None and actual.replication_factor != spec.replicas


def replicas_drifted(spec: TopicSpec, actual: TopicDescription, change: ReplicasChangeRecord | None,
                     placeholders: PlaceholderRecord | None) -> bool:
    """The RF differs from an applied spec's with no change of Ballast's to explain it: none was ever needed, or the
    last one reached the spec's target (the replicas-change service saw it reached), and no replica waits for a
    broker."""
    settled = change is None or (change.state == ReplicasChangeState.COMPLETED
                                 and change.target_replicas == spec.replicas)
    return (actual.replication_factor != spec.replicas and settled
            and not waiting_for_brokers(placeholders, actual, spec))


def spec_applied(previous: TopicStatus | None, generation: int) -> bool:
    """The spec of this generation was carried out: a status for it said the topic was ready (an action that
    failed or was refused leaves it not ready)."""
    return previous is not None and previous.generation == generation and previous.ready and not previous.deleted


def drift_condition(spec: TopicSpec, actual: TopicDescription, differing: dict[str, str | None], replicas: bool,
                    mode: DriftMode) -> Condition:
    """What was changed outside Ballast, and what Ballast does about it."""
    found = [f"{k}={actual.config.get(k, '(default)')} " + (f"(spec {v})" if v is not None else "(not in the spec)")
             for k, v in sorted(differing.items())]
    if replicas:
        found.append(f"replication factor {actual.replication_factor} (spec {spec.replicas})")
    if mode == "report":
        return Condition(type=DRIFT, status="True", reason="Reported",
                         message=f"changed outside Ballast: {', '.join(found)}; left as it is (drift: report)")
    return Condition(type=DRIFT, status="True", reason="Corrected",
                     message=f"changed outside Ballast: {', '.join(found)}; set back to the spec")


def waiting_for_brokers(placeholders: PlaceholderRecord | None, actual: TopicDescription | None,
                        spec: TopicSpec | None) -> bool:
    """The topic still has replicas it was created without, and the spec still wants them."""
    return (placeholders is not None and placeholders.placeholders > 0 and actual is not None and spec is not None
            and spec.replicas == placeholders.replication_factor and actual.replication_factor < spec.replicas)


def placeholders_filled(placeholders: PlaceholderRecord | None, actual: TopicDescription | None,
                        spec: TopicSpec | None) -> bool:
    """A record still open whose topic no longer waits: filled (or the spec moved on). A topic not described (yet:
    a real broker's metadata may lag a create by moments) tells nothing; its deletion closes the record itself. While
    the spec still wants them, a partition short of its replicas holds the record open: Cruise Control's change
    reassigns a topic's partitions a few at a time, and most of them filled is not all."""
    if placeholders is None or placeholders.placeholders == 0 or actual is None:
        return False
    if waiting_for_brokers(placeholders, actual, spec):
        return False
    still_wanted = spec is not None and spec.replicas == placeholders.replication_factor
    return not (still_wanted and _short(placeholders, actual))


def _short(placeholders: PlaceholderRecord, actual: TopicDescription) -> bool:
    return any(_short_of(actual, index, replicas) for index, replicas in enumerate(placeholders.assignment))


def _short_of(actual: TopicDescription, index: int, replicas: list[int]) -> bool:
    """The topic's partition ``index`` has fewer replicas than the record's (a partition it no longer has is not)."""
    return index < len(actual.partitions) and len(actual.partitions[index].replicas) < len(replicas)


def filled_without_ballast(placeholders: PlaceholderRecord, actual: TopicDescription) -> dict[int, list[int]]:
    """The brokers that took a partition's placeholders without a fill of Ballast's own on record: Cruise Control's
    replication-factor change filled them (where Ballast could not move replicas directly), or Ballast's reassignment
    landed and the reconciler stopped before it said so. Partition -> the brokers it has beyond the record's real
    replicas, at most as many as it had placeholders (where its replicas also moved, which of them took the
    placeholders is not known: the first are named), and only once it has all its replicas; a partition the topic
    no longer has counts none."""
    filled: dict[int, list[int]] = {}
    for index, replicas in enumerate(placeholders.assignment):
        if index >= len(actual.partitions) or _short_of(actual, index, replicas):
            continue
        known = set(placeholder.real(replicas))
        missing = len(replicas) - len(known)
        if missing and (new := [b for b in actual.partitions[index].replicas if b not in known][:missing]):
            filled[index] = new
    return filled


def under_replicated_condition(placeholders: PlaceholderRecord, alive_brokers: int | None) -> Condition:
    partitions = placeholder.partitions_waiting(placeholders.assignment)
    intended = sorted({b for brokers in placeholders.intended.values() for b in brokers})
    alive = f"; {alive_brokers} broker(s) alive" if alive_brokers is not None else ""
    when = (f"filled when broker(s) {', '.join(map(str, intended))} return" if intended
            else "filled when a broker joins or returns")
    return Condition(
        type=UNDER_REPLICATED, status="True", reason="PlaceholderReplicas",
        message=f"under-replicated by design: {placeholders.placeholders} placeholder replica(s) in {partitions} "
                f"partition(s){alive}; {when}")


def expected_change(current: ReplicasChangeRecord | None, request: RequestReplicasChange, generation: int,
                    now: datetime) -> ReplicasChangeRecord | None:
    """The change as the replicas-change service will record it for this request (its own rule, ``on_command``), for
    the status to say ``pending`` at once (as Strimzi's operator does) rather than a bus hop later. None where that
    service decides or keeps what it has: a revert, a duplicate, or a change whose earlier target Cruise Control is
    executing (it stays ongoing, retargeted)."""
    if not request.differs:
        return None
    command = ReplicasChangeCommand(topic=request.name, target_replicas=request.target_replicas, generation=generation)
    record = on_command(current, command, now, actual_rf=None)
    return record if record is not None and record.state == ReplicasChangeState.PENDING else None


def min_insync_warning(spec: TopicSpec, actual: TopicDescription | None) -> Condition | None:
    """Seed 000: RF below min.insync.replicas is allowed, but producers with acks=all will fail. Say so."""
    replicas = spec.replicas if spec.replicas is not None else actual.replication_factor if actual else None
    raw = spec.config.get("min.insync.replicas") or (actual.config.get("min.insync.replicas") if actual else None)
    try:
        min_isr = int(raw) if raw is not None else None
    except ValueError:
        return None
    if min_isr is None or replicas is None or replicas >= min_isr:
        return None
    return Condition(type=RF_BELOW_MIN_INSYNC, status="True", reason="BelowMinInsyncReplicas",
                     message=f"replicas {replicas} < min.insync.replicas {min_isr}: producers using acks=all "
                             "will fail to write")


def origin_now(origin: TopicOrigin | None, spec: TopicSpec | None, actual: TopicDescription | None
               ) -> TopicOrigin | None:
    """Whose the topic is after this look: a spec with ``adopt: true`` adopts a topic it finds existing; once a
    withdrawn spec's topic is gone, nothing is remembered (a topic of the same name made later by someone else is
    not Ballast's). ``created`` is set by the reconciler when its create succeeds."""
    if spec is None and actual is None:
        return None
    if spec is not None and not spec.managed:
        return None  # let go of: withdrawing the spec leaves the topic
    if origin is None and spec is not None and spec.adopt and actual is not None:
        return "adopted"
    return origin


def origin_after_creation(error: AdminError | PlacementError | None) -> TopicOrigin | None:
    """Whose a topic is once its creation was answered. Its status says ``created`` before the request goes (a crash
    after the cluster made it and before its status keeps it Ballast's); the answer settles it: made, or not known
    (a temporary failure: the cluster may have made it before the answer was lost), it is Ballast's; refused by the
    cluster, or never asked for (no placement: its status never said ``created``), the topic there is not Ballast's
    creation, if there is one."""
    if error is None or (isinstance(error, AdminError) and error.temporary):
        return "created"
    return None


def shown(created: Mapping[str, int], described: Mapping[str, int]) -> list[str]:
    """Of the topics ``created`` (name -> the partitions they were created with), those the cluster shows now with
    every partition (``described``: name -> the partitions it shows, 0 for none or not asked), in name order."""
    return sorted(name for name, partitions in created.items() if described.get(name, 0) >= partitions)


def build_status(*, name: str, spec: TopicSpec | None, generation: int, actual: TopicDescription | None,
                 change: ReplicasChangeRecord | None, error: str | None, warnings: list[Condition],
                 previous: TopicStatus | None, now: datetime, origin: TopicOrigin | None = None,
                 owner: str | None = None) -> TopicStatus:
    deleted = spec is None
    refused = next((w for w in warnings if w.type == POLICY_VIOLATION), None)
    ready = not deleted and actual is not None and error is None and refused is None
    if deleted:
        if actual is not None and refused is not None:
            message = f"spec deleted; the topic is retained: {refused.message}"
        elif actual is None:
            message = "spec deleted; the topic is not in the cluster"
        elif origin is None:
            message = ("spec deleted; the topic is retained: Ballast did not create it and no spec adopted it "
                       "(adopt: true), or the spec let go of it (managed: false)")
        else:
            message = "deleting topic"
        ready_condition = Condition(type=READY, status="False", reason="Deleted", message=message)
    elif error is not None:
        ready_condition = Condition(type=READY, status="False", reason="ReconcileError", message=error)
    elif refused is not None:
        ready_condition = Condition(type=READY, status="False", reason="PolicyViolation",
                                    message="the spec breaks the policy: not acted on")
    elif actual is None and (hold := hands_off(spec)) is not None:
        ready_condition = Condition(type=READY, status="False", reason=hold.reason,
                                    message=f"the topic does not exist and is not created: {hold.message}")
    elif actual is None:
        ready_condition = Condition(type=READY, status="False", reason="Creating", message="creating topic")
    else:
        ready_condition = Condition(type=READY, status="True")
    conditions = [ready_condition, *warnings]
    if spec is not None and (w := min_insync_warning(spec, actual)) is not None:
        conditions.append(w)
    conditions = [_keep_transition_time(c, previous, now) for c in conditions]
    replicas_change = None
    if change is not None and not deleted:
        # A completed change's only message is that its topic was gone: not true of a topic that exists again.
        message = None if change.state == ReplicasChangeState.COMPLETED and actual is not None else change.message
        replicas_change = ReplicasChangeStatus(state=change.state, target_replicas=change.target_replicas,
                                               session_id=change.session_id, message=message)
    return TopicStatus(
        topic=name, ready=ready, generation=generation, observed_generation=generation,
        partitions=actual.partition_count if actual else None,
        replicas=actual.replication_factor if actual else None,
        replicas_change=replicas_change, conditions=conditions, deleted=deleted, origin=origin, owner=owner,
        # A withdrawn spec's topic keeps the names it had, for those who ask by them.
        resource_name=spec.resource_name if spec is not None else previous.resource_name if previous else None)


def _keep_transition_time(condition: Condition, previous: TopicStatus | None, now: datetime) -> Condition:
    old = previous.condition(condition.type) if previous else None
    when = old.last_transition_time if old is not None and old.status == condition.status else now
    return condition.model_copy(update={"last_transition_time": when})


def fingerprint(status: TopicStatus) -> tuple:
    """What makes a status a transition: everything but timestamps."""
    change = status.replicas_change
    return (status.ready, status.generation, status.observed_generation, status.partitions, status.replicas,
            status.deleted, status.origin, status.owner,
            (change.state, change.target_replicas, change.session_id, change.message) if change else None,
            tuple((c.type, c.status, c.reason, c.message) for c in status.conditions))


def same_status(a: TopicStatus | None, b: TopicStatus) -> bool:
    """Equal apart from timestamps: only transitions are published."""
    return a is not None and fingerprint(a) == fingerprint(b)


def status_inputs(spec: TopicSpec | None, generation: int, actual: TopicDescription | None,
                  change: ReplicasChangeRecord | None, error: str | None, warnings: list[Condition],
                  origin: TopicOrigin | None = None, owner: str | None = None) -> tuple:
    """Everything ``build_status`` reads, as a comparable key: equal inputs give an equal status, so a reconciler
    can skip building it (a resync of thousands of unchanged topics then costs almost nothing)."""
    return (
        spec, generation,
        (actual.partition_count, actual.replication_factor, actual.config.get("min.insync.replicas"))
        if actual else None,
        (change.state, change.target_replicas, change.session_id, change.message) if change else None,
        error, tuple((w.type, w.message) for w in warnings), origin, owner,
    )
