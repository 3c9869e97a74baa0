"""The cluster-admin adapter the settings ask for (the port knows none of them)."""

from __future__ import annotations

from services.common.admin.port import ClusterAdmin
from services.common.settings import ClusterAdminSettings


def make_cluster_admin(settings: ClusterAdminSettings) -> ClusterAdmin:
    if settings.kind == "kafka":
        from services.common.admin.kafka import KafkaClusterAdmin

        return KafkaClusterAdmin({"bootstrap_servers": settings.bootstrap_servers, **settings.extra}, settings.timeout_s)
    from services.common.admin.simulator import SimulatorClusterAdmin

    return SimulatorClusterAdmin(settings.simulator_url, timeout_s=settings.timeout_s)
