"""Which bus topics the CLI writes specs to and reads statuses from: the deployment's own (an admin's, and any
deployment without tenants), or, for a CLI acting as a tenant (BALLAST_TENANT), the tenant's own spec and status
topics (events.topics.tenant_topics), which Kafka's ACLs let only that tenant use. The one place this is decided."""

from __future__ import annotations

from dataclasses import dataclass

from events import TOPICS, TopicSpec, TopicSpecDeleted, TopicStatus
from events.conditions import NOT_OWNER, QUOTA_EXCEEDED
from events.models import Event
from events.topics import BusTopic, tenant_of, tenant_topics
from services.common.settings import Settings


@dataclass(frozen=True)
class SpecTopics:
    specs: BusTopic[TopicSpec | TopicSpecDeleted]
    status: BusTopic[TopicStatus]


def spec_topics(settings: Settings) -> SpecTopics:
    """The spec and status topics of whoever the settings say the CLI acts as."""
    if settings.tenant is None:
        return SpecTopics(TOPICS.specs, TOPICS.status)
    doors = tenant_topics(settings.tenant, settings.cluster)
    return SpecTopics(doors.specs, doors.status)


def answered(tenant: str, offset: int | None, status: TopicStatus | None) -> bool:
    """Whether Ballast acts on a tenant's last record for a name (at ``offset`` on its spec topic): the name's status
    on the tenant's status topic answers that record (its generation, offset + 1), is the tenant's own and is no
    refusal. Otherwise the same spec is sent again, to be decided again: after a refusal (quota freed since), or
    after an admin's spec for the name, which the tenant takes over (docs/teams.md)."""
    if offset is None or status is None or status.owner != tenant or status.generation != offset + 1:
        return False
    ready = status.condition("Ready")
    return ready is None or ready.reason not in (NOT_OWNER, QUOTA_EXCEEDED)


def bus_topic_named(name: str) -> BusTopic[Event] | None:
    """The deployment's bus topic, or any tenant's, of this name (what `ballast produce` checks records against)."""
    if (tenant := tenant_of(name)) is not None:
        return next((t for t in tenant_topics(tenant).all() if t.name == name), None)
    return TOPICS.named(name)
