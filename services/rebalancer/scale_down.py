"""Safe scale-down: whether the brokers a Ready remove-brokers rebalance emptied still host no replicas (condition
BrokersRemovable), checked again at every look at the cluster."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime

from events import (
    Condition,
    RebalanceMode,
    RebalanceStatus,
)
from events.conditions import BROKERS_REMOVABLE
from services.rebalancer.statuses import S, update, without


def removal_check(status: RebalanceStatus, hosted: Mapping[int, Mapping[str, int]],
                  now: datetime) -> RebalanceStatus | None:
    """For a Ready remove-brokers rebalance: are its brokers empty? ``hosted``: broker -> topic -> replicas there.
    Returns the status with the ``BrokersRemovable`` condition updated, or None when it did not change."""
    if status.state != S.READY or status.request.mode != RebalanceMode.REMOVE_BROKERS:
        return None
    brokers = status.request.brokers
    busy = {b: hosted[b] for b in brokers if hosted.get(b)}
    if not busy:
        condition = Condition(type=BROKERS_REMOVABLE, status="True", reason="NoReplicas", last_transition_time=now,
                              message=f"Brokers {_ids(brokers)} host no replicas; safe to remove.")
    else:
        parts = []
        for broker, topics in sorted(busy.items()):
            names = ", ".join(sorted(topics)[:5]) + (", ..." if len(topics) > 5 else "")
            parts.append(f"broker {broker} hosts {sum(topics.values())} replica(s) of {names}")
        condition = Condition(type=BROKERS_REMOVABLE, status="False", reason="ReplicasLanded",
                              last_transition_time=now,
                              message=f"Not safe to remove: {'; '.join(parts)}. Refresh this rebalance to move "
                                      "them off.")
    old = status.condition(BROKERS_REMOVABLE)
    if old is not None and (old.status, old.message) == (condition.status, condition.message):
        return None
    return update(status, now, conditions=[*without(status.conditions, BROKERS_REMOVABLE), condition])


def _ids(brokers: Iterable[int]) -> str:
    return ", ".join(map(str, brokers))


def hosted_replicas(assignments: Mapping[str, Iterable[Iterable[int]]]) -> dict[int, dict[str, int]]:
    """broker -> topic -> number of its replicas there."""
    hosted: dict[int, dict[str, int]] = {}
    for topic, partitions in assignments.items():
        for replicas in partitions:
            for broker in replicas:
                per_topic = hosted.setdefault(broker, {})
                per_topic[topic] = per_topic.get(topic, 0) + 1
    return hosted
