"""What the placers see of the managed cluster, kept between placements.

Reading every topic's assignment for each creation would make a burst of N creations cost N full listings; so the
assignments are read once, kept for ``max_age_s``, and every placement Ballast makes is added to them as it happens.
Brokers are cheap to read and matter more (a broker that stopped a moment ago must not get new replicas), so they
are read for every placement, or once for a batch of them (a look's new topics, placed one after the other), and so
are their log directories' cordons (KIP-1066): as Kafka's own placer does, the placers never see a broker whose every
directory is cordoned, and a cordoned directory takes no new replica (``cordoned``)."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from services.adapters.admin import AdminError, BrokerInfo, ClusterAdmin
from services.common.cordons import read_cordons
from services.common.logging import get_logger
from services.domain.cordons import Cordons, usable
from services.placement.model import Broker, ClusterView
from services.topic_reconciler.observed import ObservedBrokers

log = get_logger(__name__)


class ClusterViewCache:
    def __init__(self, admin: ClusterAdmin, max_age_s: float, observed: ObservedBrokers | None = None,
                 load: Callable[[], dict[int, float]] | None = None) -> None:
        self._admin = admin
        self._observed = observed or ObservedBrokers()
        self._load = load or dict
        self._max_age_s = max_age_s
        self._brokers: tuple[Broker, ...] = ()
        # Each broker's cordoned log directories (read with the brokers).
        self._cordons = Cordons()
        # Shared with the views handed out (the placers only read it): recording a placement is O(1).
        self._assignments: dict[str, list[list[int]]] = {}
        self._read_at: float | None = None

    async def view(self, *, load_aware: bool = True, brokers_read: bool = False) -> ClusterView:
        """Raises AdminError when the cluster cannot be read. ``load_aware``: with the brokers' recent load;
        ``brokers_read``: with the brokers as last read (for the placements of a batch after its first, which read
        them)."""
        now = time.monotonic()
        if not brokers_read or not self._brokers:
            described = await self._admin.brokers()
            self.set_brokers(described)
            await self.read_cordons([b.id for b in described if b.alive])
        if self._read_at is None or now - self._read_at > self._max_age_s:
            self._assignments = await self._admin.assignments()
            self._read_at = now
        brokers = tuple(usable(self._brokers, self._cordons))
        return ClusterView(brokers, self._assignments, self._load() if load_aware else {})

    async def read_cordons(self, alive: list[int]) -> None:
        try:
            self._cordons = await read_cordons(self._admin, alive)
        except AdminError as exc:
            log.info("cordons unknown; the last read kept", reason=str(exc))

    def cordoned(self, broker: int) -> frozenset[str]:
        """The broker's cordoned log directories, as of the last look."""
        return self._cordons.cordoned.get(broker, frozenset())

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
        self._assignments[topic] = [list(r) for r in partitions]

    def add_partitions(self, topic: str, partitions: Sequence[Sequence[int]]) -> None:
        self._assignments.setdefault(topic, []).extend(list(r) for r in partitions)

    def forget(self, topic: str) -> None:
        self._assignments.pop(topic, None)

    def invalidate(self) -> None:
        """Read every assignment again before the next placement."""
        self._read_at = None
