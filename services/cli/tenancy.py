"""Which bus topics the CLI writes specs to and reads statuses from: the deployment's own (an admin's, and any
deployment without tenants), or, for a CLI acting as a tenant (BALLAST_TENANT), the tenant's own spec and status
topics (events.topics.tenant_topics), which Kafka's ACLs let only that tenant use. The one place this is decided."""

from __future__ import annotations

from dataclasses import dataclass

from events import TOPICS, TopicSpec, TopicSpecDeleted, TopicStatus
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


def bus_topic_named(name: str) -> BusTopic[Event] | None:
    """The deployment's bus topic, or any tenant's, of this name (what `ballast produce` checks records against)."""
    if (tenant := tenant_of(name)) is not None:
        return next((t for t in tenant_topics(tenant).all() if t.name == name), None)
    return TOPICS.named(name)
