"""Wiring of the load collector: one timer that reads Cruise Control's ``load`` (with log directories) and
``partition_load`` and publishes the samples to ``ballast.load.samples``."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

from events import TOPICS
from events.models import Event
from services.common.bus import make_app
from services.adapters.cruise_control import CruiseControlClient, CruiseControlError
from services.common.health import add_health_page
from services.common.logging import get_logger
from services.common.outbox import FaustOutbox, Outbox
from services.common.settings import Settings
from services.load_collector import logic

log = get_logger(__name__)
SERVICE = "load-collector"
PUBLISH_CHUNK = 2_000


class LoadCollectorService:
    def __init__(self, settings: Settings, *, cruise_control: CruiseControlClient | None = None,
                 outbox: Outbox | None = None) -> None:
        self.settings = settings
        self.tuning = settings.load_collector
        self.app = make_app(SERVICE, settings, web_port=settings.ports.load_collector)
        self.outbox = outbox or FaustOutbox(self.app, settings.bus)
        self.cc = cruise_control or CruiseControlClient(settings.cruise_control, service=SERVICE)
        self.published = 0
        self.last_error: str | None = None
        add_health_page(self.app, SERVICE, lambda: {"ready": True, "published": self.published,
                                                    "lastError": self.last_error})

        @self.app.timer(self.tuning.interval_s)
        async def collect() -> None:
            await self.collect()

    async def collect(self) -> None:
        if not self.cc.can_ask_now:
            return  # its share of Cruise Control's tasks is still in use: this interval's sample is skipped
        sampled_at = datetime.now(UTC)
        try:
            brokers = await self.cc.load(populate_disk_info=True)
            partitions = await self.cc.partition_load() if self.tuning.partitions else None
        except CruiseControlError as exc:
            # A missed sample is a gap in the windows, not an error: the next interval tries again.
            if exc.message != self.last_error:
                log.warning("cannot read load from Cruise Control", error=exc.message)
            self.last_error = exc.message
            return
        self.last_error = None
        published = self.published
        await self._publish(logic.broker_samples(brokers, sampled_at))
        # The partitions' samples a chunk at a time, each on the bus before the next is made: every sample and its
        # record held at once is twice what Cruise Control's answer takes, at 100,000 partitions hundreds of MB.
        records = partitions.records if partitions is not None else []
        for start in range(0, len(records), PUBLISH_CHUNK):
            await self._publish(logic.partition_samples(records[start:start + PUBLISH_CHUNK], sampled_at))
        log.debug("load sampled", samples=self.published - published)

    async def _publish(self, events: list[Event]) -> None:
        await asyncio.gather(*[await self.outbox.publish(TOPICS.load_samples, e) for e in events])
        self.published += len(events)


def create_service(settings: Settings) -> LoadCollectorService:
    return LoadCollectorService(settings)
