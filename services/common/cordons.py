"""The cluster's cordons read through the admin port: the one read every part that honours them makes."""

from __future__ import annotations

from collections.abc import Sequence

from services.adapters.admin import ClusterAdmin, LogDirInfo, Unsupported
from services.adapters.admin.port import answering_log_dirs
from services.domain.cordons import Cordons


async def read_cordons(admin: ClusterAdmin, brokers: Sequence[int] | None = None) -> Cordons:
    """The cordons of ``brokers`` (default: the alive ones), as their directories say now; a cluster that cannot
    describe its directories cordons none. Raises AdminError when the cluster cannot be read."""
    if brokers is None:
        brokers = [b.id for b in await admin.brokers() if b.alive]
    return Cordons.of(await read_directories(admin, brokers))


async def read_directories(admin: ClusterAdmin, brokers: Sequence[int]) -> list[LogDirInfo]:
    """The directories of those of ``brokers`` that answer, without their replicas (a small answer: whether each is
    online and cordoned); none for a cluster that cannot describe them. Raises AdminError when it cannot be read."""
    try:
        return await answering_log_dirs(admin, brokers, replicas=False)
    except Unsupported:
        return []
