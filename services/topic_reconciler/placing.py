"""Where the topic reconciler puts replicas: new topics and partitions, placeholders filled when brokers come, and
``createReplicaPlacement`` answers. Owns the cluster view, the placement ledger, the observed brokers and the
recent load that placement decisions read."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from events import TOPICS, PlaceholderRecord, PlacementReason, PlacementRequest, PlacementResponse
from events import placeholders as placeholder
from services.adapters.admin import AdminError, ClusterAdmin
from services.common.logging import get_logger
from services.common.outbox import Outbox
from services.common.settings import PlacementSettings
from services.placement.model import PlacementError
from services.placement.request import create_replica_placement
from services.placement.under_replicated import Placed, fill_placeholders, place_topic, required_alive_replicas
from services.topic_reconciler.cluster_view import ClusterViewCache
from services.topic_reconciler.observed import ObservedBrokers
from services.topic_reconciler.placements import PlacementLedger
from services.common.recent_load import RecentLoad

log = get_logger(__name__)


@dataclass
class Filled:
    """Placeholders just filled: the record after it (``filled`` when none is left) and the records sent."""
    record: PlaceholderRecord
    sends: list[asyncio.Future[Any]]


class Placing:
    def __init__(self, admin: ClusterAdmin, outbox: Outbox, settings: PlacementSettings,
                 clock: Callable[[], datetime]) -> None:
        self.admin = admin
        self.outbox = outbox
        self.settings = settings
        self.observed = ObservedBrokers()
        self.recent_load = RecentLoad(timedelta(seconds=settings.load_max_age_s))
        self.view = ClusterViewCache(
            admin, max_age_s=settings.view_max_age_s, observed=self.observed,
            load=lambda: self.recent_load.per_broker(clock()) if settings.load_aware else {},
            stale_max_s=settings.view_stale_max_s)
        self.ledger = PlacementLedger(admin, self.recent_load, self.view.rack_of, cordoned=self.view.cordoned,
                                      offline=self.view.offline, choose_dirs=settings.load_aware, now=clock,
                                      dirs_max_age=timedelta(seconds=settings.view_max_age_s),
                                      dirs_stale_max=timedelta(seconds=settings.view_stale_max_s))

    @property
    def due(self) -> bool:
        """A read of the whole cluster was used past its age and is to be read again (``refresh_due``)."""
        return self.view.freshness.due or self.ledger.freshness.due

    async def refresh_due(self) -> None:
        """Read again what the placements used past its age (``freshness``); placements may go on meanwhile (the
        caches keep them over the read)."""
        await self.view.refresh_due()
        await self.ledger.refresh_due()

    async def place_topic(self, topic: str, partitions: int, replication_factor: int, config: dict[str, str],
                          placer: str | None, min_required: int | None, *, load_aware: bool,
                          brokers_read: bool = False) -> Placed:
        """``brokers_read``: on the brokers as last read (``ClusterViewCache.view``)."""
        view = await self.view.view(load_aware=load_aware, brokers_read=brokers_read)
        return place_topic(view, topic, partitions, replication_factor,
                           placer=placer or self.settings.placer, seed=self.settings.seed,
                           policy=self.settings.under_replicated,
                           required=required_alive_replicas(replication_factor, config, min_required))

    async def place(self, topic: str, partitions: int, replication_factor: int, placer: str | None, *,
                    load_aware: bool) -> list[list[int]]:
        view = await self.view.view(load_aware=load_aware)
        return create_replica_placement(view, topic, partitions, replication_factor,
                                        placer=placer or self.settings.placer, seed=self.settings.seed)

    async def placed(self, topic: str, reason: PlacementReason, new_replicas: dict[int, list[int]], *,
                     load_aware: bool, correlation_id: str | None) -> list[asyncio.Future[Any]]:
        """Log directories for the new replicas, and the placement on the bus for the Spark job to count (in as
        many records as it takes: a 100,000-partition topic's placement is megabytes)."""
        event = await self.ledger.placed(topic, reason, new_replicas, load_aware=load_aware)
        return [await self.outbox.publish(TOPICS.placements, part, correlation_id=correlation_id)
                for part in event.split()]

    async def announce(self, topic: str, reason: PlacementReason, new_replicas: dict[int, list[int]],
                       dirs: dict[tuple[int, int], str], *, correlation_id: str | None) -> list[asyncio.Future[Any]]:
        """Replicas created in the directories chosen for them beforehand: counted, and the placement on the bus."""
        event = self.ledger.record(topic, reason, new_replicas, dirs)
        return [await self.outbox.publish(TOPICS.placements, part, correlation_id=correlation_id)
                for part in event.split()]

    async def answer(self, request: PlacementRequest) -> PlacementResponse:
        """createReplicaPlacement on the cluster as it is now (placements not made, nothing created)."""
        settings = self.settings
        placer = "striped" if request.force_simple_placement else request.placer or settings.placer
        answer = {"request_id": request.request_id, "topic": request.topic, "placer": placer}
        try:
            view = await self.view.view()
            first = len(view.assignments.get(request.topic, []))
            assignment = create_replica_placement(
                view, request.topic, request.partitions, request.replication_factor, placer=placer,
                seed=request.seed if request.seed is not None else settings.seed,
                force_simple_placement=request.force_simple_placement, broker_ids=request.broker_ids)
        except (AdminError, PlacementError) as exc:
            return PlacementResponse(**answer, error=str(exc))
        return PlacementResponse(**answer, first_partition=first, assignment=assignment)

    async def fill(self, topic: str, record: PlaceholderRecord, *, load_aware: bool,
                   correlation_id: str | None) -> Filled | None:
        """Put brokers that are alive now where the topic has placeholders, through the admin port; None when
        none can be filled now."""
        try:
            view = await self.view.view()
        except AdminError as exc:
            log.warning("cannot read the cluster to fill placeholders", error=str(exc))
            return None
        # A placeholder kept for a broker an operator has since forgotten no longer waits for it.
        intended = {p: [b for b in brokers if b in self.observed.brokers] for p, brokers in record.intended.items()}
        changes, after = fill_placeholders(record.assignment, intended, view)
        if not changes:
            return None
        try:
            await self.admin.reassign_partitions(topic, changes)
        except AdminError as exc:
            log.warning("filling placeholders failed; will retry", error=str(exc))
            return None
        new_replicas = {p: [b for b in replicas if b not in record.assignment[p]] for p, replicas in changes.items()}
        log.info("placeholders filled", partitions=len(changes),
                 brokers=sorted({b for replicas in changes.values() for b in replicas[-1:]}))
        record = record.model_copy(update={"assignment": after, "filled": placeholder.count(after) == 0})
        sends = [await self.outbox.publish(TOPICS.placeholders, record, correlation_id=correlation_id)]
        sends.extend(await self.placed(topic, "fill-placeholders", new_replicas, load_aware=load_aware,
                                       correlation_id=correlation_id))
        self.view.set_topic(topic, [placeholder.real(r) for r in after])
        return Filled(record, sends)

    async def close(self, record: PlaceholderRecord, *, correlation_id: str | None) -> asyncio.Future[Any]:
        """The last word on a topic's placeholders: none left."""
        log.info("no placeholders left", replicas=record.replication_factor)
        closed = record.model_copy(update={"filled": True})
        return await self.outbox.publish(TOPICS.placeholders, closed, correlation_id=correlation_id)
