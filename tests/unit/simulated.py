"""A simulated cluster for the tests of the services' shells: the simulator serving Cruise Control's REST API and the
cluster-admin API on free local ports, its admin client, and Cruise Control clients made for it, all stopped and
closed at the end, also when a test fails."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from services.adapters.admin.simulator import SimulatorClusterAdmin
from services.cluster_sim.app import Simulator
from services.adapters.cruise_control import CruiseControlClient
from services.common.settings import CruiseControlSettings, SimulatorSettings
from services.local.broker import free_port

# Two data centres of two racks each, a broker in each rack.
FOUR_BROKERS = ["1:/dc1/r1", "2:/dc1/r2", "3:/dc2/r1", "4:/dc2/r2"]
THREE_BROKERS = FOUR_BROKERS[:3]
# Executions that end within a tenth of a second, and a task scanner that finds them soon after.
QUICK_EXECUTIONS: dict[str, Any] = {"min_execution_s": 0.1, "proposal_s": 0.01, "task_scanner_period_s": 0.05}

A = TypeVar("A")


@dataclass
class SimulatedCluster(Generic[A]):
    simulator: Simulator
    admin: A
    _clients: list[CruiseControlClient] = field(default_factory=list)

    def cruise_control(self, **settings: Any) -> CruiseControlClient:
        """A Cruise Control client of the simulator's, with its task scanner period unless told; closed at the end."""
        client = CruiseControlClient(CruiseControlSettings(**{
            "port": self.simulator.settings.cruise_control_port,
            "task_scanner_period_s": self.simulator.settings.task_scanner_period_s, **settings}))
        self._clients.append(client)
        return client


@asynccontextmanager
async def simulated_cluster(*, brokers: list[str] | None = None,
                            admin: Callable[[str], A] = SimulatorClusterAdmin,  # type: ignore[assignment]
                            **settings: Any) -> AsyncIterator[SimulatedCluster[A]]:
    """The simulator (``settings``: its SimulatorSettings; its default brokers unless ``brokers``), with an admin
    client made by ``admin`` from the admin API's URL."""
    simulator = Simulator(SimulatorSettings(cruise_control_port=free_port(), admin_port=free_port(),
                                            **({"brokers": brokers} if brokers is not None else {}), **settings))
    await simulator.start()
    cluster = SimulatedCluster(simulator, admin(f"http://127.0.0.1:{simulator.settings.admin_port}"))
    try:
        yield cluster
    finally:
        for client in cluster._clients:
            await client.aclose()
        await cluster.admin.aclose()  # type: ignore[attr-defined]
        await simulator.stop()
