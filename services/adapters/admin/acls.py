"""Kafka's ACLs (DescribeAcls, CreateAcls, DeleteAcls) for `ballast acls`, on confluent-kafka's AdminClient: the
bus's and the managed cluster's, each with its own client settings. Its failures are the admin port's kinds
(``ClusterUnavailable``: nothing answered in time or Kafka calls it retriable; ``OperationRefused``: the cluster
refused, e.g. no authorizer configured or the client may not alter the cluster's ACLs)."""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    ResourcePatternType,
    ResourceType,
)

from services.adapters.admin.port import AdminError, ClusterUnavailable, OperationRefused
from services.common.busio import CONNECTION_LOST
from services.common.settings import Settings
from services.domain.acls import AclChanges, AclPlan, Binding, Pattern, Resource, changes, ours, plan
from services.domain.tenants import Tenants

# confluent-kafka calls Kafka's cluster resource BROKER.
_TYPES = {Resource.TOPIC: ResourceType.TOPIC, Resource.GROUP: ResourceType.GROUP, Resource.CLUSTER: ResourceType.BROKER}
_PATTERNS = {Pattern.LITERAL: ResourcePatternType.LITERAL, Pattern.PREFIXED: ResourcePatternType.PREFIXED}
_ANY_HOST = "*"


def _binding(acl: AclBinding) -> Binding | None:
    """Ours in Ballast's terms; None for a kind Ballast never makes (DENY, one host, another resource type)."""
    resource = next((r for r, t in _TYPES.items() if t == acl.restype), None)
    pattern = next((p for p, t in _PATTERNS.items() if t == acl.resource_pattern_type), None)
    if (resource is None or pattern is None or acl.host != _ANY_HOST
            or acl.permission_type != AclPermissionType.ALLOW):
        return None
    return Binding(acl.principal, resource, acl.name, pattern, acl.operation.name)


def _kafka(binding: Binding) -> AclBinding:
    return AclBinding(_TYPES[binding.resource], binding.name, _PATTERNS[binding.pattern], binding.principal,
                      _ANY_HOST, AclOperation[binding.operation], AclPermissionType.ALLOW)


def _exact(binding: Binding) -> AclBindingFilter:
    return AclBindingFilter(_TYPES[binding.resource], binding.name, _PATTERNS[binding.pattern], binding.principal,
                            _ANY_HOST, AclOperation[binding.operation], AclPermissionType.ALLOW)


def _error(exc: Exception, where: str) -> AdminError:
    error = exc.args[0] if isinstance(exc, KafkaException) and exc.args else None
    if not isinstance(error, KafkaError):
        return ClusterUnavailable(f"{where}: {exc}")
    reason = f"{where}: {error.name()}: {error.str()}"
    if error.code() == KafkaError.SECURITY_DISABLED:
        return OperationRefused(f"{reason} (the cluster has no authorizer: set authorizer.class.name on its nodes)")
    temporary = error.retriable() or error.code() == KafkaError._TIMED_OUT or error.code() in CONNECTION_LOST
    return ClusterUnavailable(reason) if temporary else OperationRefused(reason)


class KafkaAcls:
    """One cluster's ACLs; ``where`` names it in errors (the bus, the managed cluster)."""

    def __init__(self, config: dict[str, Any], where: str, timeout_s: float) -> None:
        self._admin = AdminClient(config)
        self._where = where
        self._timeout_s = timeout_s

    def bindings(self) -> set[Binding]:
        """Every ALLOW binding for any host of a topic, a group or the cluster (the kinds Ballast makes)."""
        every = AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, None, None, AclOperation.ANY,
                                 AclPermissionType.ANY)
        try:
            found = self._admin.describe_acls(every, request_timeout=self._timeout_s).result()
        except KafkaException as exc:
            raise _error(exc, self._where) from None
        return {b for acl in found if (b := _binding(acl)) is not None}

    def create(self, bindings: Iterable[Binding]) -> None:
        wanted = [_kafka(b) for b in bindings]
        if wanted:
            self._wait(self._admin.create_acls(wanted, request_timeout=self._timeout_s))

    def delete(self, bindings: Iterable[Binding]) -> None:
        """Each binding exactly (a filter naming every field matches that binding only)."""
        filters = [_exact(b) for b in bindings]
        if filters:
            self._wait(self._admin.delete_acls(filters, request_timeout=self._timeout_s))

    def _wait(self, futures: dict[Any, Any]) -> None:
        for future in futures.values():
            try:
                future.result()
            except KafkaException as exc:
                raise _error(exc, self._where) from None


@dataclass(frozen=True)
class Pending:
    """What one cluster's ACLs need to match the plan (``where``: the bus, the managed cluster, or both at once)."""

    where: str
    cluster: KafkaAcls
    changes: AclChanges


def _targets(settings: Settings, acls: AclPlan) -> tuple[list[tuple[str, dict[str, Any], frozenset[Binding]]],
                                                          str | None]:
    """Where the plan's bindings go: the bus's on the bus, the managed cluster's on it, both on the bus when it is
    the same cluster; a simulated managed cluster has no ACLs (the second value says so)."""
    from services.common.busio import client_config

    bus_config, _ = client_config(settings.bus)
    bus = f"the bus at {settings.bus.bootstrap_servers}"
    admin = settings.cluster_admin
    if admin.kind != "kafka":
        return [(bus, bus_config, acls.bus)], "the managed cluster is the simulator, which has no ACLs: the bus's only"
    if admin.bootstrap_servers == settings.bus.bootstrap_servers:
        return [(f"{bus} (also the managed cluster)", bus_config, acls.bus | acls.cluster)], None
    cluster_config = {"bootstrap.servers": admin.bootstrap_servers, **admin.librdkafka(), "log_level": 0}
    return [(bus, bus_config, acls.bus),
            (f"the managed cluster at {admin.bootstrap_servers}", cluster_config, acls.cluster)], None


def pending(settings: Settings, tenants: Tenants) -> tuple[list[Pending], str | None]:
    """Each cluster's changes to the plan of ``tenants`` (only Ballast's bindings removed: ``ours``), and a note on
    what is left out. Raises the port's ``AdminError`` when a cluster cannot be asked."""
    scope: dict[str, Any] = {"service": settings.service_principal, "cluster": settings.cluster,
                             "probe_topic": settings.throttle.latency_probe_topic}
    planned = plan(tenants, **scope)
    targets, note = _targets(settings, planned)
    found = []
    for where, config, bindings in targets:
        cluster = KafkaAcls(config, where, settings.bus.answer_timeout_s)
        found.append(Pending(where, cluster, changes(bindings, cluster.bindings(),
                                                     lambda b: ours(b, tenants, **scope))))
    return found, note


def make(changes_by_cluster: Iterable[Pending], *, settle_s: float = 30.0) -> None:
    """Add what is missing, then remove what is Ballast's and no longer planned; return once the cluster answers
    with the changes made (``ClusterUnavailable`` when it does not within ``settle_s``). The controller accepts them
    at once, but each broker enforces them only once it has applied the metadata before them: seconds after a burst
    of new topics, whose logs it creates first."""
    for each in changes_by_cluster:
        each.cluster.create(each.changes.add)
        each.cluster.delete(each.changes.remove)
        deadline = time.monotonic() + settle_s
        while not each.changes.made(each.cluster.bindings()):
            if time.monotonic() > deadline:
                raise ClusterUnavailable(f"{each.where}: the ACLs changed are not all in effect after {settle_s:g} s")
            time.sleep(0.2)
