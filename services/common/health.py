"""A health endpoint per service, on faust's own web server: ``GET /health`` -> 200 when ready and every agent is
running, 503 before it is ready or once an agent is down (``agentsDown`` says which and why); ``GET /metrics``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import faust
from faust.web import Request, Response, View

from services.common.agents import Supervisor
from services.common.logging import get_logger
from services.common.metrics import exposition, gauge

log = get_logger(__name__)


def add_health_page(app: faust.App, service: str, details: Callable[[], dict[str, Any]],
                    supervisor: Supervisor | None = None) -> None:
    """``/health``, and ``/metrics`` beside it (Prometheus' text format), with the service's backlog."""
    gauge("ballast_consumer_backlog", "Records on the partitions this instance reads that it has not read yet",
          ["topic"], lambda: {(topic,): float(n) for topic, n in backlog(app).items()})

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


def backlog(app: faust.App) -> dict[str, int]:
    """Per topic, the records between what this instance has read and each assigned partition's end (as last
    fetched). Read from faust's consumer at scrape time; empty before it has partitions."""
    behind: dict[str, int] = {}
    try:
        consumer = app.consumer
        for tp in consumer.assignment():
            end = consumer.highwater(tp)
            if end is None:
                continue  # not fetched yet
            # faust keeps the offset of the last record read, or the committed position (the next one) after a seek
            read = consumer._read_offset.get(tp)  # noqa: SLF001 - faust exposes no public position
            behind[tp.topic] = behind.get(tp.topic, 0) + max(0, end - (read + 1 if read is not None else 0))
    except Exception as exc:  # noqa: BLE001 - a scrape must answer even while the consumer (re)starts
        log.debug("backlog not read", error=str(exc))
    return behind
