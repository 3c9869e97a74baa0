"""Publishing a topic's status: built from what the reconciler knows, and only when it would differ."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import datetime
from typing import Any

from events import TOPICS, ReplicasChangeState, TopicStatus
from events.topics import tenant_topics
from services.common.logging import get_logger
from services.common.metrics import observe_since
from services.common.outbox import Outbox
from services.topic_reconciler import logic
from services.topic_reconciler.memory import TopicMemory, kept

log = get_logger(__name__)


class StatusPublisher:
    def __init__(self, outbox: Outbox, clock: Callable[[], datetime],
                 steward: Callable[[str, str | None], str | None] = lambda name, owner: None) -> None:
        self._outbox = outbox
        self._clock = clock
        # Which tenant's status topic also hears of a topic (``Tenants.steward_of``): its owner's, or, for an admin's
        # spec of a name a tenant's names take, that tenant's (it may take it over or withdraw it).
        self._steward = steward

    async def publish(self, name: str, topic: TopicMemory, *, error: str | None,
                      warnings: list[Any]) -> list[asyncio.Future[Any]]:
        """The status of ``topic`` now, sent unless nothing it shows has changed (the acknowledgement to await)."""
        inputs = logic.status_inputs(topic.spec, topic.generation, topic.actual, topic.change, error, warnings,
                                     topic.origin, topic.owner)
        if topic.status_inputs == inputs and topic.status is not None:
            return []
        topic.status_inputs = inputs
        status = logic.build_status(name=name, spec=topic.spec, generation=topic.generation, actual=topic.actual,
                                    change=topic.change, error=error, warnings=warnings, previous=topic.status,
                                    now=self._clock(), origin=topic.origin, owner=topic.owner)
        if logic.same_status(topic.status, status):
            return []
        if _newly_completed(topic.status, status) and topic.change is not None:
            observe_since("completion_to_status", topic.change.updated_at.timestamp())
        topic.status = kept(status)
        log.debug("status", ready=status.ready, replicas=status.replicas,
                  change=status.replicas_change.state if status.replicas_change else None)
        sends = [await self._outbox.publish(TOPICS.status, status, correlation_id=topic.correlation)]
        if (steward := self._steward(name, status.owner)) is not None:
            # The tenant's own status topic (issue 53): the one it may read, with the generation the tenant knows;
            # 0 for a spec it did not send (an admin's), which no record of the tenant's is answered by.
            generation = topic.tenant_generation if status.owner == steward else None
            status = status.model_copy(update={"generation": generation or 0, "observed_generation": generation or 0})
            sends.append(await self._outbox.publish(tenant_topics(steward).status, status,
                                                    correlation_id=topic.correlation))
        return sends


def _newly_completed(previous: TopicStatus | None, status: TopicStatus) -> bool:
    done = status.replicas_change
    if done is None or done.state != ReplicasChangeState.COMPLETED:
        return False
    before = previous.replicas_change if previous is not None else None
    return before is None or before.state != ReplicasChangeState.COMPLETED or (
        before.target_replicas != done.target_replicas)
