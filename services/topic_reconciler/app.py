"""Wiring of the topic reconciler: agents for specs and replicas-change records, a resync timer, a start-up rebuild.

Decisions are made in ``logic``; this module executes them against the cluster-admin port and publishes status.

Instances share the work by shards (``services.common.shards``): a topic belongs to the shard of its name, and an
instance keeps memory of, and acts on, only the shards its lease holds. Every instance reads every record of its
input topics (its consumer group is its own), skips those of other shards before decoding them, and rebuilds a
shard from the compacted topics when it gains it.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime, timedelta

import faust

from events import (
    TOPICS,
    PlaceholderRecord,
    PlacementReason,
    PlacementRequest,
    PlacementResponse,
    ReplicasChangeCommand,
    ReplicasChangeRecord,
    ReplicasChangeState,
    TopicSpec,
    TopicStatus,
    encode,
)
from events.limits import MAX_RECORD_BYTES
from events.models import TopicOrigin
from events.topics import reserved_topic
from services.common.admin import (
    AdminError,
    ClusterAdmin,
    ReassignmentUnsupported,
    TopicDescription,
    make_cluster_admin,
)
from services.common.agents import Supervisor
from services.common.bus import (
    BATCH_WAIT_S,
    DeadLetters,
    make_app,
    raw_bytes,
    raw_topic,
)
from services.common.busio import record_key
from services.common.health import add_health_page
from services.common.logging import correlation, get_logger
from services.common.lease import Lease
from services.common.outbox import FaustOutbox, Outbox
from services.common.settings import Settings
from services.common.shards import Handover, shard_of
from services.placement.model import PlacementError
from services.placement.request import create_replica_placement
from services.placement.under_replicated import (
    Placed,
    fill_placeholders,
    place_topic,
    required_alive_replicas,
)
from services.topic_reconciler import logic
from services.topic_reconciler.cluster_view import ClusterViewCache
from services.topic_reconciler.observed import ObservedBrokers
from services.topic_reconciler.placements import PlacementLedger
from services.topic_reconciler.recent_load import RecentLoad
from events import placeholders as placeholder

log = get_logger(__name__)
SERVICE = "topic-reconciler"
BATCH = 1000
# Topics handled per hold of the reconciler's lock by resyncs and replicas-change records: spec events wait for the
# lock, and a task's end brings hundreds of completed changes (each described and given a status) at once.
CHUNK = 200
# Placement requests are answered by the instance holding the request's shard; one older than this, read again after
# a restart, was answered before or given up by whoever asked.
PLACEMENT_REQUEST_MAX_AGE_S = 300


def _now() -> datetime:
    return datetime.now(UTC)


class TopicReconciler:
    def __init__(self, settings: Settings, *, admin: ClusterAdmin | None = None, lease: Lease | None = None,
                 outbox: Outbox | None = None) -> None:
        self.settings = settings
        # Each instance reads every record in its own consumer group: which records it acts on is the shards'
        # business, not the group's (a group would split the broker and load topics every instance needs whole).
        self.app = make_app(SERVICE, settings, web_port=settings.ports.topic_reconciler,
                            group=f"ballast-{SERVICE}-{uuid.uuid4().hex[:12]}")
        self.lease = lease
        self.shards = lease.shards if lease is not None else settings.bus.topic_partitions
        # Shards whose memory is loaded, and those this instance acts on (none while a handover is under way).
        self.built: frozenset[int] = frozenset()
        self.owned: frozenset[int] = frozenset()
        self.handover: Handover | None = None
        # Topics of held shards whose work a handover's pause stopped: done first when the shards are taken again.
        self._deferred: set[str] = set()
        bus = settings.bus
        self.specs_topic = raw_topic(self.app, TOPICS.specs, bus)
        self.changes_topic = raw_topic(self.app, TOPICS.replicas_state, bus)
        self.observed_topic = raw_topic(self.app, TOPICS.observed_brokers, bus)
        self.placement_requests_topic = raw_topic(self.app, TOPICS.placement_requests, bus)
        self.load_topic = raw_topic(self.app, TOPICS.load_aggregates, bus)
        self.outbox = outbox or FaustOutbox(self.app, settings.bus)
        self.dead_letters = DeadLetters(self.outbox, SERVICE)
        self.supervisor = Supervisor(self.app, self.dead_letters)
        self.admin = admin or make_cluster_admin(settings.cluster_admin)
        self.observed = ObservedBrokers()
        self.recent_load = RecentLoad(timedelta(seconds=settings.placement.load_max_age_s))
        self.cluster_view = ClusterViewCache(
            self.admin, max_age_s=settings.placement.view_max_age_s, observed=self.observed,
            load=lambda: self.recent_load.per_broker(_now()) if settings.placement.load_aware else {})
        self.ledger = PlacementLedger(self.admin, self.recent_load, self.cluster_view.rack_of,
                                      choose_dirs=settings.placement.load_aware, now=_now)
        # Replicas topics were created without (placeholders), and which brokers were alive at the last look.
        self.placeholders: dict[str, PlaceholderRecord] = {}
        self.alive_brokers: set[int] | None = None
        # Desired state per topic: the spec (None once deleted) and its generation.
        self.specs: dict[str, TopicSpec | None] = {}
        self.generations: dict[str, int] = {}
        self.correlations: dict[str, str] = {}
        self.changes: dict[str, ReplicasChangeRecord] = {}
        self.change_offsets: dict[str, int] = {}
        self.published: dict[str, TopicStatus] = {}
        # Whether Ballast created or adopted each topic (only those are ever deleted); rebuilt from the statuses.
        self.origins: dict[str, TopicOrigin | None] = {}
        # Last described state per topic, and the inputs of the last status built, to skip work that cannot
        # change anything.
        self.actual: dict[str, TopicDescription | None] = {}
        self._status_inputs: dict[str, tuple] = {}
        # The last reconcile's error and warning conditions per topic, kept in statuses published between resyncs.
        self._last_outcome: dict[str, tuple[str | None, list]] = {}
        # Set while this instance acts on its shards; cleared from a handover's pause until the next shards are loaded.
        self.ready = asyncio.Event()
        self._lock = asyncio.Lock()
        # How old the last batch of spec events was on arrival, and how long handling it took (seconds).
        self.last_batch: dict[str, float] = {}
        add_health_page(self.app, SERVICE, lambda: {"ready": self.ready.is_set(), "topics": len(self.specs),
                                                    "shards": sorted(self.owned), "ofShards": self.shards,
                                                    "lastSpecBatch": self.last_batch}, self.supervisor)
        self._wire()

    def _wire(self) -> None:
        app = self.app

        @app.task
        async def start() -> None:
            await self.start()

        supervisor = self.supervisor

        async def specs(stream: faust.StreamT) -> None:
            async for events in stream.take_events(BATCH, within=BATCH_WAIT_S):
                await self.ready.wait()
                received = time.time()
                await supervisor.handle(events, self.on_spec_events)
                self.last_batch = {"events": len(events), "handledS": round(time.time() - received, 3),
                                   "oldestAgeS": round(received - events[0].message.timestamp, 3)}

        async def changes(stream: faust.StreamT) -> None:
            async for events in stream.take_events(BATCH, within=BATCH_WAIT_S):
                await self.ready.wait()
                await supervisor.handle(events, self.on_change_events)

        async def observed(stream: faust.StreamT) -> None:
            # Entries this service wrote, and operators' BrokerForgotten (``ballast brokers forget``).
            async for events in stream.take_events(BATCH, within=BATCH_WAIT_S):
                await self.ready.wait()
                await supervisor.handle(events, self.on_observed_events)

        async def load(stream: faust.StreamT) -> None:
            # The Spark job's aggregates: placement breaks count ties towards the lighter brokers.
            async for events in stream.take_events(BATCH, within=BATCH_WAIT_S):
                await supervisor.handle(events, self.on_load_events)

        async def placement_requests(stream: faust.StreamT) -> None:
            async for events in stream.take_events(BATCH, within=BATCH_WAIT_S):
                await self.ready.wait()
                await supervisor.handle(events, self.on_placement_requests)

        supervisor.agent(self.specs_topic, specs)
        supervisor.agent(self.changes_topic, changes)
        supervisor.agent(self.observed_topic, observed)
        supervisor.agent(self.load_topic, load)
        supervisor.agent(self.placement_requests_topic, placement_requests)

        @self.supervisor.timer(self.settings.reconciler.resync_interval_s)
        async def resync() -> None:
            if self.ready.is_set():
                await self.resync()

        @self.supervisor.timer(self.settings.placement.observe_interval_s)
        async def observe() -> None:
            if self.ready.is_set():
                await self.observe_brokers()

    # -- agents' handlers: each takes a batch of records and may be called again on any part of it ------------

    async def on_spec_events(self, events: Sequence[faust.EventT]) -> None:
        names = []
        for event in events:
            if not self._built(event.key):
                continue  # another shard's
            generation = event.message.offset + 1
            if (key := record_key(event.key)) is not None and generation <= self.generations.get(key, 0):
                continue  # already applied (read again after the shard was loaded)
            decoded = await self.dead_letters.decode_or_reject(event, TOPICS.specs)
            if decoded is None:
                continue
            spec = decoded.event
            if reason := reserved_topic(spec.key):
                await self.dead_letters.reject(event, reason)
                continue
            name = spec.key
            self.specs[name] = spec if isinstance(spec, TopicSpec) else None
            self.generations[name] = generation
            self.correlations[name] = decoded.envelope.correlation_id
            names.append(name)
        if names:
            await self.reconcile(sorted(set(names)))

    async def on_change_events(self, events: Sequence[faust.EventT]) -> None:
        records = []
        for event in events:
            if not self._built(event.key):
                continue
            offset = event.message.offset
            if (key := record_key(event.key)) is not None and offset <= self.change_offsets.get(key, -1):
                continue  # already applied
            decoded = await self.dead_letters.decode_or_reject(event, TOPICS.replicas_state)
            if decoded is not None and isinstance(decoded.event, ReplicasChangeRecord):
                records.append(decoded.event)  # a batch is the replicas-change service's own business
                self.change_offsets[decoded.event.topic] = offset
        for start in range(0, len(records), CHUNK):
            await self.on_change_records(records[start:start + CHUNK])

    async def on_observed_events(self, events: Sequence[faust.EventT]) -> None:
        for event in events:
            # Every instance needs every broker; only the one holding the record's shard reports a bad record.
            decoded = await self.dead_letters.decode_or_reject(event, TOPICS.observed_brokers,
                                                               report=self._built(event.key))
            if decoded is not None:
                self.observed.apply(decoded.event)

    async def on_load_events(self, events: Sequence[faust.EventT]) -> None:
        oldest = time.time() - self.settings.placement.load_max_age_s
        for event in events:
            if event.message.timestamp < oldest:
                continue  # a window too old to count (read again after a restart)
            decoded = await self.dead_letters.decode_or_reject(event, TOPICS.load_aggregates,
                                                               report=self._built(event.key))
            if decoded is not None:
                self.recent_load.take(decoded.event)

    async def on_placement_requests(self, events: Sequence[faust.EventT]) -> None:
        oldest = time.time() - PLACEMENT_REQUEST_MAX_AGE_S
        for event in events:
            if not self._owns(event.key) or event.message.timestamp < oldest:
                continue
            decoded = await self.dead_letters.decode_or_reject(event, TOPICS.placement_requests)
            if decoded is None:
                continue
            response = await self.answer_placement(decoded.event)
            await asyncio.gather(*[await self.outbox.publish(
                TOPICS.placement_responses, part, correlation_id=decoded.envelope.correlation_id)
                for part in response.split()])

    # -- shards: start, handover ----------------------------------------------------------------------------------

    def _built(self, key: object) -> bool:
        return shard_of(raw_bytes(key), self.shards) in self.built

    def _owns(self, key: object) -> bool:
        return shard_of(raw_bytes(key), self.shards) in self.owned

    def _owns_topic(self, name: str) -> bool:
        return shard_of(name.encode(), self.shards) in self.owned

    def _fence(self, names: Iterable[str]) -> set[str]:
        """The names this instance may act on now; those of its shards that a pause holds back are deferred."""
        held = set()
        for name in names:
            shard = shard_of(name.encode(), self.shards)
            if shard in self.owned:
                held.add(name)
            elif shard in self.built:
                self._deferred.add(name)
        return held

    async def start(self) -> None:
        observed = await self.outbox.read_compacted(TOPICS.observed_brokers)
        for item in observed.values():
            self.observed.apply(item.decoded.event)
        self.handover = Handover(asyncio.get_running_loop(), pause=self.pause, take=self.take)
        every = frozenset(range(self.shards))
        self.handover.take(self.lease.attach(self.handover) if self.lease is not None else every)

    async def pause(self) -> None:
        """Act on no shard from now on: once the lock is ours, no reconcile is half done."""
        self.ready.clear()
        async with self._lock:
            self.owned = frozenset()

    async def take(self, shards: frozenset[int]) -> None:
        """Load the shards gained, forget those given away, and act on ``shards``."""
        first = not self.built
        gained, released = shards - self.built, self.built - shards
        loaded = await self._load(gained) if gained else None
        self._forget(released)
        if loaded is not None:
            self._remember(*loaded)
        self.built = self.owned = shards
        log.info("acting on shards", shards=sorted(shards), of=self.shards, gained=sorted(gained),
                 released=sorted(released), specs=len(self.specs), statuses=len(self.published),
                 changes=len(self.changes), topics_with_placeholders=len(self.placeholders))
        self.ready.set()
        if first:
            await self.observe_brokers()
        deferred, self._deferred = self._deferred, set()
        await self._reconcile_in_chunks(sorted(n for n in deferred if n in self.specs))
        await self.resync(only=gained)

    async def _load(self, shards: frozenset[int]) -> tuple[dict, ...]:
        def mine(raw: bytes | None) -> bool:
            return shard_of(raw, self.shards) in shards

        return await asyncio.gather(
            self.outbox.read_compacted(TOPICS.specs, keys=mine),
            self.outbox.read_compacted(TOPICS.status, keys=mine),
            self.outbox.read_compacted(TOPICS.replicas_state, keys=mine),
            self.outbox.read_compacted(TOPICS.placeholders, keys=mine),
        )

    def _remember(self, specs: dict, statuses: dict, changes: dict, placeholders: dict) -> None:
        """Memory of shards just gained (of which nothing is known yet: records of unloaded shards are skipped)."""
        for name, item in placeholders.items():
            if item.decoded.event.placeholders:
                self.placeholders[name] = item.decoded.event
        for name, item in specs.items():
            if reserved_topic(name):
                continue  # dead-lettered when it arrived
            spec = item.decoded.event
            self.specs[name] = spec if isinstance(spec, TopicSpec) else None
            self.generations[name] = item.offset + 1
            self.correlations[name] = item.decoded.envelope.correlation_id
        for name, item in statuses.items():
            self.published[name] = item.decoded.event
            self.origins[name] = item.decoded.event.origin
        for name, item in changes.items():
            if isinstance(item.decoded.event, ReplicasChangeRecord):
                self.changes[name] = item.decoded.event
                self.change_offsets[name] = item.offset

    def _forget(self, shards: frozenset[int]) -> None:
        """Drop the memory of shards another instance now has (it rebuilds them from the bus)."""
        if not shards:
            return
        memories: list[dict] = [self.specs, self.generations, self.correlations, self.changes, self.change_offsets,
                                self.published, self.origins, self.actual, self._status_inputs, self._last_outcome,
                                self.placeholders]
        for memory in memories:
            for name in [n for n in memory if shard_of(n.encode(), self.shards) in shards]:
                del memory[name]

    async def observe_brokers(self) -> None:
        """Record brokers never seen before; when one joins or returns, fill the placeholders waiting for it."""
        try:
            described = await self.admin.brokers()
        except AdminError as exc:
            log.warning("cannot read the cluster's brokers; will retry", error=str(exc))
            return
        news = self.observed.observe(described)
        if news and 0 in self.owned:  # every instance observes; the one holding shard 0 records it
            log.info("brokers observed", brokers={b.id: b.rack for b in news})
            await asyncio.gather(*[await self.outbox.publish(TOPICS.observed_brokers, b) for b in news])
        self.cluster_view.set_brokers(described)
        alive = {b.id for b in described if b.alive}
        came = alive - self.alive_brokers if self.alive_brokers is not None else set()
        self.alive_brokers = alive
        if came and self.placeholders:
            log.info("brokers joined or returned; filling placeholders", brokers=sorted(came),
                     topics=len(self.placeholders))
            await self.reconcile(sorted(self.placeholders))

    async def on_change_records(self, records: list[ReplicasChangeRecord]) -> None:
        """Publish the status after the last replicas-change transition of each topic in this batch (transitions
        that arrive within the same few milliseconds would only be overtaken at once). Only a completed change
        alters the cluster, so only those topics are described again; the others reuse the last description."""
        managed = {r.topic for r in records if self.specs.get(r.topic) is not None}
        if not managed:
            for record in records:
                self.changes[record.topic] = record
            return
        async with self._lock:
            managed = self._fence(managed)  # a handover may have paused this instance meanwhile
            stale = sorted({r.topic for r in records if r.topic in managed and
                            (r.state == ReplicasChangeState.COMPLETED or r.topic not in self.actual)})
            if stale:
                try:
                    self.actual.update(await self.admin.describe_topics(stale))
                except AdminError as exc:
                    log.warning("cannot read the cluster; statuses wait for the next resync", error=str(exc))
            sends = []
            for record in records:
                self.changes[record.topic] = record
            for topic in dict.fromkeys(r.topic for r in records):
                if topic in managed and topic in self.actual:
                    error, warnings = self._last_outcome.get(topic, (None, []))
                    if self.changes[topic].state != ReplicasChangeState.PENDING:
                        # Cruise Control took the change: whatever held it back no longer does.
                        warnings = [w for w in warnings if w.type != logic.BLOCKED]
                    sends.extend(await self._publish_status(topic, self.specs.get(topic), self.actual[topic],
                                                            error=error, warnings=warnings))
        # The records are queued in order; waiting for their acknowledgements outside the lock lets the next batch of
        # specs be handled meanwhile (the agent still returns, and its offsets commit, only once they are durable).
        await asyncio.gather(*sends)
        # Only a finished change whose target is no longer the spec's needs more work now (the spec moved on while
        # it ran); everything else is already reflected, and the resync timer catches drift.
        follow_up = sorted({r.topic for r in records if r.state == ReplicasChangeState.COMPLETED
                            and (spec := self.specs.get(r.topic)) is not None and spec.replicas != r.target_replicas})
        await self.reconcile(follow_up)

    async def resync(self, only: frozenset[int] | None = None) -> None:
        """Reconcile every topic (of the ``only`` shards, when given), a chunk per lock hold: with thousands of
        topics one pass takes seconds, and live spec and change events must not wait behind it."""
        await self._reconcile_in_chunks(
            sorted(n for n in self.specs if only is None or shard_of(n.encode(), self.shards) in only))

    async def _reconcile_in_chunks(self, names: list[str]) -> None:
        for start in range(0, len(names), CHUNK):
            await self.reconcile(names[start:start + CHUNK])

    async def reconcile(self, names: list[str]) -> None:
        """Compare desired with actual for these topics, act, and publish every status that changed."""
        async with self._lock:
            names = sorted(self._fence(names))
            if not names:
                return
            try:
                actual = await self.admin.describe_topics(names)
            except AdminError as exc:
                log.warning("cannot read the cluster; will retry at the next resync", error=str(exc))
                return
            self.actual.update(actual)
            sends = []
            for name in names:
                spec = self.specs.get(name)
                with correlation(self.correlations.get(name), topic=name):
                    try:
                        sends.extend(await self._reconcile_one(name, spec, actual.get(name)))
                    except Exception as exc:  # noqa: BLE001 - one topic's failure never stops the others
                        log.exception("reconcile failed; will retry at the next resync")
                        sends.extend(await self._report_failure(name, spec, exc))
        await asyncio.gather(*sends)  # outside the lock, as in on_change_records

    async def _report_failure(self, name: str, spec: TopicSpec | None, exc: Exception) -> list[asyncio.Future]:
        """A topic whose reconcile raised (a bug, or an adapter error no one expected) says so in its status."""
        error = f"internal error: {type(exc).__name__}: {exc}"
        self._last_outcome[name] = (error, [])
        try:
            return await self._publish_status(name, spec, self.actual.get(name), error=error, warnings=[])
        except Exception:  # noqa: BLE001 - the log above has it; the next resync tries again
            log.exception("cannot publish the failure's status")
            return []

    async def _reconcile_one(self, name: str, spec: TopicSpec | None,
                             actual: TopicDescription | None) -> list[asyncio.Future]:
        previous = self.published.get(name)
        if spec is None and actual is None and previous is not None and previous.deleted:
            return []  # deletion done and reported
        change = self.changes.get(name)
        sends: list[asyncio.Future] = []
        if logic.waiting_for_brokers(self.placeholders.get(name), actual, spec):
            actual = await self._fill_placeholders(name, actual, sends)
        placeholders = self.placeholders.get(name)
        alive = len(self.alive_brokers) if self.alive_brokers is not None else None
        self.origins[name] = logic.origin_now(self.origins.get(name), spec, actual)
        plan = logic.plan(spec, actual, change, placeholders, alive, self.origins[name])
        error = None
        for action in plan.actions:
            try:
                sends.extend(await self._execute(action))
            except (AdminError, PlacementError) as exc:
                # Temporary or permanent, the topic is retried at the next resync (brokers may return, a spec
                # may change); the status says why it is not there yet.
                error = f"{type(action).__name__} failed: {exc}"
                log.warning("reconcile action failed", action=type(action).__name__, error=str(exc))
        if any(isinstance(a, logic.CreateTopic | logic.DeleteTopic | logic.CreatePartitions) for a in plan.actions):
            try:
                actual = (await self.admin.describe_topics([name])).get(name)
            except AdminError as exc:
                log.warning("cannot read the topic after changing it; the next resync will", error=str(exc))
            self.actual[name] = actual
            self.origins[name] = logic.origin_now(self.origins.get(name), spec, actual)
            if name in self.placeholders and any(isinstance(a, logic.CreateTopic) for a in plan.actions):
                plan.warnings.append(logic.under_replicated_condition(self.placeholders[name], alive))
        if logic.placeholders_filled(self.placeholders.get(name), actual, spec):
            sends.append(await self._close_placeholders(name))
        self._last_outcome[name] = (error, plan.warnings)
        sends.extend(await self._publish_status(name, spec, actual, error=error, warnings=plan.warnings))
        return sends

    async def _publish_status(self, name: str, spec: TopicSpec | None, actual: TopicDescription | None, *,
                              error: str | None, warnings: list) -> list[asyncio.Future]:
        origin = self.origins.get(name)
        inputs = logic.status_inputs(spec, self.generations.get(name, 0), actual, self.changes.get(name), error,
                                     warnings, origin)
        if self._status_inputs.get(name) == inputs and name in self.published:
            return []
        self._status_inputs[name] = inputs
        status = logic.build_status(name=name, spec=spec, generation=self.generations.get(name, 0), actual=actual,
                                    change=self.changes.get(name), error=error, warnings=warnings,
                                    previous=self.published.get(name), now=_now(), origin=origin)
        if logic.same_status(self.published.get(name), status):
            return []
        self.published[name] = status
        log.debug("status", ready=status.ready, replicas=status.replicas,
                 change=status.replicas_change.state if status.replicas_change else None)
        return [await self.outbox.publish(TOPICS.status, status, correlation_id=self.correlations.get(name))]

    async def _execute(self, action: logic.Action) -> list[asyncio.Future]:
        match action:
            case logic.CreateTopic(name, partitions, rf, config, placer, min_required):
                self.cluster_view.forget(name)  # whatever the view remembers of a topic that is gone
                placed = await self._place_topic(name, partitions, rf, config, placer, min_required)
                record = None
                if placed.placeholders:
                    record = PlaceholderRecord(topic=name, replication_factor=rf, assignment=placed.full,
                                               intended=placed.intended)
                    if (size := len(encode(record))) > MAX_RECORD_BYTES:
                        # Its memory of the placeholders would not fit on the bus: refuse rather than forget them.
                        raise PlacementError(
                            f"too many partitions to create under-replicated: the record of its placeholders would "
                            f"take {size:,} bytes (at most {MAX_RECORD_BYTES:,}); create it once enough brokers are "
                            "alive, or with fewer partitions")
                log.info("creating topic", partitions=partitions, replicas=rf, placer=placer or "default",
                         placeholders=placed.placeholders)
                await self.admin.create_topic(name, partitions, len(placed.assignment[0]), config,
                                              assignment=placed.assignment)
                self.origins[name] = "created"
                self.cluster_view.set_topic(name, placed.assignment)
                sends = await self._placed(name, "create", dict(enumerate(placed.assignment)))
                if record is not None:
                    self.placeholders[name] = record
                    sends.append(await self.outbox.publish(TOPICS.placeholders, record,
                                                           correlation_id=self.correlations.get(name)))
                return sends
            case logic.DeleteTopic(name):
                log.info("deleting topic")
                await self.admin.delete_topic(name)
                self.cluster_view.forget(name)
                if name in self.placeholders:
                    return [await self._close_placeholders(name)]
            case logic.CreatePartitions(name, total, rf, existing, placer):
                self.cluster_view.set_topic(name, existing)
                assignment = await self._place(name, total - len(existing), rf, placer)
                log.info("adding partitions", total=total, placer=placer or "default")
                await self.admin.create_partitions(name, total, assignment=assignment)
                self.cluster_view.add_partitions(name, assignment)
                return await self._placed(name, "add-partitions",
                                          {len(existing) + i: r for i, r in enumerate(assignment)})
            case logic.AlterConfig(name, config):
                await self.admin.alter_configs(name, config)
            case logic.RequestReplicasChange(name, target):
                command = ReplicasChangeCommand(topic=name, target_replicas=target,
                                                generation=self.generations.get(name, 0))
                log.info("requesting replicas change", target=target)
                sent = await self.outbox.publish(TOPICS.replicas_commands, command,
                                                 correlation_id=self.correlations.get(name))
                if expected := logic.expected_change(self.changes.get(name), action, command.generation, _now()):
                    self.changes[name] = expected  # until the replicas-change service's own record arrives
                return [sent]
        return []


    async def answer_placement(self, request: PlacementRequest) -> PlacementResponse:
        """createReplicaPlacement on the cluster as it is now (placements not made, nothing created)."""
        settings = self.settings.placement
        placer = "striped" if request.force_simple_placement else request.placer or settings.placer
        answer = {"request_id": request.request_id, "topic": request.topic, "placer": placer}
        try:
            view = await self.cluster_view.view()
            first = len(view.assignments.get(request.topic, []))
            assignment = create_replica_placement(
                view, request.topic, request.partitions, request.replication_factor, placer=placer,
                seed=request.seed if request.seed is not None else settings.seed,
                force_simple_placement=request.force_simple_placement, broker_ids=request.broker_ids)
        except (AdminError, PlacementError) as exc:
            return PlacementResponse(**answer, error=str(exc))
        return PlacementResponse(**answer, first_partition=first, assignment=assignment)

    async def _place_topic(self, topic: str, partitions: int, replication_factor: int, config: dict[str, str],
                           placer: str | None, min_required: int | None) -> Placed:
        settings = self.settings.placement
        return place_topic(await self.cluster_view.view(load_aware=self._load_aware(topic)), topic, partitions,
                           replication_factor,
                           placer=placer or settings.placer, seed=settings.seed,
                           policy=settings.under_replicated,
                           required=required_alive_replicas(replication_factor, config, min_required))

    async def _fill_placeholders(self, name: str, actual: TopicDescription | None, sends: list[asyncio.Future]
                                 ) -> TopicDescription | None:
        """Put brokers that are alive now where the topic has placeholders, through the admin port. Where the
        port cannot move replicas (a real Kafka through confluent-kafka), the plan's replication-factor change
        through Cruise Control fills them instead."""
        record = self.placeholders[name]
        try:
            view = await self.cluster_view.view()
        except AdminError as exc:
            log.warning("cannot read the cluster to fill placeholders", error=str(exc))
            return actual
        # A placeholder kept for a broker an operator has since forgotten no longer waits for it.
        intended = {p: [b for b in brokers if b in self.observed.brokers] for p, brokers in record.intended.items()}
        changes, after = fill_placeholders(record.assignment, intended, view)
        if not changes:
            return actual
        try:
            await self.admin.reassign_partitions(name, changes)
        except ReassignmentUnsupported:
            return actual
        except AdminError as exc:
            log.warning("filling placeholders failed; will retry", error=str(exc))
            return actual
        new_replicas = {p: [b for b in replicas if b not in record.assignment[p]] for p, replicas in changes.items()}
        log.info("placeholders filled", partitions=len(changes),
                 brokers=sorted({b for replicas in changes.values() for b in replicas[-1:]}))
        record = record.model_copy(update={"assignment": after,
                                           "filled": placeholder.count(after) == 0})
        if record.filled:
            del self.placeholders[name]
        else:
            self.placeholders[name] = record
        sends.append(await self.outbox.publish(TOPICS.placeholders, record, correlation_id=self.correlations.get(name)))
        sends.extend(await self._placed(name, "fill-placeholders", new_replicas))
        self.cluster_view.set_topic(name, [placeholder.real(r) for r in after])
        try:
            return (await self.admin.describe_topics([name])).get(name)
        except AdminError as exc:
            log.warning("cannot read the topic after filling placeholders; the next resync will", error=str(exc))
            return actual

    async def _close_placeholders(self, name: str) -> asyncio.Future:
        record = self.placeholders.pop(name)
        log.info("no placeholders left", replicas=record.replication_factor)
        closed = record.model_copy(update={"filled": True})
        return await self.outbox.publish(TOPICS.placeholders, closed, correlation_id=self.correlations.get(name))

    async def _place(self, topic: str, partitions: int, replication_factor: int, placer: str | None
                     ) -> list[list[int]]:
        settings = self.settings.placement
        view = await self.cluster_view.view(load_aware=self._load_aware(topic))
        return create_replica_placement(view, topic, partitions, replication_factor,
                                        placer=placer or settings.placer, seed=settings.seed)

    async def _placed(self, name: str, reason: PlacementReason, new_replicas: dict[int, list[int]]
                      ) -> list[asyncio.Future]:
        """Log directories for the new replicas, and the placement on the bus for the Spark job to count (in as
        many records as it takes: a 100,000-partition topic's placement is megabytes)."""
        event = await self.ledger.placed(name, reason, new_replicas, load_aware=self._load_aware(name))
        return [await self.outbox.publish(TOPICS.placements, part, correlation_id=self.correlations.get(name))
                for part in event.split()]

    def _load_aware(self, topic: str) -> bool:
        spec = self.specs.get(topic)
        return spec is None or spec.load_aware


def create_service(settings: Settings, lease: Lease | None = None) -> TopicReconciler:
    return TopicReconciler(settings, lease=lease)
