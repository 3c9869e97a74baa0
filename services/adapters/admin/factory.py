"""The cluster-admin adapter the settings ask for (the port knows none of them)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TypeVar

from services.adapters.admin.port import ClusterAdmin
from services.common.settings import ClusterAdminSettings

T = TypeVar("T")


def make_cluster_admin(settings: ClusterAdminSettings) -> ClusterAdmin:
    if settings.kind == "kafka":
        from services.adapters.admin.kafka import KafkaClusterAdmin

        return KafkaClusterAdmin(settings.client_config(), settings.timeout_s)
    from services.adapters.admin.simulator import SimulatorClusterAdmin

    return SimulatorClusterAdmin(settings.simulator_url, timeout_s=settings.timeout_s)


def ask_cluster(settings: ClusterAdminSettings, question: Callable[[ClusterAdmin], Awaitable[T]]) -> T:
    """For a command: one question to the cluster, on an adapter of its own that is closed after (AdminError when
    the cluster cannot answer)."""
    async def ask() -> T:
        admin = make_cluster_admin(settings)
        try:
            return await question(admin)
        finally:
            await admin.aclose()

    return asyncio.run(ask())
