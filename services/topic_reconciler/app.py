"""Wiring of the topic reconciler: agents for specs, replicas-change records, observed brokers, load aggregates,
brokers' status and placement requests; timers for the resync and the brokers' observation; a start that takes the instance's shards.

What the records mean is ``intake``'s business, the work on the cluster ``reconciler``'s, decisions ``logic``'s.
"""

from __future__ import annotations

from collections import Counter
import time
import uuid
from collections.abc import Awaitable, Callable

import faust

from events import TOPICS
from events.envelope import utcnow
from events.topics import group as topic_group
from services.adapters.admin import ClusterAdmin, make_cluster_admin
from services.common.agents import Handler, Supervisor
from services.common.bursts import BurstGathering
from services.common.bus import BATCH_WAIT_S, DeadLetters, consumer_group, make_app, raw_topic
from services.common.health import add_health_page
from services.common.logging import get_logger
from services.common.metrics import gauge
from services.common.lease import Lease
from services.common.outbox import FaustOutbox, Outbox
from services.common.settings import Settings
from services.domain.policy import PolicyFile
from services.topic_reconciler.intake import Intake
from services.topic_reconciler.placing import Placing
from services.topic_reconciler.reconciler import Reconciler
from services.topic_reconciler.tenancy import TenantGate, tenants_of

SERVICE = "topic-reconciler"
BATCH = 1000
# Spec events handled at once: a burst's new topics are created together, their directories sent to every broker
# before any of them is created. Batches of 1,000 made each wait while the brokers created the previous batch's
# logs (a broker answers AlterReplicaLogDirs only then): seconds for every thousand topics.
SPEC_BATCH = 10_000
log = get_logger(__name__)



class TopicReconciler:
    def __init__(self, settings: Settings, *, admin: ClusterAdmin | None = None, lease: Lease | None = None,
                 outbox: Outbox | None = None) -> None:
        self.settings = settings
        shards = lease.shards if lease is not None else settings.bus.topic_partitions
        # With several shards, each instance reads every record in a consumer group of its own: which records it acts
        # on is the shards' business, not the group's (a shared group would split the broker and load topics every
        # instance needs whole). With one shard, one instance runs at a time and the group is the service's, so a
        # restarted instance goes on from the committed offsets instead of reading (and reporting) everything again.
        group = consumer_group(SERVICE) if shards == 1 else topic_group(f"{SERVICE}-{uuid.uuid4().hex[:12]}")
        self.app = make_app(SERVICE, settings, web_port=settings.ports.topic_reconciler, group=group)
        self.outbox = outbox or FaustOutbox(self.app, settings.bus)
        self.dead_letters = DeadLetters(self.outbox, SERVICE)
        self.supervisor = Supervisor(self.app, self.dead_letters)
        # Teams (issue 53): with a tenants file, each tenant's spec topic goes through the tenant gate.
        tenants = tenants_of(settings.tenants_file)
        admin = admin or make_cluster_admin(settings.cluster_admin)
        placing = Placing(admin, self.outbox, settings.placement, utcnow)
        self.reconciler = Reconciler(admin, self.outbox, placing, utcnow, fence=lambda names: self.intake.fence(names),
                                     settings=settings.reconciler, policy=PolicyFile(
                                         settings.policy_file, lambda error: log.error("policy file", error=error)
                                     ).current, steward=tenants.steward_of if tenants else lambda name, owner: None)
        self.gate = TenantGate(tenants, self.outbox, self.dead_letters, shards=shards,
                               owns=lambda key: self.intake.owns(key),
                               holds=lambda key: self.intake.holds(key), in_cluster=self._partitions_in_cluster
                               ) if tenants else None
        self.intake = Intake(self.reconciler, self.dead_letters, shards=shards, lease=lease,
                             load_max_age_s=settings.placement.load_max_age_s,
                             on_spec=self.gate.take if self.gate else None,
                             on_take=self.gate.on_shards_taken if self.gate else None)
        # How old the last batch of spec events was on arrival, and how long handling it took (seconds).
        self.last_batch: dict[str, float] = {}
        add_health_page(self.app, SERVICE, self._health, self.supervisor)
        gauge("ballast_topics", "Topics with a spec this instance manages, by whether their status is ready",
              ["ready"], self._readiness)
        self._wire()

    def _partitions_in_cluster(self, name: str) -> int | None:
        topic = self.reconciler.memory.get(name)
        return topic.actual.partition_count if topic is not None and topic.actual is not None else None

    def _readiness(self) -> dict[tuple[str, ...], float]:
        memory = self.reconciler.memory
        counts = Counter("true" if topic.status.ready else "false" for name in memory
                         if (topic := memory[name]).spec is not None and topic.status is not None)
        return {(ready,): float(counts.get(ready, 0)) for ready in ("true", "false")}

    def _health(self) -> dict[str, object]:
        return {"ready": self.intake.ready.is_set(), "topics": self.reconciler.memory.counts()["specs"],
                "shards": sorted(self.intake.owned), "ofShards": self.intake.shards, "lastSpecBatch": self.last_batch}

    def _wire(self) -> None:
        app, intake, supervisor, bus = self.app, self.intake, self.supervisor, self.settings.bus

        gate = self.gate

        @app.task
        async def start() -> None:
            if gate is not None:
                await gate.start()
            await intake.start()

        async def specs(stream: faust.StreamT) -> None:
            tuning = self.settings.reconciler
            async for events in stream.take_events(SPEC_BATCH, within=tuning.spec_batch_window_s,
                                                   quiet=tuning.spec_batch_quiet_s,
                                                   bursts=BurstGathering(tuning.spec_burst_wait_s)):
                await intake.ready.wait()
                received = time.time()
                await supervisor.handle(events, intake.on_spec_events)
                self.last_batch = {"number": self.last_batch.get("number", 0) + 1, "events": len(events),
                                   "handledS": round(time.time() - received, 3),
                                   "oldestAgeS": round(received - events[0].message.timestamp, 3)}

        def handled_when_ready(name: str, handler: Handler) -> Callable[[faust.StreamT], Awaitable[None]]:
            async def agent(stream: faust.StreamT) -> None:
                async for events in stream.take_events(BATCH, within=BATCH_WAIT_S):
                    await intake.ready.wait()
                    await supervisor.handle(events, handler)
            agent.__name__ = name
            return agent

        async def load(stream: faust.StreamT) -> None:
            # The Spark job's aggregates: placement breaks count ties towards the lighter brokers.
            async for events in stream.take_events(BATCH, within=BATCH_WAIT_S):
                await supervisor.handle(events, intake.on_load_events)

        supervisor.agent(raw_topic(app, TOPICS.specs, bus), specs)
        supervisor.agent(raw_topic(app, TOPICS.replicas_state, bus), handled_when_ready("changes", intake.on_change_events))
        # Entries this service wrote, and operators' BrokerForgotten (``ballast brokers forget``).
        supervisor.agent(raw_topic(app, TOPICS.observed_brokers, bus), handled_when_ready("observed", intake.on_observed_events))
        supervisor.agent(raw_topic(app, TOPICS.load_aggregates, bus), load)
        # The rebalancer's view of each broker's log directories: drained and failed ones take no new replica.
        supervisor.agent(raw_topic(app, TOPICS.broker_status, bus),
                         handled_when_ready("broker_status", intake.on_broker_status_events))
        supervisor.agent(raw_topic(app, TOPICS.placement_requests, bus),
                         handled_when_ready("placement_requests", intake.on_placement_requests))
        if gate is not None:
            async def tenant_specs(stream: faust.StreamT) -> None:
                async for events in stream.take_events(BATCH, within=BATCH_WAIT_S):
                    await gate.ready.wait()
                    await intake.ready.wait()
                    await supervisor.handle(events, gate.on_spec_events)

            first, *more = [door.specs for door in gate.doors()]
            supervisor.agent(raw_topic(app, first, bus, *more), tenant_specs)
        supervisor.timer(self.settings.reconciler.resync_interval_s)(intake.resync)
        supervisor.timer(self.settings.placement.observe_interval_s)(intake.observe)
        supervisor.timer(self.settings.placement.observe_interval_s)(intake.refresh_placement_reads)


def create_service(settings: Settings, lease: Lease | None = None) -> TopicReconciler:
    return TopicReconciler(settings, lease=lease)
