"""The registry of observed brokers: every broker the cluster has had, with its rack, until an operator forgets it.

A real Kafka only describes the brokers that are up, so a broker that is restarting simply vanishes from the
cluster's answer; placement needs to know it is coming back (seed 002). The registry lives in a compacted topic
(``ObservedBroker`` per broker id, ``BrokerForgotten`` to drop one); this class is its in-memory form.
"""

from __future__ import annotations

from collections.abc import Iterable

from events import BrokerForgotten, ObservedBroker
from services.adapters.admin import BrokerInfo
from services.placement.model import Broker, BrokerState


class ObservedBrokers:
    def __init__(self) -> None:
        self.brokers: dict[int, ObservedBroker] = {}

    def apply(self, event: ObservedBroker | BrokerForgotten) -> None:
        if isinstance(event, BrokerForgotten):
            self.brokers.pop(event.id, None)
        else:
            self.brokers[event.id] = event

    def observe(self, seen: Iterable[BrokerInfo]) -> list[ObservedBroker]:
        """Registry entries for brokers seen for the first time or with another rack (to publish)."""
        news = []
        for broker in seen:
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
