"""What the placers see of the managed cluster, kept between placements.

Reading every topic's assignment for each creation would make a burst of N creations cost N full listings; so the
assignments are read once, kept (``freshness``: read again off the placements' path once old), and every placement
Ballast makes is added to them as it happens. Brokers are cheap to read and matter more (a broker that stopped a
moment ago must not get new replicas), so they are read for every placement, or once for a batch of them (a look's
new topics, placed one after the other), and so are their log directories' cordons (KIP-1066) and failures: as
Kafka's own placer does, the placers never see a broker whose every directory is cordoned, and a cordoned or failed
directory takes no new replica (``cordoned``, ``offline``)."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from services.adapters.admin import AdminError, BrokerInfo, ClusterAdmin
from services.common.cordons import read_directories
from services.common.logging import get_logger
from services.domain.cordons import Cordons, usable
from services.placement.model import Broker, ClusterView, ReplicaTally
from services.topic_reconciler.freshness import Freshness
from services.topic_reconciler.observed import ObservedBrokers

log = get_logger(__name__)


class ClusterViewCache:
    def __init__(self, admin: ClusterAdmin, max_age_s: float, observed: ObservedBrokers | None = None,
                 load: Callable[[], dict[int, float]] | None = None, *, stale_max_s: float | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        """``stale_max_s``: how old the assignments may be and still be used while read again (None: not at
        all older than ``max_age_s``)."""
        self._admin = admin
        self._observed = observed or ObservedBrokers()
        self._load = load or dict
        self._clock = clock
        self._brokers: tuple[Broker, ...] = ()
        # Each broker's cordoned and offline log directories (read with the brokers).
        self._cordons = Cordons()
        self._offline: dict[int, frozenset[str]] = {}
        # Shared with the views handed out (the placers only read it): recording a placement is O(1).
        self._assignments: dict[str, list[list[int]]] = {}
        # Their replicas and leaders per broker, kept with them: the multi-level placer's counts of the whole cluster
        # for each placement of a batch.
        self._tally = ReplicaTally()
        # The topics placed or forgotten while every assignment is being read (None: no read under way).
        self._changed_while_reading: set[str] | None = None
        self.freshness = Freshness(max_age_s, stale_max_s if stale_max_s is not None else max_age_s)

    async def view(self, *, load_aware: bool = True, brokers_read: bool = False) -> ClusterView:
        """Raises AdminError when the cluster cannot be read. ``load_aware``: with the brokers' recent load;
        ``brokers_read``: with the brokers as last read (for the placements of a batch after its first, which read
        them)."""
        if not brokers_read or not self._brokers:
            described = await self._admin.brokers()
            self.set_brokers(described)
            await self.read_directories([b.id for b in described if b.alive])
        if self.freshness.must_read(self._clock()):
            await self.read_assignments()
        brokers = tuple(usable(self._brokers, self._cordons))
        return ClusterView(brokers, self._assignments, self._load() if load_aware else {}, self._tally)

    async def read_assignments(self) -> None:
        """Every topic's assignment as the cluster says it now, or as a read under way says it. Raises AdminError
        when it cannot be read."""
        await self.freshness.read_once(self._read_assignments)

    async def _read_assignments(self) -> bool:
        began = self._clock()
        self._changed_while_reading = set()
        try:
            read = await self._admin.assignments()
        finally:
            changed, self._changed_while_reading = self._changed_while_reading, None
        # Placements made while the read was under way: newer than what it may show.
        for topic in changed:
            if topic in self._assignments:
                read[topic] = self._assignments[topic]
            else:
                read.pop(topic, None)
        self._assignments, self._tally = read, ReplicaTally.of(read)
        self.freshness.was_read(began)
        return True

    async def refresh_due(self) -> None:
        """Read the assignments again if an old read was used since (``freshness``); a failure keeps the old."""
        if self.freshness.due:
            try:
                await self.read_assignments()
            except AdminError as exc:
                log.info("cannot read the assignments again; the last read kept", reason=str(exc))

    async def read_directories(self, alive: list[int]) -> None:
        """The alive brokers' directories: which are cordoned and which have failed."""
        try:
            dirs = await read_directories(self._admin, alive)
        except AdminError as exc:
            log.info("cordons and failed directories unknown; the last read kept", reason=str(exc))
            return
        self._cordons = Cordons.of(dirs)
        offline: dict[int, set[str]] = {}
        for d in dirs:
            if not d.online:
                offline.setdefault(d.broker, set()).add(d.path)
        self._offline = {b: frozenset(paths) for b, paths in offline.items()}

    def cordoned(self, broker: int) -> frozenset[str]:
        """The broker's cordoned log directories, as of the last look."""
        return self._cordons.cordoned.get(broker, frozenset())

    def offline(self, broker: int) -> frozenset[str]:
        """The broker's failed (offline) log directories, as of the last look."""
        return self._offline.get(broker, frozenset())

    @property
    def fully_cordoned(self) -> frozenset[int]:
        """The brokers that take no new replica: every directory of theirs is cordoned."""
        return self._cordons.fully_cordoned

    def set_brokers(self, described: list[BrokerInfo]) -> None:
        """The brokers as the cluster describes them now, with every observed broker it does not describe."""
        self._brokers = self._observed.cluster_brokers(described)

    def rack_of(self, broker: int) -> str | None:
        """The broker's rack as of the last look (None for a broker not seen, or without a rack)."""
        return next((b.rack for b in self._brokers if b.id == broker), None)

    def set_topic(self, topic: str, partitions: Sequence[Sequence[int]]) -> None:
        """The topic's partitions as they are now (read from the cluster, or just placed by Ballast)."""
        self._changed(topic)
        self._tally.remove(self._assignments.get(topic, ()))
        self._assignments[topic] = [list(r) for r in partitions]
        self._tally.add(self._assignments[topic])

    def add_partitions(self, topic: str, partitions: Sequence[Sequence[int]]) -> None:
        self._changed(topic)
        added = [list(r) for r in partitions]
        self._assignments.setdefault(topic, []).extend(added)
        self._tally.add(added)

    def forget(self, topic: str) -> None:
        self._changed(topic)
        self._tally.remove(self._assignments.pop(topic, ()))

    def _changed(self, topic: str) -> None:
        if self._changed_while_reading is not None:
            self._changed_while_reading.add(topic)
