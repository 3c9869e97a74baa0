"""What the observers share with the step timer (``rebalances.Rebalances`` is the one that has it)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Protocol

from events import BrokerStatus, RebalanceStatus
from services.adapters.admin import ClusterAdmin
from services.common.bus import DeadLetters
from services.common.outbox import Outbox
from services.common.recent_load import RecentLoad
from services.common.settings import RebalancerSettings


class Shared(Protocol):
    tuning: RebalancerSettings
    admin: ClusterAdmin
    outbox: Outbox
    dead_letters: DeadLetters
    ready: asyncio.Event
    statuses: dict[str, RebalanceStatus]
    broker_statuses: dict[int, BrokerStatus]
    known_brokers: list[int] | None
    recent_load: RecentLoad

    def lock(self, name: str) -> asyncio.Lock:
        """The rebalance's lock: nothing else changes its status while it is held."""
        ...

    async def publish(self, status: RebalanceStatus | None) -> None:
        """Record and send a rebalance's new status (None: nothing changed); the caller holds its lock."""
        ...

    async def change(self, name: str, change: Callable[[RebalanceStatus], RebalanceStatus | None]) -> None:
        """Publish ``change`` of the rebalance's current status, under its lock."""
        ...
