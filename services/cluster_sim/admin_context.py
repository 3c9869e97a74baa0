"""What the simulator's admin API (``admin_api``) and fault API (``fault_api``) read and drive of the simulator
(``app.Simulator``, which serves them), the key their aiohttp app holds it under, and the error answer both give. A
module of its own, below the simulator and the two APIs."""

from __future__ import annotations

from typing import Protocol

from aiohttp import web

from services.cluster_sim.backend import Backend
from services.cluster_sim.cruise_control import SimCruiseControl
from services.cluster_sim.faults import FaultPlan
from services.cluster_sim.model import Cluster


class SimulatorControls(Protocol):
    backend: Backend
    cluster: Cluster
    cruise_control: SimCruiseControl
    faults: FaultPlan

    @property
    def cruise_control_up(self) -> bool: ...

    def reset_faults(self) -> None: ...

    async def start_cruise_control(self) -> None: ...

    async def stop_cruise_control(self) -> None: ...

    async def restart_cruise_control(self, down_s: float, warmup_s: float | None) -> None: ...


SIMULATOR: web.AppKey[SimulatorControls] = web.AppKey("simulator")


def error_response(status: int, message: str) -> web.Response:
    return web.json_response({"error": message}, status=status)
