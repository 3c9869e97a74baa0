"""What Kafka enforces for tenants (issue 53): the ACL bindings a deployment's tenants file asks for, as plain rules.

Kafka's authorizer decides who may write which of Ballast's topics; Ballast's own rules (services/domain/tenants.py)
decide what a spec on a tenant's spec topic may ask for. ``plan`` gives every binding Ballast manages:

- each tenant: WRITE, READ and DESCRIBE on its spec topic and no other (READ: `ballast apply` and `diff` compare
  with the specs there, and publish only what changed); READ and DESCRIBE on its status and dead-letter topics;
  READ on the consumer groups PREFIXED ``ballast-tenant-<name>.`` (its CLI's readers': ``READER_GROUPS``); on the
  managed cluster, DESCRIBE and DESCRIBE_CONFIGS on its names' prefixes (what `ballast diff` compares a spec with: a
  tenant named by a pattern has none, Kafka's ACLs have no patterns);
- the admins and the tenants with ``rebalances: true``: WRITE and DESCRIBE on the rebalance requests and actions
  topics, READ and DESCRIBE on the rebalance statuses; the admins also write the deployment's own spec topic (a spec
  there is an admin's: it may name any topic), read every topic of the deployment, and READ the readers' consumer
  groups (PREFIXED ``ballast-reader-``);
- Ballast's services (``service``, ``User:ballast`` by default): ALL on the deployment's bus topics (PREFIXED
  ``ballast.``, or ``ballast.<cluster>.``) and on its faust apps' own topics (PREFIXED ``ballast-``, or
  ``ballast-<cluster>-``), ALL on consumer groups PREFIXED ``ballast-`` (the services' groups, and their one-off
  readers', which no deployment's name prefixes); on the managed cluster, what managing
  any topic takes (CREATE, DELETE, ALTER, DESCRIBE, DESCRIBE_CONFIGS and ALTER_CONFIGS on every topic, WRITE on the
  throttle controller's latency-probe topic) and on the cluster resource DESCRIBE (reassignments and log directories
  in progress), ALTER (reassignments, log-directory moves, leader elections), DESCRIBE_CONFIGS and ALTER_CONFIGS (the
  brokers' throttle rates).

``ours`` says which existing bindings are Ballast's to remove: only those of the plan's principals on bus resources the
plan could grant them, the very grants it could make them on the managed cluster, and those on the bus topics of a
tenant the file no longer names. Anything else stays.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from enum import StrEnum

from events.topics import Topics, tenant_of, tenant_topics
from events.topics import READER_GROUPS, tenant_reader_groups
from services.domain.tenants import Tenants

DEFAULT_SERVICE_PRINCIPAL = "User:ballast"
# Kafka's one cluster resource has this name.
CLUSTER_RESOURCE = "kafka-cluster"


class Resource(StrEnum):
    TOPIC = "topic"
    GROUP = "group"
    CLUSTER = "cluster"


class Pattern(StrEnum):
    LITERAL = "literal"
    PREFIXED = "prefixed"


class Where(StrEnum):
    """Which Kafka cluster a binding belongs on: the bus (Ballast's topics) or the managed cluster (the tenants'
    topics). Often the same cluster (the local stack's)."""

    BUS = "bus"
    CLUSTER = "cluster"


@dataclass(frozen=True, order=True)
class Binding:
    """One ALLOW binding for any host (Ballast makes no other kind)."""

    principal: str
    resource: Resource
    name: str
    pattern: Pattern
    operation: str  # Kafka's AclOperation name: READ, WRITE, DESCRIBE, CREATE, ..., ALL

    def line(self) -> str:
        kind = "" if self.pattern is Pattern.LITERAL else " (prefix)"
        return f"{self.principal} {self.operation} {self.resource} {self.name}{kind}"


@dataclass(frozen=True)
class AclPlan:
    bus: frozenset[Binding]
    cluster: frozenset[Binding]

    def on(self, where: Where) -> frozenset[Binding]:
        return self.bus if where is Where.BUS else self.cluster


@dataclass(frozen=True)
class AclChanges:
    add: tuple[Binding, ...]
    remove: tuple[Binding, ...]

    def __bool__(self) -> bool:
        return bool(self.add or self.remove)

    def made(self, existing: Iterable[Binding]) -> bool:
        """Whether ``existing`` has every binding added and none removed."""
        existing = set(existing)
        return existing.issuperset(self.add) and existing.isdisjoint(self.remove)


_TOPIC_MANAGER = ("CREATE", "DELETE", "ALTER", "DESCRIBE", "DESCRIBE_CONFIGS", "ALTER_CONFIGS")
_CLUSTER_MANAGER = ("DESCRIBE", "ALTER", "DESCRIBE_CONFIGS", "ALTER_CONFIGS")


def _topic(principal: str, name: str, *operations: str, pattern: Pattern = Pattern.LITERAL) -> set[Binding]:
    return {Binding(principal, Resource.TOPIC, name, pattern, op) for op in operations}


def bus_prefixes(cluster: str | None) -> tuple[str, str]:
    """The deployment's bus topics' prefix and its faust apps' (and consumer groups') prefix."""
    return (f"ballast.{cluster}." if cluster else "ballast."), (f"ballast-{cluster}-" if cluster else "ballast-")


def plan(tenants: Tenants, *, service: str = DEFAULT_SERVICE_PRINCIPAL, cluster: str | None = None,
         probe_topic: str | None = None) -> AclPlan:
    """Every binding Ballast manages for the deployment named ``cluster`` (see the module's docstring)."""
    topics = Topics.of(cluster)
    bus: set[Binding] = set()
    managed: set[Binding] = set()
    for tenant in tenants.tenants:
        doors = tenant_topics(tenant.name, cluster)
        bus |= _topic(tenant.principal, doors.specs.name, "WRITE", "READ", "DESCRIBE")
        bus |= _topic(tenant.principal, doors.status.name, "READ", "DESCRIBE")
        bus |= _topic(tenant.principal, doors.dead_letters.name, "READ", "DESCRIBE")
        bus |= {Binding(tenant.principal, Resource.GROUP, tenant_reader_groups(tenant.name, cluster),
                        Pattern.PREFIXED, "READ")}
        for prefix in tenant.topics.prefixes:
            managed |= _topic(tenant.principal, prefix, "DESCRIBE", "DESCRIBE_CONFIGS", pattern=Pattern.PREFIXED)
    rebalancers = [*tenants.admins, *(t.principal for t in tenants.tenants if t.rebalances)]
    for principal in rebalancers:
        bus |= _topic(principal, topics.rebalance_requests.name, "WRITE", "DESCRIBE")
        bus |= _topic(principal, topics.rebalance_actions.name, "WRITE", "DESCRIBE")
        bus |= _topic(principal, topics.rebalance_status.name, "READ", "DESCRIBE")
    topic_prefix, app_prefix = bus_prefixes(cluster)
    for admin in tenants.admins:
        bus |= _topic(admin, topic_prefix, "READ", "DESCRIBE", pattern=Pattern.PREFIXED)
        bus |= {Binding(admin, Resource.GROUP, READER_GROUPS, Pattern.PREFIXED, "READ")}
        for written in (topics.specs, topics.scaling, topics.observed_brokers):
            bus |= _topic(admin, written.name, "WRITE", "DESCRIBE")
        managed |= _topic(admin, "*", "DESCRIBE", "DESCRIBE_CONFIGS")
        managed |= {Binding(admin, Resource.CLUSTER, CLUSTER_RESOURCE, Pattern.LITERAL, "DESCRIBE")}
    bus |= _topic(service, topic_prefix, "ALL", pattern=Pattern.PREFIXED)
    bus |= _topic(service, app_prefix, "ALL", pattern=Pattern.PREFIXED)
    bus |= {Binding(service, Resource.GROUP, "ballast-", Pattern.PREFIXED, "ALL")}
    managed |= _topic(service, "*", *_TOPIC_MANAGER)
    managed |= {Binding(service, Resource.CLUSTER, CLUSTER_RESOURCE, Pattern.LITERAL, op) for op in _CLUSTER_MANAGER}
    if probe_topic:
        managed |= _topic(service, probe_topic, "WRITE")
    return AclPlan(frozenset(bus), frozenset(managed))


def ours(binding: Binding, tenants: Tenants, *, service: str = DEFAULT_SERVICE_PRINCIPAL,
         cluster: str | None = None, probe_topic: str | None = None) -> bool:
    """Whether ``binding`` is Ballast's to keep to the plan (and so to remove when the plan has it no longer): a
    binding of one of the plan's principals on a bus resource the plan could grant that principal (whatever the file
    says of it: a tenant no longer allowed rebalances loses those grants), one of the very grants the plan could make
    it on the managed cluster, or one on the bus topics of a tenant the file no longer names. A principal the file
    no longer names at all is not the plan's: its bindings stay."""
    if binding.resource is Resource.TOPIC and binding.pattern is Pattern.LITERAL:
        owner = tenant_of(binding.name, cluster)
        if owner is not None and tenants.named(owner) is None:
            return True
    if binding.principal == service:
        widest = plan(Tenants(), service=service, cluster=cluster, probe_topic=probe_topic)
    elif binding.principal in tenants.admins or (tenant := tenants.of_principal(binding.principal)) is not None:
        tenant = tenants.of_principal(binding.principal)
        # The widest grant the principal could have: an admin, and its tenant allowed rebalances.
        widest = plan(Tenants(admins=[binding.principal],
                              tenants=[tenant.model_copy(update={"rebalances": True})] if tenant else []),
                      service="User:_", cluster=cluster)
    else:
        return False
    # On the bus, Ballast's topics and groups are the plan's whatever the operation; on the managed cluster only the
    # very grants the plan makes are: the same resources carry what the platform grants beside Ballast (a team's
    # produce and consume on its own prefix, an admin's ALTER on the cluster), which are not Ballast's to remove.
    return (_resource(binding) in {_resource(b) for b in widest.bus if b.principal == binding.principal}
            or binding in widest.cluster)


def _resource(binding: Binding) -> tuple[Resource, str, Pattern]:
    return binding.resource, binding.name, binding.pattern


def changes(planned: Iterable[Binding], existing: Iterable[Binding], is_ours: Callable[[Binding], bool]) -> AclChanges:
    """What makes ``existing`` match ``planned``: the planned bindings missing, and Ballast's bindings (``is_ours``)
    the plan no longer has; anyone else's stay."""
    planned, existing = set(planned), set(existing)
    return AclChanges(tuple(sorted(planned - existing)),
                      tuple(sorted(b for b in existing - planned if is_ours(b))))
