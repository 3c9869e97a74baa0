"""What the dashboard shows, folded from the status topics: topics with their conditions and their history (created,
partitions, each replication-factor change, drift, paused, refused), rebalances, brokers by rack with their latest
load and their log directories' cordons and failures, and the throttle controller's latest status with its recent
rate changes. Plain data, JSON-ready."""

from __future__ import annotations

from bisect import bisect_right
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel

from events import (BrokerForgotten, BrokerLoadSample, BrokerStatus, ObservedBroker, RebalanceStatus,
                    ThrottleRateChanged, ThrottleStatus, TopicStatus)
from events.models import Event
from events.topics import reserved_topic
from services.common.throttle_wording import (back_off_text, change_row, change_text as rate_change_text,
                                              lagging_text, moves_text, rate_text, traffic_text)
from services.common.wording import (change_text, history_steps, log_dirs_text, progress_text, rebalance_notes,
                                     status_notes, summary_text)

HISTORY = 12  # steps of a topic's history kept for the page (services.common.wording.history_steps)
THROTTLE_CHANGES = 50  # the latest throttle rate changes kept for the page


def _doc(item: BaseModel) -> dict[str, Any]:
    return item.model_dump(mode="json", by_alias=True, exclude_none=True)


def _rates(item: BaseModel, **fields: int | None) -> dict[str, Any]:
    """The item's document with each named rate also as a person reads it (``rateText``: ``3.2 MB/s``), as the CLI
    shows it (services.cli.commands.throttle)."""
    return {**_doc(item), **{f"{name}Text": rate_text(value) for name, value in fields.items()}}


def throttle_view(status: ThrottleStatus) -> dict[str, Any]:
    """The throttle status for the page: the event, brokers and directories in order with their rates in words, and
    the texts `ballast throttle status` prints."""
    brokers = [_rates(b, rate=b.bytes_per_s, capacity=b.capacity_bytes_per_s, live=b.live_bytes_per_s,
                      headroom=b.headroom_bytes_per_s)
               for b in sorted(status.brokers, key=lambda b: (b.broker, b.kind))]
    log_dirs = [_rates(d, capacity=d.capacity_bytes_per_s, live=d.live_bytes_per_s, headroom=d.headroom_bytes_per_s)
                for d in sorted(status.log_dirs, key=lambda d: (d.broker, d.log_dir))]
    return {**_doc(status), "brokers": brokers, "logDirs": log_dirs, "movesText": moves_text(status),
            "trafficText": traffic_text(status), "backOffText": back_off_text(status),
            "laggingText": lagging_text(status)}


def throttle_change_view(change: ThrottleRateChanged) -> dict[str, Any]:
    return {**_doc(change), "atText": change_row(change)[0], "changeText": rate_change_text(change)}


@dataclass
class DashboardState:
    topics: dict[str, dict[str, Any]] = field(default_factory=dict)
    rebalances: dict[str, dict[str, Any]] = field(default_factory=dict)
    brokers: dict[int, dict[str, Any]] = field(default_factory=dict)
    unmanaged: list[str] = field(default_factory=list)
    throttle: dict[str, Any] | None = None
    throttle_changes: list[dict[str, Any]] = field(default_factory=list)  # the latest, oldest first
    _change_times: list[datetime] = field(default_factory=list)  # of throttle_changes
    _history: dict[str, deque[str]] = field(default_factory=dict)
    _log_dirs: dict[int, dict[str, Any]] = field(default_factory=dict)  # each broker's latest BrokerStatus, shown
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
            broker.update(self._log_dirs.get(event.id, {}))
            return {"kind": "broker", "data": broker}
        if isinstance(event, BrokerStatus):
            # Kept apart and shown with a broker the registry knows: the topics are read in no order between them,
            # and a forgotten broker's last status (compacted, never deleted) must not bring it back.
            self._log_dirs[event.broker] = {"cordoned": [d.path for d in event.log_dirs if d.cordoned],
                                            "offlineLogDirs": [d.path for d in event.log_dirs if not d.online],
                                            "logDirsText": log_dirs_text(event)}
            if event.broker not in self.brokers:
                return None
            self.brokers[event.broker].update(self._log_dirs[event.broker])
            return {"kind": "broker", "data": self.brokers[event.broker]}
        if isinstance(event, BrokerForgotten):
            self.brokers.pop(event.id, None)
            self._log_dirs.pop(event.id, None)
            return {"kind": "broker-gone", "id": event.id}
        if isinstance(event, BrokerLoadSample):
            broker = self.brokers.setdefault(event.broker, {"id": event.broker})
            broker.setdefault("rack", event.rack)
            broker["load"] = {"bytesInKbS": event.bytes_in_kb_s, "bytesOutKbS": event.bytes_out_kb_s,
                              "diskMb": event.disk_mb, "replicas": event.replicas, "leaders": event.leaders,
                              "sampledAt": event.sampled_at.isoformat()}
            return {"kind": "broker", "data": broker}
        if isinstance(event, ThrottleStatus):
            self.throttle = throttle_view(event)
            return {"kind": "throttle", "data": self.throttle}
        if isinstance(event, ThrottleRateChanged):
            return self._throttle_change(event)
        return None

    def _throttle_change(self, change: ThrottleRateChanged) -> dict[str, Any]:
        # Changes are keyed by broker and kind, so a topic of several partitions is read in no set order: kept by time.
        when = change.at if change.at.tzinfo is not None else change.at.replace(tzinfo=UTC)  # a hand-made event's
        at = bisect_right(self._change_times, when)
        self._change_times.insert(at, when)
        self.throttle_changes.insert(at, throttle_change_view(change))
        del self._change_times[:-THROTTLE_CHANGES], self.throttle_changes[:-THROTTLE_CHANGES]
        return {"kind": "throttle-changes", "data": list(self.throttle_changes)}

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
                "unmanaged": self.unmanaged, "throttle": self.throttle, "throttleChanges": self.throttle_changes}

