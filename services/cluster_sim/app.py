"""Wiring of the cluster simulator: the model, the simulated Cruise Control, and its two HTTP listeners."""

from __future__ import annotations

import asyncio
import signal
import ssl
from dataclasses import replace

from aiohttp import web

from services.common.garbage_collection import FrozenGrowth
from services.cluster_sim.backend import Backend, MemoryBackend
from services.cluster_sim.cruise_control import SimCruiseControl
from services.cluster_sim.faults import FaultPlan
from services.cluster_sim.http_admin import build_admin_app
from services.cluster_sim.http_cruise_control import build_cruise_control_app
from services.cluster_sim.model import Broker, Cluster
from services.cluster_sim.tuning import SimTuning
from services.cluster_sim.warm_up import WarmUp
from services.common.logging import get_logger
from services.common.settings import ClusterAdminSettings, SimulatorSettings

log = get_logger(__name__)


def parse_brokers(items: list[str]) -> list[Broker]:
    brokers = []
    for item in items:
        broker_id, _, rack = item.partition(":")
        brokers.append(Broker(id=int(broker_id), rack=rack or None))
    return brokers


class Simulator:
    def __init__(self, settings: SimulatorSettings, backend: Backend | None = None) -> None:
        """``backend``: the cluster under Cruise Control; by default the in-memory one built from ``settings``."""
        self.settings = settings
        self.backend = backend or MemoryBackend(
            Cluster(parse_brokers(settings.brokers), default_partition_mb=settings.partition_size_mb),
            time_scale=settings.time_scale)
        self.cluster = self.backend.cluster
        self.cruise_control = SimCruiseControl(self.backend, SimTuning(
            time_scale=settings.time_scale, replica_bandwidth_mb_s=settings.replica_bandwidth_mb_s,
            min_execution_s=settings.min_execution_s, proposal_s=settings.proposal_s, warmup_s=settings.warmup_s,
            restart_warmup_s=settings.restart_warmup_s, max_active_user_tasks=settings.max_active_user_tasks,
            task_scanner_period_s=settings.task_scanner_period_s, session_expiry_s=settings.session_expiry_s))
        self.faults = FaultPlan()
        # The cluster's topics, once grown by 2,000, leave the garbage collector's generations: at 100,000 topics
        # full collections of them took 8-11 s (load 45), every answer held meanwhile.
        self.frozen = FrozenGrowth()
        self._initial_tuning = replace(self.cruise_control.tuning)
        self.reset_faults()
        self._admin_runner: web.AppRunner | None = None
        self._cc_runner: web.AppRunner | None = None
        self._restarts: set[asyncio.Task[None]] = set()

    def reset_faults(self) -> None:
        """Back to the configured behaviour: no injected faults, initial tuning and credentials, brokers alive."""
        self.faults.clear()
        s = self.settings
        self.faults.credentials = (
            (s.auth_username, s.auth_password.get_secret_value()) if s.auth_username and s.auth_password else None)
        self.cruise_control.tuning = replace(self._initial_tuning)
        self.cruise_control.warm_up = WarmUp()  # warm, as configured
        if self.backend.real:
            return  # a real cluster's brokers are started and stopped as Kafka nodes, not here
        for broker in self.cluster.brokers.values():
            if not broker.alive:
                self.cluster.set_alive(broker.id, True)

    @property
    def cruise_control_up(self) -> bool:
        return self._cc_runner is not None

    async def start(self) -> None:
        await self.backend.start()
        self._admin_runner = web.AppRunner(build_admin_app(self), access_log=None)
        await self._admin_runner.setup()
        admin_host = self.settings.admin_host or self.settings.host
        await web.TCPSite(self._admin_runner, admin_host, self.settings.admin_port).start()
        await self.start_cruise_control()
        log.info("simulator started", admin_port=self.settings.admin_port,
                 cruise_control_port=self.settings.cruise_control_port, brokers=len(self.cluster.brokers),
                 backend="kafka" if self.backend.real else "memory")

    async def start_cruise_control(self) -> None:
        if self._cc_runner is not None:
            return
        s = self.settings
        app = build_cruise_control_app(self.cruise_control, self.faults)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        context = None
        if s.tls_certfile and s.tls_keyfile:
            context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
            context.load_cert_chain(str(s.tls_certfile), str(s.tls_keyfile))
        await web.TCPSite(runner, s.host, s.cruise_control_port, ssl_context=context, reuse_address=True).start()
        self._cc_runner = runner

    async def stop_cruise_control(self) -> None:
        if self._cc_runner is not None:
            runner, self._cc_runner = self._cc_runner, None
            await runner.cleanup()

    async def restart_cruise_control(self, down_s: float, warmup_s: float | None) -> None:
        """Stop the listener, forget every task, come back after ``down_s`` (and warm up for ``warmup_s``)."""
        await self.stop_cruise_control()
        self.cruise_control.restart(warmup_s)

        async def come_back() -> None:
            await asyncio.sleep(down_s)
            # Warm-up counts from when Cruise Control is back, as metric sampling restarts then.
            self.cruise_control.started()
            await self.start_cruise_control()

        task = asyncio.get_running_loop().create_task(come_back())
        self._restarts.add(task)
        task.add_done_callback(self._restarts.discard)

    async def stop(self) -> None:
        for restart in list(self._restarts):
            restart.cancel()
        await self.stop_cruise_control()
        if self._admin_runner is not None:
            await self._admin_runner.cleanup()
        await self.backend.close()


def make_backend(settings: SimulatorSettings, admin: ClusterAdminSettings | None) -> Backend | None:
    """The real-Kafka backend when the settings ask for it (on the cluster the cluster-admin settings name)."""
    if settings.backend != "kafka":
        return None
    if admin is None or admin.kind != "kafka":
        raise ValueError("BALLAST_SIMULATOR__BACKEND=kafka needs BALLAST_CLUSTER_ADMIN__KIND=kafka and its "
                         "BALLAST_CLUSTER_ADMIN__BOOTSTRAP_SERVERS: the cluster Cruise Control executes on")
    from services.cluster_sim.kafka_backend import KafkaBackend
    from services.adapters.admin.factory import make_cluster_admin

    return KafkaBackend(make_cluster_admin(admin), sync_interval_s=settings.sync_interval_s)


async def serve(settings: SimulatorSettings, admin: ClusterAdminSettings | None = None) -> None:
    sim = Simulator(settings, make_backend(settings, admin))
    await sim.start()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    await sim.stop()
