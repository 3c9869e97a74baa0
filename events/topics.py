"""Topics on the bus: the only place their names are spelled out, and which events each carries.

``decode(raw, topic=TOPICS.specs)`` gives one of the topic's event types (typed as their union) or raises
``InvalidEvent``: a record of any other type does not belong there and is dead-lettered with that reason.

A deployment named for the Kafka cluster it manages (``BALLAST_CLUSTER=east``, the name KafkaTopics give in their
``strimzi.io/cluster`` label) has its own bus topics (``ballast.east.topic.specs``) and consumer groups
(``ballast-east-topic-reconciler``): one bus then serves several clusters side by side, each deployment reading and
writing only its own. The name is read once, as the process starts (``Settings.cluster`` checks it), so every name
below is fixed for the life of the process.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, fields, replace
from typing import Generic, TypeVar

from events.load import BrokerLoadSample, LoadAggregate, LogDirLoadSample, PartitionLoadSample
from events.dead_letters import DeadLetter
from events.models import Event
from events.placement import (
    BrokerForgotten,
    ObservedBroker,
    PlaceholderRecord,
    PlacementRequest,
    PlacementResponse,
    ReplicasPlaced,
)
from events.replicas_change import ReplicasChangeBatch, ReplicasChangeCommand, ReplicasChangeRecord
from events.topic_specs import TopicSpec, TopicSpecDeleted
from events.topic_status import TopicStatus
from events.rebalance import (
    BrokerRemovalRequested,
    BrokerStatus,
    KnownBrokers,
    RebalanceAction,
    RebalanceRequest,
    RebalanceStatus,
)
from events.tenancy import TenantGateProgress
from events.throttle import ThrottleLedger, ThrottleRateChanged, ThrottleStatus

E = TypeVar("E", bound=Event, covariant=True)


@dataclass(frozen=True)
class BusTopic(Generic[E]):
    name: str
    compacted: bool
    description: str
    # The event types its records carry (E is their union, for type checkers).
    events: tuple[type[Event], ...]

    @property
    def config(self) -> dict[str, str]:
        return {"cleanup.policy": "compact"} if self.compacted else {}


@dataclass(frozen=True)
class Topics:
    # Desired state, written by users (keyed by Kafka topic name).
    specs: BusTopic[TopicSpec | TopicSpecDeleted] = BusTopic(
        "ballast.topic.specs", True, "desired topic specs",
        (TopicSpec, TopicSpecDeleted),
    )
    # User-facing status, one record per topic, written by the topic reconciler only.
    status: BusTopic[TopicStatus] = BusTopic(
        "ballast.topic.status", True, "per-topic status",
        (TopicStatus,),
    )
    # Work for the replicas-change service, written by the topic reconciler.
    replicas_commands: BusTopic[ReplicasChangeCommand] = BusTopic(
        "ballast.replicas-change.commands", False, "replication-factor change commands",
        (ReplicasChangeCommand,),
    )
    # The replicas-change service's memory: one record per topic with a change in flight or done.
    replicas_state: BusTopic[ReplicasChangeRecord] = BusTopic(
        "ballast.replicas-change.state", True,
        "replication-factor change progress",
        (ReplicasChangeRecord,),
    )
    # The replicas-change service's own: its request in flight (read back only by itself, after a crash).
    replicas_batches: BusTopic[ReplicasChangeBatch] = BusTopic(
        "ballast.replicas-change.batches", True, "the replicas-change service's request in flight",
        (ReplicasChangeBatch,),
    )
    dead_letters: BusTopic[DeadLetter] = BusTopic(
        "ballast.dead-letters", False, "events no consumer could accept",
        (DeadLetter,),
    )
    # Every broker ever seen, keyed by broker id; operators forget decommissioned ones (BrokerForgotten).
    observed_brokers: BusTopic[ObservedBroker | BrokerForgotten] = BusTopic(
        "ballast.brokers.observed", True, "brokers the cluster has had",
        (ObservedBroker, BrokerForgotten),
    )
    # The topic reconciler's memory of replicas created as placeholders, one record per topic.
    placeholders: BusTopic[PlaceholderRecord] = BusTopic(
        "ballast.placement.placeholders", True, "placeholder replicas of under-replicated topics",
        (PlaceholderRecord,),
    )
    # createReplicaPlacement as request / response (keyed by request id), answered by the topic reconciler.
    placement_requests: BusTopic[PlacementRequest] = BusTopic(
        "ballast.placement.requests", False, "where would these partitions go?",
        (PlacementRequest,),
    )
    placement_responses: BusTopic[PlacementResponse] = BusTopic(
        "ballast.placement.responses", False, "answers to placement requests",
        (PlacementResponse,),
    )
    # Every placement the topic reconciler makes, for the Spark job's per-window placement counts.
    placements: BusTopic[ReplicasPlaced] = BusTopic(
        "ballast.placement.placed", False, "replicas Ballast placed, one record per decision",
        (ReplicasPlaced,),
    )

    # Rebalancing (seed 001): requests keyed by rebalance name, actions on them, and their status (the rebalancer's
    # memory, one record per rebalance).
    rebalance_requests: BusTopic[RebalanceRequest] = BusTopic(
        "ballast.rebalance.requests", True, "desired rebalances",
        (RebalanceRequest,),
    )
    rebalance_actions: BusTopic[RebalanceAction] = BusTopic(
        "ballast.rebalance.actions", False, "approve / refresh / stop a rebalance",
        (RebalanceAction,),
    )
    rebalance_status: BusTopic[RebalanceStatus] = BusTopic(
        "ballast.rebalance.status", True, "per-rebalance status",
        (RebalanceStatus,),
    )
    # Brokers joining (seen by the rebalancer) and leaving (announced by operators): automatic rebalances.
    scaling: BusTopic[BrokerRemovalRequested | KnownBrokers] = BusTopic(
        "ballast.cluster.scaling", True, "scaling signals",
        (BrokerRemovalRequested, KnownBrokers),
    )

    # Each broker's log directories (online, failed, drained) and conditions, written by the rebalancer.
    broker_status: BusTopic[BrokerStatus] = BusTopic(
        "ballast.brokers.status", True, "per-broker status: log directories and failed disks",
        (BrokerStatus,),
    )

    # Load (issue 5): samples from Cruise Control, keyed by entity; rolling aggregates keyed by (window, entity).
    load_samples: BusTopic[BrokerLoadSample | LogDirLoadSample | PartitionLoadSample] = BusTopic(
        "ballast.load.samples", False,
        "broker, log-directory and partition load samples",
        (BrokerLoadSample, LogDirLoadSample, PartitionLoadSample),
    )
    load_aggregates: BusTopic[LoadAggregate] = BusTopic(
        "ballast.load.aggregates", True, "rolling load aggregates per window and entity",
        (LoadAggregate,),
    )

    # Throttles (issue 32): the controller's view of the rates it sets, each change of a rate with its reason, and its
    # own memory of what it has set (read back only by itself, after a restart or a crash).
    throttle_status: BusTopic[ThrottleStatus] = BusTopic(
        "ballast.throttle.status", True, "the throttle controller's rates per broker and directory",
        (ThrottleStatus,),
    )
    throttle_changes: BusTopic[ThrottleRateChanged] = BusTopic(
        "ballast.throttle.changes", False, "every change of a throttle rate, with its reason",
        (ThrottleRateChanged,),
    )
    throttle_ledger: BusTopic[ThrottleLedger] = BusTopic(
        "ballast.throttle.ledger", True, "the throttles the controller has set and not yet removed",
        (ThrottleLedger,),
    )

    # The tenant gate's memory (services.topic_reconciler.tenancy): how far it decided each tenant's spec topic.
    gate_progress: BusTopic[TenantGateProgress] = BusTopic(
        "ballast.tenant-gate.progress", True, "the tenant gate's progress through the tenants' spec topics",
        (TenantGateProgress,),
    )

    # Which instance of each service runs (the member of consumer group ``ballast-<service>-owner`` holding partition
    # 0), or which shards each topic-reconciler instance holds (services.common.lease). Nothing is written to it.
    leases: BusTopic[Event] = BusTopic(
        "ballast.leases", False, "the services' ownership (consumer groups only; no records)",
        (),
    )

    @classmethod
    def of(cls, cluster: str | None) -> Topics:
        """The bus topics of the deployment named ``cluster`` (None: an unnamed deployment's, the names above)."""
        topics = cls()
        if cluster is None:
            return topics
        renamed = {}
        for f in fields(topics):
            topic = getattr(topics, f.name)
            renamed[f.name] = replace(topic, name=namespaced(topic.name, cluster))
        return replace(topics, **renamed)

    def all(self) -> list[BusTopic[Event]]:
        return [self.leases, self.specs, self.status, self.replicas_commands, self.replicas_state,
                self.replicas_batches, self.dead_letters,
                self.observed_brokers, self.placeholders, self.placement_requests, self.placement_responses,
                self.placements, self.rebalance_requests, self.rebalance_actions, self.rebalance_status, self.scaling,
                self.broker_status, self.load_samples, self.load_aggregates, self.throttle_status,
                self.throttle_changes, self.throttle_ledger, self.gate_progress]


    def named(self, name: str) -> BusTopic[Event] | None:
        return next((t for t in self.all() if t.name == name), None)


_PREFIX = "ballast."
_TENANT_INFIX = "tenant"


def namespaced(name: str, cluster: str) -> str:
    return f"{_PREFIX}{cluster}.{name.removeprefix(_PREFIX)}"


def group(name: str, cluster: str | None = None) -> str:
    """A consumer group of the deployment named ``cluster`` (by default this process's)."""
    cluster = CLUSTER if cluster is None else cluster
    return f"ballast-{cluster}-{name}" if cluster else f"ballast-{name}"


# The consumer groups of the one-off readers (services.common.busio: the CLI's, the services' reads to the end of a
# topic) begin with this: they join no group and commit nothing, but librdkafka asks for their group's coordinator,
# which Kafka answers only for a principal that may DESCRIBE the group. A tenant's readers have a prefix of its own.
READER_GROUPS = "ballast-reader-"


def tenant_reader_groups(tenant: str, cluster: str | None) -> str:
    """The prefix of the consumer groups of a CLI acting as ``tenant``. It ends with a '.', which no tenant's name
    has: with a '-', tenant ``pay``'s prefix would begin tenant ``pay-eu``'s groups, and grant them to it too."""
    return f"ballast-{cluster}-tenant-{tenant}." if cluster else f"ballast-tenant-{tenant}."


# This process's deployment: see the module's docstring.
CLUSTER: str | None = os.environ.get("BALLAST_CLUSTER") or None
TOPICS = Topics.of(CLUSTER)

# Any deployment's bus topics (its own and those of deployments named for other clusters on the same bus).
_BUS_TOPIC = re.compile(r"^ballast\.(?:[a-z0-9-]+\.)?(?:%s)$" % "|".join(
    re.escape(t.name.removeprefix(_PREFIX)) for t in Topics().all()))


# Any deployment's tenants' bus topics.
_TENANT_TOPIC = re.compile(r"^ballast\.(?:(?P<cluster>[a-z0-9-]+)\.)?%s\.(?P<tenant>[a-z0-9-]+)\.(?:%s)$" % (
    _TENANT_INFIX, "|".join(re.escape(t.name.removeprefix(_PREFIX))
                            for t in (Topics().specs, Topics().status, Topics().dead_letters))))


# faust's leader-election topic, one per app id (faust.assignor.leader_assignor): every Ballast service makes one
# (``ballast-<service>-__assignor-__leader``), and so does any other faust app on the cluster.
FAUST_LEADER_SUFFIX = "-__assignor-__leader"


# Teams (issue 53, services/domain/tenants.py): each tenant named in the tenants file has a front door of its own on
# the bus. Kafka's ACLs let the tenant write only its spec topic and read only its status and dead-letter topics, so
# a record's topic says which tenant sent it: identity from the bus, not from the record.
@dataclass(frozen=True)
class TenantTopics:
    tenant: str
    # The tenant's specs (TopicSpec / TopicSpecDeleted, keyed by topic name), written by the tenant only.
    specs: BusTopic[TopicSpec | TopicSpecDeleted]
    # The statuses of the tenant's topics and its refusals (condition NotOwner / QuotaExceeded), written by Ballast.
    status: BusTopic[TopicStatus]
    # The tenant's records Ballast could not accept, with the reason, written by Ballast.
    dead_letters: BusTopic[DeadLetter]

    def all(self) -> list[BusTopic[Event]]:
        return [self.specs, self.status, self.dead_letters]


def tenant_topics(tenant: str, cluster: str | None = None) -> TenantTopics:
    """The bus topics of ``tenant`` (a tenants file's name) in the deployment named ``cluster`` (by default this
    process's): ``ballast.tenant.<tenant>.topic.specs``, or ``ballast.<cluster>.tenant.<tenant>.topic.specs``."""
    cluster = CLUSTER if cluster is None else cluster
    base = Topics()

    def door(topic: BusTopic[E], description: str) -> BusTopic[E]:
        name = f"{_PREFIX}{_TENANT_INFIX}.{tenant}.{topic.name.removeprefix(_PREFIX)}"
        return replace(topic, name=namespaced(name, cluster) if cluster else name,
                       description=f"tenant {tenant}: {description}")

    return TenantTopics(tenant, door(base.specs, base.specs.description), door(base.status, base.status.description),
                        door(base.dead_letters, base.dead_letters.description))


def tenants_topics(tenants: Iterable[str], cluster: str | None = None) -> list[BusTopic[Event]]:
    """Every one of these tenants' bus topics (by the tenants file's names), in the deployment named ``cluster``."""
    return [topic for tenant in tenants for topic in tenant_topics(tenant, cluster).all()]


def tenant_of(topic: str, cluster: str | None = None) -> str | None:
    """The tenant whose bus topic ``topic`` is (any of its three), in the deployment named ``cluster`` (by default
    this process's), or None."""
    cluster = CLUSTER if cluster is None else cluster
    match = _TENANT_TOPIC.match(topic)
    if match is None or (match["cluster"] or None) != (cluster or None):
        return None
    return match["tenant"]


def reserved_topic(name: str) -> str | None:
    """Why Ballast must never manage (create, change or delete) this topic, or None. Kafka's internal topics, the
    stream processors' own and Ballast's bus topics are nobody's spec to change."""
    if name.startswith("__"):
        return f"{name!r} is an internal topic (its name starts with '__'): Ballast never manages it"
    if name.endswith(FAUST_LEADER_SUFFIX):
        return (f"{name!r} is a faust app's internal topic (its leader election, as Ballast's own services have): "
                "Ballast never manages it")
    if _BUS_TOPIC.match(name) or _TENANT_TOPIC.match(name):
        return f"{name!r} is one of Ballast's own bus topics: Ballast never manages it"
    return None


def not_ours(event: Event) -> str | None:
    """Why a spec or rebalance request on this deployment's bus is not for it (it names another cluster), or None."""
    reason = elsewhere(getattr(event, "cluster", None))
    return f"{type(event).__name__} {event.key!r}: {reason}" if reason else None


def elsewhere(cluster: str | None) -> str | None:
    """Why a spec or rebalance for ``cluster`` is not this deployment's to act on, or None. A deployment with no name
    takes every one: one deployment per bus is the common case, and every KafkaTopic names some cluster."""
    if cluster is None or CLUSTER is None or cluster == CLUSTER:
        return None
    return (f"it is for cluster {cluster!r} (strimzi.io/cluster), and this deployment manages {CLUSTER!r} "
            "(BALLAST_CLUSTER)")
