"""Wiring of the throttle controller: a start that reads its ledger and the running rebalances, a timer that looks
at the cluster, and two agents that keep what Cruise Control's load and the rebalances say. The work is
``controller``'s; the rules are in the modules beside it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from events import TOPICS, BrokerLoadSample, InvalidEvent, RebalanceStatus, decode
from services.adapters.admin import ClusterAdmin, make_cluster_admin
from services.common.agents import Supervisor
from services.common.bus import DeadLetters, make_app, raw_bytes, raw_topic
from services.common.health import add_health_page
from services.common.outbox import FaustOutbox, Outbox
from services.common.settings import Settings
from services.throttle import metrics
from services.throttle.controller import ThrottleController
from services.throttle.probe import LatencyProbe

SERVICE = "throttle"


class ThrottleService:
    def __init__(self, settings: Settings, *, admin: ClusterAdmin | None = None, outbox: Outbox | None = None) -> None:
        self.settings = settings
        self.app = make_app(SERVICE, settings, web_port=settings.ports.throttle)
        self.outbox = outbox or FaustOutbox(self.app, settings.bus)
        self.supervisor = Supervisor(self.app, DeadLetters(self.outbox, SERVICE))
        self.probe = _probe(settings)
        self.controller = ThrottleController(settings.throttle, admin or make_cluster_admin(settings.cluster_admin),
                                             self.outbox, self.probe)
        add_health_page(self.app, SERVICE, self.controller.health, self.supervisor)
        metrics.register(self.controller)
        self._wire()

    async def start(self) -> None:
        for item in (await self.outbox.read_compacted(TOPICS.rebalance_status)).values():
            self.controller.take_rebalance(item.decoded.event)
        await self.controller.start()
        if self.probe is not None:
            await self.probe.start(self.controller.admin)

    def _wire(self) -> None:
        app, controller, bus = self.app, self.controller, self.settings.bus

        @app.task
        async def rebuild() -> None:
            await self.start()

        async def look() -> None:
            if controller.started:
                await controller.look()

        # Records of these topics are the rebalancer's and the load collector's: an invalid one is theirs to
        # dead-letter, and is skipped here.
        async def rebalances(stream: Any) -> None:
            async for events in stream.take_events(100, within=0.05):
                for status in _decoded(events, TOPICS.rebalance_status):
                    if isinstance(status, RebalanceStatus):
                        controller.take_rebalance(status)

        async def load(stream: Any) -> None:
            async for events in stream.take_events(500, within=0.05):
                for sample in _decoded(events, TOPICS.load_samples):
                    if isinstance(sample, BrokerLoadSample):
                        controller.take_load(sample)

        self.supervisor.agent(raw_topic(app, TOPICS.rebalance_status, bus), rebalances)
        self.supervisor.agent(raw_topic(app, TOPICS.load_samples, bus), load)
        self.supervisor.timer(self.settings.throttle.interval_s)(look)


def _probe(settings: Settings) -> LatencyProbe | None:
    """The latency probe, where a topic is named and the managed cluster is a Kafka (the simulator has no produce
    path)."""
    tuning, cluster = settings.throttle, settings.cluster_admin
    if tuning.latency_probe_topic is None or cluster.kind != "kafka":
        return None
    return LatencyProbe(cluster.client_config(), tuning.latency_probe_topic,
                        every_s=tuning.latency_probe_every_s, window_s=tuning.latency_window_s)


def _decoded(events: Sequence[Any], topic: Any) -> list[Any]:
    found = []
    for event in events:
        raw = raw_bytes(event.value)
        if raw is None:
            continue
        try:
            found.append(decode(raw, topic=topic).event)
        except InvalidEvent:
            continue
    return found


def create_service(settings: Settings) -> ThrottleService:
    return ThrottleService(settings)
