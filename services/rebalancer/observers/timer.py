"""The brokers timer: the cluster read once per look, then each concern's handler on it, each on its own."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from services.adapters.admin import AdminError
from services.common.logging import get_logger
from services.rebalancer.observers.look import ClusterLook
from services.rebalancer.observers.shared import Shared

log = get_logger(__name__)


def _never(shared: Shared) -> bool:
    return False


@dataclass(frozen=True)
class Concern:
    name: str
    observe: Callable[[Shared, ClusterLook], Awaitable[None]]
    # Whether this look must list the topics for it (only a removal check waiting does).
    needs_topics: Callable[[Shared], bool] = _never


class Observers:
    def __init__(self, shared: Shared, concerns: Sequence[Concern]) -> None:
        self.shared = shared
        self.concerns = list(concerns)

    async def look_when_ready(self) -> None:
        if self.shared.ready.is_set():
            await self.look()

    async def look(self) -> None:
        shared = self.shared
        try:
            look = await ClusterLook.read(shared.admin, with_topics=any(c.needs_topics(shared) for c in self.concerns))
        except AdminError as exc:
            log.warning("cannot read the cluster's brokers", error=str(exc))
            return
        for concern in self.concerns:
            try:
                await concern.observe(shared, look)
            except asyncio.CancelledError:
                raise
            except AdminError as exc:
                log.warning("observer could not do its work on the cluster; again at the next look",
                            concern=concern.name, error=str(exc))
            except Exception:  # noqa: BLE001 - a bug in one concern must not stop the others
                log.exception("observer failed; the others go on, and it runs again at the next look",
                              concern=concern.name)
