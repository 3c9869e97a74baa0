"""What happens after the topic reconciler places replicas: new replicas go to their broker's least-used log
directory (where the admin port can choose one), and the placement becomes a ReplicasPlaced event, which the Spark
job counts per broker, log directory and domain."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime

from events import PlacedReplica, PlacementReason, ReplicasPlaced
from services.common.admin import AdminError, ClusterAdmin, LogDirsUnsupported
from services.common.logging import get_logger
from services.placement.log_dirs import choose_log_dirs
from services.topic_reconciler.recent_load import RecentLoad
from events import placeholders as placeholder

log = get_logger(__name__)


class PlacementLedger:
    def __init__(self, admin: ClusterAdmin, recent_load: RecentLoad, rack_of: Callable[[int], str | None], *,
                 choose_dirs: bool = True, now: Callable[[], datetime] = lambda: datetime.now(UTC)) -> None:
        self._admin = admin
        self._recent_load = recent_load
        self._rack_of = rack_of
        self._choose_dirs = choose_dirs  # off once the adapter has said it cannot
        self._now = now

    async def placed(self, topic: str, reason: PlacementReason, new_replicas: Mapping[int, Sequence[int]], *,
                     load_aware: bool) -> ReplicasPlaced:
        """``new_replicas``: partition -> the brokers that just got a replica of it (placeholders left out)."""
        replicas = {p: placeholder.real(brokers) for p, brokers in new_replicas.items()}
        dirs = await self._log_dirs(topic, replicas) if load_aware else {}
        return ReplicasPlaced(topic=topic, reason=reason, placed_at=self._now(), placed=[
            PlacedReplica(partition=p, broker=b, rack=self._rack_of(b), log_dir=dirs.get((p, b)))
            for p in sorted(replicas) for b in replicas[p]])

    async def _log_dirs(self, topic: str, replicas: Mapping[int, Sequence[int]]) -> dict[tuple[int, int], str]:
        if not self._choose_dirs:
            return {}
        now = self._now()
        chosen = choose_log_dirs(replicas, self._recent_load.log_dirs(now))
        if not chosen:
            return {}
        try:
            await self._admin.alter_replica_log_dirs(topic, chosen)
        except LogDirsUnsupported as exc:
            log.info("log directories are left to the brokers", reason=str(exc))
            self._choose_dirs = False
            return {}
        except AdminError as exc:
            # The topic is there and serves; only the directory is the broker's choice instead of ours.
            log.warning("could not choose log directories; the brokers chose", topic=topic, error=str(exc))
            return {}
        for (_partition, broker), log_dir in chosen.items():
            self._recent_load.placed(broker, log_dir, now)
        log.info("log directories chosen", replicas=len(chosen), directories=len(set(chosen.values())))
        return chosen
