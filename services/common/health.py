"""A health endpoint per service, on faust's own web server: ``GET /health`` -> 200 when ready and every agent is
running, 503 before it is ready or once an agent is down (``agentsDown`` says which and why); ``GET /metrics``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import faust
from faust.web import Request, Response, View

from services.common.agents import Supervisor
from services.common.metrics import exposition


def add_health_page(app: faust.App, service: str, details: Callable[[], dict[str, Any]],
                    supervisor: Supervisor | None = None) -> None:
    """``/health``, and ``/metrics`` beside it (Prometheus' text format)."""
    @app.page("/metrics")
    class Metrics(View):
        async def get(self, request: Request) -> Response:
            body, content_type = exposition()
            return self.bytes(body, headers={"Content-Type": content_type})  # aiohttp takes no charset in content_type

    @app.page("/health")
    class Health(View):
        async def get(self, request: Request) -> Response:
            # This process runs the service (it holds the lease; standby instances answer from services.common.lease).
            info = {"service": service, "role": "active", **details()}
            if supervisor is not None and supervisor.down:
                info["agentsDown"] = dict(supervisor.down)
                info["ready"] = False
            status = 200 if info.get("ready", True) else 503
            return self.json(info, status=status)
