"""Publishing a topic's status: built from what the reconciler knows, and only when it would differ."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import datetime
from typing import Any

from events import TOPICS
from services.common.logging import get_logger
from services.common.outbox import Outbox
from services.topic_reconciler import logic
from services.topic_reconciler.memory import TopicMemory

log = get_logger(__name__)


class StatusPublisher:
    def __init__(self, outbox: Outbox, clock: Callable[[], datetime]) -> None:
        self._outbox = outbox
        self._clock = clock

    async def publish(self, name: str, topic: TopicMemory, *, error: str | None,
                      warnings: list[Any]) -> list[asyncio.Future[Any]]:
        """The status of ``topic`` now, sent unless nothing it shows has changed (the acknowledgement to await)."""
        inputs = logic.status_inputs(topic.spec, topic.generation, topic.actual, topic.change, error, warnings,
                                     topic.origin)
        if topic.status_inputs == inputs and topic.status is not None:
            return []
        topic.status_inputs = inputs
        status = logic.build_status(name=name, spec=topic.spec, generation=topic.generation, actual=topic.actual,
                                    change=topic.change, error=error, warnings=warnings, previous=topic.status,
                                    now=self._clock(), origin=topic.origin)
        if logic.same_status(topic.status, status):
            return []
        topic.status = status
        log.debug("status", ready=status.ready, replicas=status.replicas,
                  change=status.replicas_change.state if status.replicas_change else None)
        return [await self._outbox.publish(TOPICS.status, status, correlation_id=topic.correlation)]
