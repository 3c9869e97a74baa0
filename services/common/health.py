"""A health endpoint per service, on faust's own web server: ``GET /health`` -> 200 when ready, 503 before."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import faust
from faust.web import Request, Response, View


def add_health_page(app: faust.App, service: str, details: Callable[[], dict[str, Any]]) -> None:
    @app.page("/health")
    class Health(View):
        async def get(self, request: Request) -> Response:
            info = {"service": service, **details()}
            status = 200 if info.get("ready", True) else 503
            return self.json(info, status=status)
