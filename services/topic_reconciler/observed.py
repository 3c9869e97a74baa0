"""The registry of observed brokers: every broker the cluster has had, with its rack, until an operator forgets it.

A real Kafka only describes the brokers that are up, so a broker that is restarting simply vanishes from the
cluster's answer; placement needs to know it is coming back (seed 002). The registry lives in a compacted topic
(``ObservedBroker`` per broker id, ``BrokerForgotten`` to drop one); this class is its in-memory form.

A forgotten broker is observed again only once two looks in a row, both begun after the forget, show it: the answer to
a look asked before (or a broker whose metadata still lists a broker just unregistered) brought one back at once, and
every later topic was then created with a placeholder waiting for it (a fresh clone's run: "filled when broker(s) 5
return", for a broker decommissioned minutes before).
"""

from __future__ import annotations

from collections.abc import Iterable

from events import BrokerForgotten, ObservedBroker
from services.adapters.admin import BrokerInfo
from services.placement.model import Broker, BrokerState


# Looks in a row, begun after its forget, that must show a forgotten broker before it is observed again.
BACK_AFTER_LOOKS = 2


class ObservedBrokers:
    def __init__(self) -> None:
        self.brokers: dict[int, ObservedBroker] = {}
        self._looks = 0  # looks begun
        # Forgotten broker ids: the last look begun before the forget, and the looks since that showed it, in a row.
        self._forgotten: dict[int, tuple[int, int]] = {}

    def apply(self, event: ObservedBroker | BrokerForgotten) -> None:
        if isinstance(event, BrokerForgotten):
            self.brokers.pop(event.id, None)
            self._forgotten[event.id] = (self._looks, 0)
        else:
            self.brokers[event.id] = event
            self._forgotten.pop(event.id, None)

    def look_begins(self) -> int:
        """A look at the cluster's brokers begins (before it is asked): its number, for ``observe``."""
        self._looks += 1
        return self._looks

    def observe(self, seen: Iterable[BrokerInfo], look: int | None = None) -> list[ObservedBroker]:
        """Registry entries for brokers seen for the first time or with another rack (to publish). ``look``: the
        number ``look_begins`` gave before the brokers were asked (None: a look begun now)."""
        look = self.look_begins() if look is None else look
        seen = list(seen)
        shown = {broker.id for broker in seen}
        for gone, (before, streak) in list(self._forgotten.items()):
            if look > before:
                self._forgotten[gone] = (before, streak + 1 if gone in shown else 0)
        news = []
        for broker in seen:
            if broker.id in self._forgotten and self._forgotten[broker.id][1] < BACK_AFTER_LOOKS:
                continue
            known = self.brokers.get(broker.id)
            if known is None or known.rack != broker.rack:
                entry = ObservedBroker(id=broker.id, rack=broker.rack,
                                       **({"first_seen": known.first_seen} if known else {}))
                self.apply(entry)
                news.append(entry)
        return news

    def cluster_brokers(self, described: Iterable[BrokerInfo]) -> tuple[Broker, ...]:
        """What placement sees: the brokers the cluster describes (alive or not), and every observed broker it
        does not describe, as offline."""
        brokers = {b.id: Broker(b.id, b.rack, BrokerState.ALIVE if b.alive else BrokerState.OFFLINE)
                   for b in described}
        for entry in self.brokers.values():
            brokers.setdefault(entry.id, Broker(entry.id, entry.rack, BrokerState.OFFLINE))
        return tuple(sorted(brokers.values(), key=lambda b: b.id))
