"""What Ballast enforces for tenants (issue 53), on the real Kafka cluster secured (SASL_SSL, ACLs): the topic
reconciler, given a tenants file, reads each tenant's spec topic; a spec for a name of the tenant's goes on with its
owner and its status reaches the tenant's status topic; a spec naming another tenant's topic, or asking beyond the
quota, is refused with the reason (dead letter, status condition) and nothing it named is touched; of two tenants
claiming one name, the first keeps it. The specs are written as the cluster's admin (a super user): what Kafka's ACLs
let each tenant write is the other half of the issue (test_tenant_acls). The tenants are team-a and team-b
(tests/kafka/secure/conftest.py), whose patterns both match 'shared.*'."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from events import TOPICS, DeadLetter, TopicSpec, TopicStatus
from events.topics import tenant_topics
from services.common import busio
from services.common.settings import BusSettings
from services.local.kafka_probe import admin_client
from services.local.kafka_security import ADMIN
from services.local.stack import LocalStack
from tests.patience import until

A, B = tenant_topics("team-a"), tenant_topics("team-b")


@pytest.fixture(scope="module")
def admin(stack: LocalStack) -> BusSettings:
    """The bus as the cluster's admin (a super user) sees it."""
    assert stack.security is not None
    return stack.settings().bus.model_copy(update={"sasl_username": ADMIN,
                                                   "sasl_password_file": stack.security.password_file(ADMIN)})


def status_on(bus: BusSettings, topic, name: str, holds: Callable[[TopicStatus], bool]) -> Callable[[], TopicStatus | None]:
    def look() -> TopicStatus | None:
        status = busio.latest(bus, topic, timeout_s=30).get(name)
        return status if status is not None and holds(status) else None
    return look


def letters(bus: BusSettings, topic, name: str) -> list[DeadLetter]:
    return [d for d in busio.events(bus, topic, follow=False) if d.record_key == name]


def partitions(stack: LocalStack, topic: str) -> int | None:
    assert stack.security is not None and stack.kafka is not None
    with admin_client(stack.kafka.bootstrap_servers, timeout_ms=10_000,
                      config=stack.security.kafka_python(ADMIN)) as client:
        [described] = client.describe_topics([topic])
    return len(described["partitions"]) if described["error_code"] == 0 else None


def test_a_tenants_spec_for_its_own_name_is_created_and_its_status_reaches_its_status_topic(
        stack: LocalStack, admin: BusSettings) -> None:
    busio.publish(admin, A.specs, [TopicSpec(name="a.orders", partitions=2, replicas=2)])
    status = until("a.orders ready on team-a's status topic",
                   status_on(admin, A.status, "a.orders", lambda s: s.ready))
    assert status.owner == "team-a" and status.partitions == 2
    assert partitions(stack, "a.orders") == 2
    assert busio.latest(admin, TOPICS.specs)["a.orders"].owner == "team-a"
    assert busio.latest(admin, TOPICS.status)["a.orders"].owner == "team-a"
    assert "a.orders" not in busio.latest(admin, B.status)
    # How far the gate got, on its own topic (what a restart reads back instead of deciding the record again).
    assert any(p.source == A.specs.name for p in busio.latest(admin, TOPICS.gate_progress).values())


def test_a_spec_naming_another_tenants_topic_is_refused_and_that_topic_is_untouched(
        stack: LocalStack, admin: BusSettings) -> None:
    busio.publish(admin, B.specs, [TopicSpec(name="b.payments", partitions=1, replicas=2)])
    theirs = until("b.payments ready on team-b's status topic",
                   status_on(admin, B.status, "b.payments", lambda s: s.ready))
    busio.publish(admin, A.specs, [TopicSpec(name="b.payments", partitions=3, replicas=3)])
    refused = until("NotOwner on team-a's status topic",
                    status_on(admin, A.status, "b.payments", lambda s: s.condition("NotOwner") is not None))
    reason = "'b.payments' is not among the names of tenant 'team-a'"
    assert not refused.ready and reason in (refused.condition("NotOwner").message or "")  # type: ignore[union-attr]
    [letter] = letters(admin, A.dead_letters, "b.payments")
    assert reason in letter.reason and letter.source_topic == A.specs.name
    assert [d.reason for d in letters(admin, TOPICS.dead_letters, "b.payments")] == [letter.reason]
    # team-b's topic, spec and status are as they were.
    assert partitions(stack, "b.payments") == 1
    spec = busio.latest(admin, TOPICS.specs)["b.payments"]
    assert (spec.owner, spec.partitions, spec.replicas) == ("team-b", 1, 2)
    assert busio.latest(admin, B.status)["b.payments"] == theirs


def test_a_spec_beyond_the_quota_is_refused_with_its_reason(stack: LocalStack, admin: BusSettings) -> None:
    busio.publish(admin, A.specs, [TopicSpec(name="a.wide", partitions=8, replicas=2)])
    refused = until("QuotaExceeded on team-a's status topic",
                    status_on(admin, A.status, "a.wide", lambda s: s.condition("QuotaExceeded") is not None))
    exceeded = refused.condition("QuotaExceeded")
    assert exceeded is not None and exceeded.reason == "quota.partitionsPerTopic"
    assert exceeded.message == ("tenant rule quota.partitionsPerTopic: 8 partitions is above the 4 a topic of tenant "
                                "'team-a' may have")
    assert [d.reason for d in letters(admin, A.dead_letters, "a.wide")] == [exceeded.message]
    assert partitions(stack, "a.wide") is None and "a.wide" not in busio.latest(admin, TOPICS.specs)


def test_of_two_tenants_claiming_one_name_the_first_keeps_it(stack: LocalStack, admin: BusSettings) -> None:
    busio.publish(admin, B.specs, [TopicSpec(name="shared.events", partitions=2, replicas=2)])
    until("shared.events ready on team-b's status topic",
          status_on(admin, B.status, "shared.events", lambda s: s.ready and s.owner == "team-b"))
    busio.publish(admin, A.specs, [TopicSpec(name="shared.events", partitions=4, replicas=2)])
    refused = until("NotOwner on team-a's status topic",
                    status_on(admin, A.status, "shared.events", lambda s: s.condition("NotOwner") is not None))
    assert "'shared.events' is owned by tenant 'team-b', which claimed the name first" in (
        refused.condition("NotOwner").message or "")  # type: ignore[union-attr]
    spec = busio.latest(admin, TOPICS.specs)["shared.events"]
    assert (spec.owner, spec.partitions) == ("team-b", 2) and partitions(stack, "shared.events") == 2
