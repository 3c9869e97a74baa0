"""Kafka's ACLs (DescribeAcls, CreateAcls, DeleteAcls) for `ballast acls`, on confluent-kafka's AdminClient: the
bus's and the managed cluster's, each with its own client settings. Its failures are the admin port's kinds
(``ClusterUnavailable``: nothing answered in time or Kafka calls it retriable; ``OperationRefused``: the cluster
refused, e.g. no authorizer configured or the client may not alter the cluster's ACLs)."""

from __future__ import annotations

from collections.abc import Iterable
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

from services.common.admin.port import AdminError, ClusterUnavailable, OperationRefused
from services.domain.acls import Binding, Pattern, Resource

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
    return ClusterUnavailable(reason) if error.retriable() or error.code() in (
        KafkaError._TIMED_OUT, KafkaError._TRANSPORT, KafkaError._ALL_BROKERS_DOWN) else OperationRefused(reason)


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
