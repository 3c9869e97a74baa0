"""Agents that lose nothing and say when they are down.

faust acknowledges a batch's records as the agent takes them; an exception out of the agent's body restarts it and
the records after the failing one are gone (one oversized record once took ten valid specs with it). So each
service's agents run their handlers through ``Supervisor.handle``: a failing batch is retried record by record, a
record that fails alone goes to the dead-letter topic with the error (nothing Ballast accepted is dropped
silently; the record can be replayed once the cause is fixed), and only a failure to write even that (the bus
itself is gone) takes the agent down, which turns the service's health to 503 for its supervisor to restart it.
"""

from __future__ import annotations

import asyncio
import traceback
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import faust

from events.limits import bounded
from services.common.bus import DeadLetters
from services.common.logging import get_logger

log = get_logger(__name__)

Handler = Callable[[Sequence[faust.EventT]], Awaitable[None]]


class Supervisor:
    def __init__(self, app: faust.App, dead_letters: DeadLetters) -> None:
        self.app = app
        self.dead_letters = dead_letters
        # Agent name -> why it stopped. Any entry makes the service unhealthy.
        self.down: dict[str, str] = {}

    @property
    def healthy(self) -> bool:
        return not self.down

    def agent(self, topic: faust.TopicT, fun: Callable[[faust.StreamT], Awaitable[None]]) -> Any:
        """``app.agent(topic)`` whose escape (never on input: only when the bus itself fails) marks it down."""
        name = fun.__name__

        async def supervised(stream: faust.StreamT) -> None:
            try:
                await fun(stream)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                self.down[name] = bounded(f"{type(exc).__name__}: {exc}", 500)
                log.error("agent down; the service reports unhealthy until restarted", agent=name,
                          error=self.down[name])
                raise

        supervised.__name__ = supervised.__qualname__ = name
        supervised.__module__ = fun.__module__
        return self.app.agent(topic, name=f"{fun.__module__}.{name}")(supervised)

    def timer(self, interval_s: float) -> Callable[[Callable[[], Awaitable[None]]], Any]:
        """``app.timer``, except that a failing tick is logged and the next tick runs (an escaping exception would
        crash the whole app)."""
        def decorate(fun: Callable[[], Awaitable[None]]) -> Any:
            name = fun.__name__

            async def guarded() -> None:
                try:
                    await fun()
                except asyncio.CancelledError:
                    raise
                except Exception as exc:
                    log.error("timer failed; it runs again at its next tick", timer=name,
                              error=bounded(f"{type(exc).__name__}: {exc}", 500),
                              traceback=traceback.format_exc(limit=8))

            guarded.__name__ = guarded.__qualname__ = name
            guarded.__module__ = fun.__module__
            return self.app.timer(interval_s, name=f"{fun.__module__}.{name}")(guarded)
        return decorate

    async def handle(self, events: Sequence[faust.EventT], handler: Handler) -> None:
        """Run ``handler`` on the batch; on an error, on each record alone, dead-lettering those that fail alone."""
        try:
            await self._isolate(events, handler)
        finally:
            await self.dead_letters.flush()

    async def _isolate(self, events: Sequence[faust.EventT], handler: Handler) -> None:
        try:
            await handler(events)
            return
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            if len(events) > 1:
                log.error("batch failed; handling its records one at a time", records=len(events),
                          error=f"{type(exc).__name__}: {exc}", traceback=traceback.format_exc(limit=8))
                for event in events:
                    await self._isolate([event], handler)
                return
            log.error("record failed; dead-lettering it", error=f"{type(exc).__name__}: {exc}",
                      traceback=traceback.format_exc(limit=8))
            await self.dead_letters.reject(events[0], f"Ballast failed on this record ({type(exc).__name__}: {exc}); "
                                                      "it was not applied: replay it once the cause is fixed")
