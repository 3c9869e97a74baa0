"""What the dashboard shows, folded from the status topics: topics with their conditions and their history (created,
partitions, each replication-factor change, drift, paused, refused), rebalances, and brokers by rack with their latest
load. Plain data, JSON-ready."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from events import BrokerForgotten, BrokerLoadSample, ObservedBroker, RebalanceStatus, TopicStatus
from events.models import Event
from events.topics import reserved_topic
from services.common.wording import (change_text, history_steps, progress_text, rebalance_notes, status_notes,
                                     summary_text)

HISTORY = 12  # steps of a topic's history kept for the page (services.common.wording.history_steps)


def _doc(event: Event) -> dict[str, Any]:
    return event.model_dump(mode="json", by_alias=True, exclude_none=True)


@dataclass
class DashboardState:
    topics: dict[str, dict[str, Any]] = field(default_factory=dict)
    rebalances: dict[str, dict[str, Any]] = field(default_factory=dict)
    brokers: dict[int, dict[str, Any]] = field(default_factory=dict)
    unmanaged: list[str] = field(default_factory=list)
    _history: dict[str, deque[str]] = field(default_factory=dict)
    _last: dict[str, TopicStatus] = field(default_factory=dict)

    def apply(self, event: Event) -> dict[str, Any] | None:
        """Fold one event in; returns the update for the page (None when it changes nothing shown)."""
        if isinstance(event, TopicStatus):
            return self._topic(event)
        if isinstance(event, RebalanceStatus):
            if event.deleted:
                self.rebalances.pop(event.name, None)
                return {"kind": "rebalance-gone", "name": event.name}
            view = {**_doc(event), "progressText": progress_text(event), "proposalText": summary_text(event),
                    "notes": rebalance_notes(event)}
            self.rebalances[event.name] = view
            return {"kind": "rebalance", "data": view}
        if isinstance(event, ObservedBroker):
            broker = self.brokers.setdefault(event.id, {"id": event.id})
            broker["rack"] = event.rack
            return {"kind": "broker", "data": broker}
        if isinstance(event, BrokerForgotten):
            self.brokers.pop(event.id, None)
            return {"kind": "broker-gone", "id": event.id}
        if isinstance(event, BrokerLoadSample):
            broker = self.brokers.setdefault(event.broker, {"id": event.broker})
            broker.setdefault("rack", event.rack)
            broker["load"] = {"bytesInKbS": event.bytes_in_kb_s, "bytesOutKbS": event.bytes_out_kb_s,
                              "diskMb": event.disk_mb, "replicas": event.replicas, "leaders": event.leaders,
                              "sampledAt": event.sampled_at.isoformat()}
            return {"kind": "broker", "data": broker}
        return None

    def _topic(self, status: TopicStatus) -> dict[str, Any]:
        if status.deleted:
            self.topics.pop(status.topic, None)
            self._history.pop(status.topic, None)
            self._last.pop(status.topic, None)
            return {"kind": "topic-gone", "name": status.topic}
        if status.topic in self.unmanaged:  # a spec names it now (the page drops it from its list likewise)
            self.unmanaged.remove(status.topic)
        history = self._history.setdefault(status.topic, deque(maxlen=HISTORY))
        history.extend(history_steps(self._last.get(status.topic), status))
        self._last[status.topic] = status
        view = {**_doc(status), "changeText": change_text(status), "notes": status_notes(status),
                "history": list(history)}
        self.topics[status.topic] = view
        return {"kind": "topic", "data": view}

    def cluster_topics(self, names: Iterable[str]) -> dict[str, Any] | None:
        """The cluster's topics now: those no spec names (none has a status, and Ballast may manage them) are the
        unmanaged ones. The update for the page, or None when the list is the same."""
        unmanaged = sorted(n for n in names if n not in self.topics and reserved_topic(n) is None)
        if unmanaged == self.unmanaged:
            return None
        self.unmanaged = unmanaged
        return {"kind": "unmanaged", "names": unmanaged}

    def snapshot(self) -> dict[str, Any]:
        return {"kind": "snapshot", "topics": sorted(self.topics.values(), key=lambda t: t["topic"]),
                "rebalances": sorted(self.rebalances.values(), key=lambda r: r["name"]),
                "brokers": sorted(self.brokers.values(), key=lambda b: (b.get("rack") or "", b["id"])),
                "unmanaged": self.unmanaged}

