"""``ballast dashboard``: a small web page of what Ballast is doing, live. Wiring only: a thread follows the status
topics (``feed``), ``DashboardState`` folds them, and each open page gets the snapshot, then every update, as
server-sent events."""

from __future__ import annotations

import asyncio
import json
import threading
from importlib import resources
from typing import Any

from aiohttp import web

from services.adapters.admin import AdminError, make_cluster_admin
from services.common.logging import get_logger
from services.common.settings import Settings
from services.dashboard.feed import follow
from services.dashboard.state import DashboardState

log = get_logger(__name__)
UNMANAGED_EVERY_S = 10.0


class Dashboard:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.state = DashboardState()
        self._pages: set[asyncio.Queue[dict[str, Any]]] = set()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop = threading.Event()
        self.feed_error: str | None = None
        self._cluster: asyncio.Task[None] | None = None

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_get("/", self._index)
        app.router.add_get("/api/state", self._state)
        app.router.add_get("/events", self._events)
        app.on_startup.append(self._start_feed)
        app.on_cleanup.append(self._stop_feed)
        return app

    async def _start_feed(self, _: web.Application) -> None:
        self._loop = asyncio.get_running_loop()
        threading.Thread(target=follow, args=(self.settings.bus, self._on_event, self._on_feed_error, self._stop),
                         name="dashboard-feed", daemon=True).start()
        self._cluster = asyncio.create_task(self._look_at_the_cluster())

    async def _stop_feed(self, _: web.Application) -> None:
        self._stop.set()
        if self._cluster is not None:
            self._cluster.cancel()

    async def _look_at_the_cluster(self) -> None:
        """The cluster's topic names every ``UNMANAGED_EVERY_S`` (its metadata alone), for the unmanaged list. A
        cluster that does not answer leaves the list as it was: the page is about the bus."""
        admin = make_cluster_admin(self.settings.cluster_admin)
        try:
            while True:
                try:
                    names = (await admin.assignments()).keys()
                except AdminError as exc:
                    log.info("cannot list the cluster's topics", error=str(exc))
                else:
                    if (update := self.state.cluster_topics(names)) is not None:
                        self._broadcast(update)
                await asyncio.sleep(UNMANAGED_EVERY_S)
        finally:
            await admin.aclose()

    def _on_event(self, event: Any) -> None:  # on the feed's thread
        assert self._loop is not None
        self._loop.call_soon_threadsafe(self._publish, event)

    def _on_feed_error(self, message: str) -> None:  # on the feed's thread
        assert self._loop is not None
        self._loop.call_soon_threadsafe(self._broadcast, {"kind": "error", "message": message})

    def _publish(self, event: Any) -> None:
        update = self.state.apply(event)
        if update is not None:
            self._broadcast(update)

    def _broadcast(self, update: dict[str, Any]) -> None:
        if update.get("kind") == "error":
            self.feed_error = update["message"]
        for queue in self._pages:
            queue.put_nowait(update)

    async def _index(self, _: web.Request) -> web.Response:
        page = resources.files("services.dashboard").joinpath("static/index.html").read_text()
        return web.Response(text=page, content_type="text/html")

    async def _state(self, _: web.Request) -> web.Response:
        return web.json_response({**self.state.snapshot(), "error": self.feed_error})

    async def _events(self, request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"})
        await response.prepare(request)
        queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self._pages.add(queue)
        try:
            await _send(response, {**self.state.snapshot(), "error": self.feed_error})
            while True:
                try:
                    update = await asyncio.wait_for(queue.get(), timeout=15)
                except TimeoutError:
                    await response.write(b": keep-alive\n\n")  # proxies close silent streams
                    continue
                await _send(response, update)
        except (ConnectionResetError, asyncio.CancelledError):
            pass
        finally:
            self._pages.discard(queue)
        return response


async def _send(response: web.StreamResponse, update: dict[str, Any]) -> None:
    await response.write(f"data: {json.dumps(update)}\n\n".encode())


def serve(settings: Settings, *, port: int, ready: Any = None) -> None:
    """Serve on ``settings.web_host`` (127.0.0.1 unless set: a container's is its own address) and ``port`` until
    interrupted; ``ready(url)`` once it listens."""
    async def main() -> None:
        runner = web.AppRunner(Dashboard(settings).app())
        await runner.setup()
        site = web.TCPSite(runner, settings.web_host, port)
        await site.start()
        bound = runner.addresses[0][1] if runner.addresses else port
        if ready is not None:
            ready(f"http://{settings.web_host}:{bound}/")
        try:
            await asyncio.Event().wait()
        finally:
            await runner.cleanup()

    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        pass
