"""Wiring of the rebalancer: agents for requests, actions and scaling signals; a timer that moves every rebalance one
step and one that looks at the brokers, one handler per concern; a start-up rebuild. The work is ``rebalances``'s and
``observers``'s; decisions are ``logic``'s."""

from __future__ import annotations

from collections import Counter
from collections.abc import Awaitable, Callable
from functools import partial

import faust

from events import TOPICS
from services.adapters.admin import ClusterAdmin, make_cluster_admin
from services.common.agents import Handler, Supervisor
from services.common.bus import DeadLetters, make_app, raw_topic
from services.adapters.cruise_control import CruiseControlClient
from services.common.health import add_health_page
from services.common.metrics import gauge
from services.common.outbox import FaustOutbox, Outbox
from services.common.settings import Settings
from services.rebalancer import execution
from services.rebalancer.observers import broker_status, disk_drift, drained_dirs, removal_check, scale_up
from services.rebalancer.observers.timer import Concern, Observers
from services.rebalancer.rebalances import Rebalances

SERVICE = "rebalancer"


class RebalancerService:
    def __init__(self, settings: Settings, *, admin: ClusterAdmin | None = None,
                 cruise_control: CruiseControlClient | None = None, outbox: Outbox | None = None) -> None:
        self.settings = settings
        self.app = make_app(SERVICE, settings, web_port=settings.ports.rebalancer)
        self.outbox = outbox or FaustOutbox(self.app, settings.bus)
        self.dead_letters = DeadLetters(self.outbox, SERVICE)
        self.supervisor = Supervisor(self.app, self.dead_letters)
        cruise_control = cruise_control or CruiseControlClient(settings.cruise_control, service=SERVICE)
        self.rebalances = Rebalances(settings.rebalancer, admin=admin or make_cluster_admin(settings.cluster_admin),
                                     cruise_control=cruise_control,
                                     outbox=self.outbox, dead_letters=self.dead_letters)
        rebalances = self.rebalances
        # In this order: disk_drift leaves out the disks broker_status has just seen fail.
        self.observers = Observers(rebalances, [
            Concern("scale_up", scale_up.observe),
            Concern("removal_check", removal_check.observe, needs_topics=removal_check.needs_topics),
            Concern("broker_status", broker_status.observe),
            Concern("drained_dirs", drained_dirs.observe),
            Concern("disk_drift", disk_drift.observe)])
        add_health_page(self.app, SERVICE, lambda: {
            "ready": rebalances.ready.is_set(), "knownBrokers": rebalances.known_brokers,
            "rebalances": {n: s.state.value for n, s in rebalances.statuses.items()}}, self.supervisor)
        live = lambda: [s for s in rebalances.statuses.values() if not s.deleted]  # noqa: E731
        gauge("ballast_rebalances", "Rebalances by state", ["state"],
              lambda: {(state,): float(n) for state, n in Counter(s.state.value for s in live()).items()})
        gauge("ballast_rebalance_data_moved_percent", "Share of its data a rebalance has moved: while it executes, "
              "and 100 once Ready", ["rebalance"], lambda: {(s.name,): moved for s in live()
                                                            if (moved := execution.data_moved_percent(s)) is not None})
        self._wire()

    async def start(self) -> None:
        await self.rebalances.rebuild()
        await self.observers.look()  # the first look before anything else: the brokers there now are not new
        self.rebalances.ready.set()

    def _wire(self) -> None:
        app, rebalances, tuning, bus = self.app, self.rebalances, self.settings.rebalancer, self.settings.bus

        @app.task
        async def rebuild() -> None:
            await self.start()

        def when_ready(name: str, handler: Handler) -> Callable[[faust.StreamT], Awaitable[None]]:
            async def agent(stream: faust.StreamT) -> None:
                await rebalances.ready.wait()
                async for events in stream.take_events(100, within=0.02):
                    await self.supervisor.handle(events, handler)
            agent.__name__ = name
            return agent

        self.supervisor.agent(raw_topic(app, TOPICS.rebalance_requests, bus),
                              when_ready("requests", rebalances.on_request_events))
        self.supervisor.agent(raw_topic(app, TOPICS.rebalance_actions, bus),
                              when_ready("actions", rebalances.on_action_events))
        self.supervisor.agent(raw_topic(app, TOPICS.scaling, bus), when_ready("scaling", rebalances.on_scaling_events))
        self.supervisor.agent(raw_topic(app, TOPICS.throttle_status, bus),
                              when_ready("throttles", rebalances.on_throttle_events))
        if tuning.auto.disk_drift is not None:  # the log-dir aggregates matter only to the automatic disk rebalance
            self.supervisor.agent(raw_topic(app, TOPICS.load_aggregates, bus),
                                  when_ready("load", partial(disk_drift.on_load_events, rebalances)))
        self.supervisor.timer(tuning.poll_interval_s)(rebalances.tick_when_ready)
        self.supervisor.timer(tuning.observe_interval_s)(self.observers.look_when_ready)


def create_service(settings: Settings) -> RebalancerService:
    return RebalancerService(settings)
