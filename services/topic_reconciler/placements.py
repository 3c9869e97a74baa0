"""What happens after the topic reconciler places replicas: new replicas go to their broker's least-used log
directory (where the admin port can choose one), and the placement becomes a ReplicasPlaced event, which the Spark
job counts per broker, log directory and domain.

The figures come from the Spark job's log-directory aggregates where they name the broker's real directories, and
from the cluster's own description of its log directories (DescribeLogDirs: bytes and replicas per directory)
where they do not, say a real cluster whose load comes from a Cruise Control that knows other directories. Offline
directories (a failed disk), cordoned ones (KIP-1066) and those a remove-disks rebalance keeps empty (the brokers'
status events) are never chosen."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta

from events import BrokerStatus, PlacedReplica, PlacementReason, ReplicasPlaced
from services.adapters.admin import AdminError, ClusterAdmin
from services.common.logging import get_logger
from services.placement.log_dirs import LogDirUsage, choose_log_dirs
from services.common.recent_load import RecentLoad
from services.topic_reconciler.freshness import Freshness
from events import placeholders as placeholder

log = get_logger(__name__)


class PlacementLedger:
    def __init__(self, admin: ClusterAdmin, recent_load: RecentLoad, rack_of: Callable[[int], str | None], *,
                 cordoned: Callable[[int], frozenset[str]] = lambda broker: frozenset(),
                 offline: Callable[[int], frozenset[str]] = lambda broker: frozenset(), choose_dirs: bool = True,
                 now: Callable[[], datetime] = lambda: datetime.now(UTC),
                 dirs_max_age: timedelta = timedelta(seconds=30), dirs_stale_max: timedelta | None = None) -> None:
        """``cordoned``, ``offline``: a broker's cordoned (KIP-1066) and failed directories as last looked at, never
        chosen for a new replica. ``dirs_max_age``, ``dirs_stale_max``: how old the cluster's figures of its
        directories may get (``freshness``; no older than the age when the second is None)."""
        self._admin = admin
        self._recent_load = recent_load
        self._rack_of = rack_of
        self._cordoned = cordoned
        self._offline = offline
        self._choose_dirs = choose_dirs  # off: each broker puts a new replica in the directory it likes
        self._now = now
        # The cluster's own figures of its directories: listing every replica of every directory grows with the
        # cluster, and they change slowly; Ballast's own placements are added to them as it makes them.
        self._cluster_dirs: dict[int, dict[str, LogDirUsage | None]] = {}  # None: offline
        # The replicas placed while the figures are being read (None: no read under way), counted in the new ones.
        self._placed_while_reading: list[tuple[int, str]] | None = None
        age = dirs_max_age.total_seconds()
        self.freshness = Freshness(age, dirs_stale_max.total_seconds() if dirs_stale_max is not None else age)
        # Directories a remove-disks rebalance keeps empty, and failed ones, from the brokers' status events.
        self._drained: dict[int, set[str]] = {}
        self._failed: dict[int, set[str]] = {}

    def take_broker_status(self, status: BrokerStatus) -> None:
        self._drained[status.broker] = {d.path for d in status.log_dirs if d.drained_by}
        self._failed[status.broker] = {d.path for d in status.log_dirs if not d.online}

    async def placed(self, topic: str, reason: PlacementReason, new_replicas: Mapping[int, Sequence[int]], *,
                     load_aware: bool) -> ReplicasPlaced:
        """Replicas placed on brokers that host their partitions already (partitions added, placeholders filled):
        each put in the directory chosen for it (AlterReplicaLogDirs, a move the broker makes at once). ``new_replicas``:
        partition -> the brokers that just got a replica of it (placeholders left out)."""
        dirs = await self.choose(new_replicas, load_aware=load_aware)
        if dirs:
            try:
                await self._admin.alter_replica_log_dirs(topic, dirs)
            except AdminError as exc:
                # The topic is there and serves; only the directory is the broker's choice instead of ours.
                log.warning("could not choose log directories; the brokers chose", topic=topic, error=str(exc))
                dirs = {}
        return self.record(topic, reason, new_replicas, dirs)

    async def choose(self, new_replicas: Mapping[int, Sequence[int]], *, load_aware: bool,
                     placed_before: Mapping[tuple[int, str], int] | None = None) -> dict[tuple[int, int], str]:
        """The directory for each new replica ((partition, broker) -> path) where Ballast chooses one; nothing is
        changed yet (a new topic's go with its creation, ``ClusterAdmin.create_topics``). ``placed_before``: the
        replicas chosen for a batch's earlier topics, not recorded yet ((broker, path) -> count)."""
        if not load_aware or not self._choose_dirs:
            return {}
        replicas = {p: placeholder.real(brokers) for p, brokers in new_replicas.items()}
        brokers = sorted({b for brokers in replicas.values() for b in brokers})
        usage = await self._usage(brokers, self._now())
        return choose_log_dirs(replicas, usage, explicit={b for b in brokers if self._cordoned(b)},
                               placed_before=placed_before)

    def record(self, topic: str, reason: PlacementReason, new_replicas: Mapping[int, Sequence[int]],
               dirs: Mapping[tuple[int, int], str]) -> ReplicasPlaced:
        """Replicas placed (in ``dirs`` where chosen): counted in the directories' usage until the aggregates show
        them, and the event the Spark job counts."""
        now = self._now()
        for (_partition, broker), log_dir in dirs.items():
            self._recent_load.placed(broker, log_dir, now)
            if self._placed_while_reading is not None:
                self._placed_while_reading.append((broker, log_dir))
            if (figures := self._cluster_dirs.get(broker, {}).get(log_dir)) is not None:
                self._cluster_dirs[broker][log_dir] = replace(figures, placed_since=figures.placed_since + 1)
        if dirs:
            log.info("log directories chosen", topic=topic, replicas=len(dirs), directories=len(set(dirs.values())))
        replicas = {p: placeholder.real(brokers) for p, brokers in new_replicas.items()}
        return ReplicasPlaced(topic=topic, reason=reason, placed_at=now, placed=[
            PlacedReplica(partition=p, broker=b, rack=self._rack_of(b), log_dir=dirs.get((p, b)))
            for p in sorted(replicas) for b in replicas[p]])

    async def _usage(self, brokers: list[int], now: datetime) -> dict[int, dict[str, LogDirUsage]]:
        aggregates = self._recent_load.log_dirs(now)
        cluster = await self._cluster_log_dirs(now)
        usage: dict[int, dict[str, LogDirUsage]] = {}
        for broker in brokers:
            real = cluster.get(broker)
            known = aggregates.get(broker, {})
            online = {d for d, u in (real or {}).items() if u is not None}
            if real is None:  # the cluster cannot say: the aggregates as they are
                usage[broker] = dict(known)
            # The aggregates decide where they cover every online directory of the broker; a window that lacks one
            # (its sample came late) would otherwise hide it, and one that names other paths knows another cluster.
            elif known and online <= set(known) <= set(real):
                usage[broker] = {d: u for d, u in known.items() if d in online}
            else:
                usage[broker] = {d: u for d, u in real.items() if u is not None}
            failed, drained = self._failed.get(broker, set()), self._drained.get(broker, set())
            closed = failed | self._cordoned(broker) | self._offline(broker)
            usage[broker] = {d: replace(u, draining=d in drained) for d, u in usage[broker].items() if d not in closed}
        return usage

    async def _cluster_log_dirs(self, now: datetime) -> dict[int, dict[str, LogDirUsage | None]]:
        if self.freshness.must_read(now.timestamp()) and not await self._read_cluster_dirs(now):
            return {}  # asked again at the next placement
        return self._cluster_dirs

    async def refresh_due(self) -> None:
        """Read the cluster's figures again if an old read was used since (``freshness``); a failure keeps the old."""
        if self.freshness.due:
            await self._read_cluster_dirs(self._now())

    async def _read_cluster_dirs(self, now: datetime) -> bool:
        """False when the cluster could not be read now (what was read before is kept)."""
        return await self.freshness.read_once(lambda: self._read_dirs(now))

    async def _read_dirs(self, now: datetime) -> bool:
        self._placed_while_reading = []
        try:
            described = await self._admin.describe_log_dirs()
        except AdminError as exc:
            log.info("the cluster's log directories are unknown; using the aggregates", reason=str(exc))
            if exc.temporary:  # a refusal (no DescribeLogDirs) is kept as long as a read
                return False
            described = []
        finally:
            placed, self._placed_while_reading = self._placed_while_reading, None
        dirs: dict[int, dict[str, LogDirUsage | None]] = {}
        for d in described:
            dirs.setdefault(d.broker, {})[d.path] = (
                LogDirUsage(disk_mb=d.size_bytes / 1e6, replicas=sum(1 for r in d.replicas if not r.is_future))
                if d.online else None)
        # Placed while the read was under way: counted, whether the brokers had made them by then or not (a
        # directory counted one replica fuller for a while takes the next one a little later).
        for broker, log_dir in placed:
            if (figures := dirs.get(broker, {}).get(log_dir)) is not None:
                dirs[broker][log_dir] = replace(figures, placed_since=figures.placed_since + 1)
        self._cluster_dirs = dirs
        self.freshness.was_read(now.timestamp())
        return True
