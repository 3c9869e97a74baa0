"""The simulator's HTTP side besides Cruise Control's API: the admin API (``admin_api``) and the fault API
(``fault_api``) on one port."""

from __future__ import annotations

from aiohttp import web

from services.cluster_sim import admin_api, fault_api
from services.cluster_sim.admin_context import SIMULATOR, SimulatorControls


def build_admin_app(sim: SimulatorControls) -> web.Application:
    # Kafka takes requests of up to socket.request.max.bytes (100 MiB by default): a topic of tens of thousands of
    # partitions, created with its replicas' directories, is megabytes.
    app = web.Application(middlewares=[admin_api.errors], client_max_size=100 * 1024 * 1024)
    app[SIMULATOR] = sim
    app.add_routes(admin_api.routes)
    app.add_routes(fault_api.routes)
    return app
