"""The cluster's cordons read through the admin port: the one read every part that honours them makes."""

from __future__ import annotations

from collections.abc import Sequence

from services.adapters.admin import ClusterAdmin, Unsupported
from services.adapters.admin.port import answering_log_dirs
from services.domain.cordons import Cordons


async def read_cordons(admin: ClusterAdmin, brokers: Sequence[int] | None = None) -> Cordons:
    """The cordons of ``brokers`` (default: the alive ones), as their directories say now; a cluster that cannot
    describe its directories cordons none. Raises AdminError when the cluster cannot be read."""
    if brokers is None:
        brokers = [b.id for b in await admin.brokers() if b.alive]
    try:
        return Cordons.of(await answering_log_dirs(admin, brokers, replicas=False))
    except Unsupported:
        return Cordons()
