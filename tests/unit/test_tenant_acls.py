"""What Kafka enforces for tenants (issue 53): the ACL plan from the tenants file, and which existing bindings are
Ballast's to remove."""

from __future__ import annotations

from functools import partial

from services.domain.acls import (
    CLUSTER_RESOURCE,
    Binding,
    Pattern,
    Resource,
    changes,
    ours,
    plan,
    tenant_reader_groups,
)
from services.domain.tenants import Tenants

TENANTS = Tenants.model_validate({
    "admins": ["User:platform"],
    "tenants": [
        {"name": "payments", "principal": "User:payments", "topics": {"prefixes": ["payments.", "pay-"]}},
        {"name": "search", "principal": "User:search", "topics": {"pattern": "^search\\."}, "rebalances": True},
    ],
})


def topic(principal: str, name: str, operation: str, pattern: Pattern = Pattern.LITERAL) -> Binding:
    return Binding(principal, Resource.TOPIC, name, pattern, operation)


def of(bindings: frozenset[Binding], principal: str) -> set[tuple[str, str, str]]:
    """The topics' bindings of ``principal``."""
    return {(b.name, b.pattern.value, b.operation) for b in bindings
            if b.principal == principal and b.resource is Resource.TOPIC}


def test_a_tenant_writes_its_spec_topic_only_and_reads_its_status_and_dead_letters() -> None:
    acls = plan(TENANTS)
    assert of(acls.bus, "User:payments") == {
        ("ballast.tenant.payments.topic.specs", "literal", "WRITE"),
        ("ballast.tenant.payments.topic.specs", "literal", "READ"),
        ("ballast.tenant.payments.topic.specs", "literal", "DESCRIBE"),
        ("ballast.tenant.payments.topic.status", "literal", "READ"),
        ("ballast.tenant.payments.topic.status", "literal", "DESCRIBE"),
        ("ballast.tenant.payments.dead-letters", "literal", "READ"),
        ("ballast.tenant.payments.dead-letters", "literal", "DESCRIBE"),
    }
    # The CLI's readers commit nothing, but librdkafka looks for their group's coordinator: groups of its own.
    groups = {(b.principal, b.name, b.operation) for b in acls.bus if b.resource is Resource.GROUP}
    assert groups == {("User:payments", "ballast-tenant-payments.", "READ"),
                      ("User:search", "ballast-tenant-search.", "READ"),
                      ("User:platform", "ballast-reader-", "READ"), ("User:ballast", "ballast-", "ALL")}


def test_a_tenant_describes_its_own_names_on_the_managed_cluster_where_they_are_prefixes() -> None:
    acls = plan(TENANTS)
    assert of(acls.cluster, "User:payments") == {
        (prefix, "prefixed", op) for prefix in ("payments.", "pay-") for op in ("DESCRIBE", "DESCRIBE_CONFIGS")}
    # Kafka's ACLs have no regular expressions: a tenant named by a pattern gets nothing there.
    assert of(acls.cluster, "User:search") == set()


def test_only_admins_and_tenants_allowed_rebalances_write_the_rebalance_topics() -> None:
    acls = plan(TENANTS)
    writers = {b.principal for b in acls.bus if b.operation == "WRITE"
               and b.name in ("ballast.rebalance.requests", "ballast.rebalance.actions")}
    assert writers == {"User:platform", "User:search"}
    assert ("ballast.rebalance.status", "literal", "READ") in of(acls.bus, "User:search")


def test_admins_write_the_deployments_own_spec_topic_and_read_all_of_it() -> None:
    acls = plan(TENANTS)
    admin = of(acls.bus, "User:platform")
    assert ("ballast.topic.specs", "literal", "WRITE") in admin
    assert ("ballast.", "prefixed", "READ") in admin
    assert not [b for b in acls.bus if b.name == "ballast.topic.specs" and b.operation == "WRITE"
                and b.principal != "User:platform"]


def test_the_services_get_the_deployments_topics_groups_and_what_managing_topics_takes() -> None:
    acls = plan(TENANTS, service="User:svc", probe_topic="latency-probe")
    assert of(acls.bus, "User:svc") == {("ballast.", "prefixed", "ALL"), ("ballast-", "prefixed", "ALL")}
    assert Binding("User:svc", Resource.GROUP, "ballast-", Pattern.PREFIXED, "ALL") in acls.bus
    cluster = {(b.resource, b.name, b.operation) for b in acls.cluster if b.principal == "User:svc"}
    assert {(Resource.TOPIC, "*", op) for op in ("CREATE", "DELETE", "ALTER", "DESCRIBE", "DESCRIBE_CONFIGS",
                                                  "ALTER_CONFIGS")} < cluster
    assert {(Resource.CLUSTER, CLUSTER_RESOURCE, op) for op in ("DESCRIBE", "ALTER", "DESCRIBE_CONFIGS",
                                                                 "ALTER_CONFIGS")} < cluster
    assert (Resource.TOPIC, "latency-probe", "WRITE") in cluster


def test_a_deployment_named_for_its_cluster_grants_its_own_topics_only() -> None:
    acls = plan(TENANTS, cluster="east")
    assert ("ballast.east.tenant.payments.topic.specs", "literal", "WRITE") in of(acls.bus, "User:payments")
    assert of(acls.bus, "User:ballast") == {("ballast.east.", "prefixed", "ALL"), ("ballast-east-", "prefixed", "ALL")}
    assert "ballast.east.rebalance.requests" in {b.name for b in acls.bus if b.principal == "User:search"}


def test_no_tenants_leaves_the_services_grants_only() -> None:
    acls = plan(Tenants())
    assert {b.principal for b in acls.bus | acls.cluster} == {"User:ballast"}


def test_bindings_of_others_are_never_ballasts() -> None:
    mine = partial(ours, tenants=TENANTS)
    # Another principal on Ballast's topics, or a tenant's principal on a resource the plan never grants it.
    assert not mine(topic("User:monitoring", "ballast.tenant.payments.topic.status", "READ", Pattern.PREFIXED))
    assert not mine(topic("User:monitoring", "ballast.topic.status", "READ"))
    assert not mine(topic("User:payments", "payments.orders", "WRITE"))
    assert not mine(Binding("User:payments", Resource.GROUP, "payments-app", Pattern.PREFIXED, "READ"))


def test_a_revoked_grant_is_ballasts_to_remove() -> None:
    mine = partial(ours, tenants=TENANTS)
    # payments may not rebalance: a WRITE there left from when it could is removed.
    stale = topic("User:payments", "ballast.rebalance.requests", "WRITE")
    assert mine(stale)
    # A tenant the file no longer names: its topics' bindings are Ballast's, whoever they are for.
    assert mine(topic("User:orders", "ballast.tenant.orders.topic.specs", "WRITE"))
    existing = {*plan(TENANTS).bus, stale, topic("User:monitoring", "ballast.topic.status", "READ")}
    assert changes(plan(TENANTS).bus, existing, mine).remove == (stale,)
    assert not changes(plan(TENANTS).bus, existing - {stale}, mine)


def test_changes_add_what_is_missing() -> None:
    acls = plan(TENANTS)
    missing = topic("User:payments", "ballast.tenant.payments.topic.specs", "WRITE")
    found = changes(acls.bus, acls.bus - {missing}, partial(ours, tenants=TENANTS))
    assert found.add == (missing,) and found.remove == ()


def test_changes_are_made_once_the_cluster_has_every_addition_and_no_removal() -> None:
    acls = plan(TENANTS)
    stale = topic("User:payments", "ballast.rebalance.requests", "WRITE")
    change = changes(acls.bus, {stale}, partial(ours, tenants=TENANTS))
    assert not change.made({stale}) and not change.made(acls.bus | {stale})
    assert change.made(acls.bus | {topic("User:monitoring", "ballast.topic.status", "READ")})


def test_a_cluster_without_an_authorizer_or_that_refuses_is_a_permanent_refusal_with_its_reason() -> None:
    from confluent_kafka import KafkaError, KafkaException

    from services.adapters.admin import ClusterUnavailable, OperationRefused
    from services.adapters.admin.acls import _error

    none = _error(KafkaException(KafkaError(KafkaError.SECURITY_DISABLED, "No Authorizer is configured")), "the bus")
    assert isinstance(none, OperationRefused) and "the cluster has no authorizer" in str(none)
    refused = _error(KafkaException(KafkaError(KafkaError.CLUSTER_AUTHORIZATION_FAILED)), "the bus at k:9092")
    assert isinstance(refused, OperationRefused) and str(refused).startswith("the bus at k:9092: ")
    # librdkafka's own codes for a connection lost, none marked retriable, are temporary as on the bus (busio).
    lost = (KafkaError._TIMED_OUT, KafkaError._TRANSPORT, KafkaError._ALL_BROKERS_DOWN, KafkaError._DESTROY_BROKER)
    for code in lost:
        assert isinstance(_error(KafkaException(KafkaError(code)), "the bus"), ClusterUnavailable), code


def test_what_the_platform_grants_beside_the_plan_on_the_managed_cluster_stays() -> None:
    mine = partial(ours, tenants=TENANTS)
    # A team's produce and consume on its own names, granted by the platform as the natural PREFIXED bindings: the
    # plan grants DESCRIBE there, but the team's application topics are not Ballast's.
    assert not mine(topic("User:payments", "payments.", "WRITE", Pattern.PREFIXED))
    assert not mine(topic("User:payments", "payments.", "READ", Pattern.PREFIXED))
    # The admin's ALTER on the cluster (what lets it run `ballast acls --apply` at all), its own work on every topic,
    # and the services' CREATE on the cluster: none the plan's to take away.
    assert not mine(Binding("User:platform", Resource.CLUSTER, CLUSTER_RESOURCE, Pattern.LITERAL, "ALTER"))
    assert not mine(topic("User:platform", "*", "ALTER"))
    assert not mine(Binding("User:ballast", Resource.CLUSTER, CLUSTER_RESOURCE, Pattern.LITERAL, "CREATE"))
    # What the plan grants there is still Ballast's to keep to the plan.
    assert mine(topic("User:payments", "payments.", "DESCRIBE", Pattern.PREFIXED))
    assert mine(Binding("User:platform", Resource.CLUSTER, CLUSTER_RESOURCE, Pattern.LITERAL, "DESCRIBE"))


def test_no_tenants_reader_groups_are_within_anothers() -> None:
    # Tenant names may begin with another's and a '-': "pay" and "pay-eu".
    assert not tenant_reader_groups("pay-eu", None).startswith(tenant_reader_groups("pay", None))
    assert not tenant_reader_groups("pay-eu", "east").startswith(tenant_reader_groups("pay", "east"))
