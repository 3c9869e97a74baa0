"""Wiring of the replicas-change service: one agent for commands, two timers (submit, poll), a start-up rebuild.
The work is ``changes``'s; decisions are ``logic``'s."""

from __future__ import annotations

from collections import Counter

import faust

from events import TOPICS
from services.adapters.admin import ClusterAdmin, make_cluster_admin
from services.common.agents import Supervisor
from services.common.bus import BATCH_WAIT_S, DeadLetters, make_app, raw_topic
from services.adapters.cruise_control import CruiseControlClient
from services.common.health import add_health_page
from services.common.metrics import gauge
from services.common.outbox import FaustOutbox, Outbox
from services.common.settings import Settings
from services.replicas_change.changes import ReplicasChanges

SERVICE = "replicas-change"


class ReplicasChangeService:
    def __init__(self, settings: Settings, *, admin: ClusterAdmin | None = None,
                 cruise_control: CruiseControlClient | None = None, outbox: Outbox | None = None) -> None:
        self.settings = settings
        self.app = make_app(SERVICE, settings, web_port=settings.ports.replicas_change)
        self.outbox = outbox or FaustOutbox(self.app, settings.bus)
        self.dead_letters = DeadLetters(self.outbox, SERVICE)
        self.supervisor = Supervisor(self.app, self.dead_letters)
        self.changes = ReplicasChanges(settings.replicas_change,
                                       admin=admin or make_cluster_admin(settings.cluster_admin),
                                       cruise_control=cruise_control or CruiseControlClient(
                                           settings.cruise_control, service=SERVICE),
                                       outbox=self.outbox, dead_letters=self.dead_letters)
        changes = self.changes
        add_health_page(self.app, SERVICE, lambda: {"ready": changes.ready.is_set(), "changes": len(changes.records),
                                                    "inFlight": len(changes.in_flight)}, self.supervisor)
        gauge("ballast_replicas_changes", "Replication-factor changes the service holds, by state", ["state"],
              lambda: {(state,): float(n) for state, n in Counter(r.state.value for r in changes.records.values())
                       .items()})
        self._wire()

    def _wire(self) -> None:
        app, changes, tuning = self.app, self.changes, self.settings.replicas_change

        @app.task
        async def rebuild() -> None:
            await changes.rebuild()

        async def commands(stream: faust.StreamT) -> None:
            await changes.ready.wait()
            async for events in stream.take_events(1000, within=BATCH_WAIT_S):
                await self.supervisor.handle(events, changes.on_command_events)

        self.supervisor.agent(raw_topic(app, TOPICS.replicas_commands, self.settings.bus), commands)
        self.supervisor.timer(min(tuning.batch_quiet_s, tuning.batch_window_s) / 2)(changes.submit_tick)
        self.supervisor.timer(min(tuning.poll_interval_s, tuning.busy_poll_interval_s))(changes.poll_tick)


def create_service(settings: Settings) -> ReplicasChangeService:
    return ReplicasChangeService(settings)
