"""Cruise Control's replication throttle of a rebalance, and what Ballast does with what it left (pure, no I/O).

Cruise Control's executor (``Executor.interBrokerMoveReplicas`` with its ``ReplicationThrottleHelper``) sets a
request's ``replication_throttle`` before each batch of moves: ``leader/follower.replication.throttled.rate`` on every
broker a move of the batch touches, and ``partition:broker`` items for each moved partition's current and added
replicas in its topic's ``leader/follower.replication.throttled.replicas``. It takes them off as the moves end:
completed, or stopped (a stop marks the moves in flight dead, rolls them back, then clears their throttles like
those of completed ones). Only a Cruise Control that dies mid-execution (kill -9, a lost host) leaves them, and a
restarted one knows nothing of them.

So Ballast records what each execution may throttle, from the moves its answer lists (``recorded``), and once the
rebalance no longer executes removes what is still there of it (``removal``), only what it can tell is that
execution's: a rate still equal to the request's on a broker its moves touched (a rate of another value is someone
else's; one the throttle controller reports as its own is left to it), and the recorded list items (items others
added stay, and so does ``*``). It is not looked at while another rebalance executes; what is left waits while Kafka
still moves a recorded partition or Cruise Control's executor runs anything (``why_wait``): a throttle in use may be
the same rate.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Set
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from events import Condition, CruiseControlThrottle, RebalanceStatus, ThrottledReplicas
from events.conditions import REPLICATION_THROTTLE_LEFT
from services.adapters.cruise_control.models import OptimizationResult
from services.rebalancer.logic import IDLE_EXECUTOR
from services.rebalancer.statuses import S, stopped_message, update, without

LEADER_RATE, FOLLOWER_RATE = "leader.replication.throttled.rate", "follower.replication.throttled.rate"
RATES = (LEADER_RATE, FOLLOWER_RATE)
LEADER_ITEMS = "leader.replication.throttled.replicas"
FOLLOWER_ITEMS = "follower.replication.throttled.replicas"
LISTS = (LEADER_ITEMS, FOLLOWER_ITEMS)
ALL_REPLICAS = "*"
# The items a status keeps, all topics together (about 5,000 partition moves): the status is one record on the bus
# (events/limits.py). A topic past it is only counted, and its items are left as they are.
MAX_RECORDED_CHARS = 200_000

# The condition's reasons.
WAITING, REMOVED, TAKEN_OFF = "Waiting", "Removed", "TakenOff"


# -- what an execution throttles ------------------------------------------------------------------------------------

def _items(value: str | None) -> set[str]:
    return {i.strip() for i in (value or "").split(",") if i.strip()}


def _item_order(item: str) -> tuple[int, int, str]:
    partition, _, broker = item.partition(":")
    return (int(partition), int(broker), item) if partition.isdigit() and broker.isdigit() else (-1, -1, item)


def _joined(items: Iterable[str]) -> str:
    return ",".join(sorted(items, key=_item_order))


def _build(rates: Iterable[int], brokers: Iterable[int], items: Mapping[str, set[str]],
           unrecorded: int) -> CruiseControlThrottle:
    """Within ``MAX_RECORDED_CHARS``: topics in name order while they fit, the rest counted."""
    kept: list[ThrottledReplicas] = []
    size = 0
    for topic in sorted(items):
        text = _joined(items[topic])
        if size + len(text) > MAX_RECORDED_CHARS:
            unrecorded += 1
            continue
        size += len(text)
        kept.append(ThrottledReplicas(topic=topic, items=text))
    return CruiseControlThrottle(rates=sorted(set(rates)), brokers=sorted(set(brokers)), replicas=kept,
                                 unrecorded_topics=unrecorded)


def throttle_of(proposals: Iterable[Mapping[str, Any]], bytes_per_s: int) -> CruiseControlThrottle | None:
    """What Cruise Control sets for these moves (its answer's ``proposals``): the rate on their old and new replicas'
    brokers, items for their old and added replicas (``getParticipatingBrokers``, ``getThrottledReplicasByTopic``).
    None when they move nothing."""
    brokers: set[int] = set()
    items: dict[str, set[str]] = defaultdict(set)
    for proposal in proposals:
        tp = proposal.get("topicPartition")
        if not isinstance(tp, Mapping) or not isinstance(tp.get("topic"), str):
            continue
        partition = int(tp.get("partition", -1))
        replicas = {int(b) for b in [*proposal.get("oldReplicas", ()), *proposal.get("newReplicas", ())]}
        brokers |= replicas
        items[tp["topic"]] |= {f"{partition}:{b}" for b in replicas}
    if not brokers:
        return None
    return _build([bytes_per_s], brokers, items, 0)


def merged(a: CruiseControlThrottle | None, b: CruiseControlThrottle | None) -> CruiseControlThrottle | None:
    """Both: an execution after one Cruise Control forgot, or a refreshed request's after the earlier one's."""
    if a is None or b is None:
        return a or b
    items: dict[str, set[str]] = defaultdict(set)
    for r in (*a.replicas, *b.replicas):
        items[r.topic] |= _items(r.items)
    return _build({*a.rates, *b.rates}, {*a.brokers, *b.brokers}, items, a.unrecorded_topics + b.unrecorded_topics)


def recorded(status: RebalanceStatus, result: OptimizationResult | None) -> CruiseControlThrottle | None:
    """The status's record with an execution's answer added (unchanged without a throttle or the moves)."""
    rate = status.request.replication_throttle
    if not rate or result is None or not result.proposals:
        return status.cruise_control_throttle
    return merged(status.cruise_control_throttle, throttle_of(result.proposals, rate))


# -- what is left of it, and when it may be removed -------------------------------------------------------------------

def topics(throttle: CruiseControlThrottle) -> list[str]:
    return [r.topic for r in throttle.replicas]


def _partitions(throttle: CruiseControlThrottle) -> set[tuple[str, int]]:
    return {(r.topic, int(i.split(":")[0])) for r in throttle.replicas for i in _items(r.items)
            if i.split(":")[0].isdigit()}


def why_wait(throttle: CruiseControlThrottle, *, executing: Iterable[str] = (),
             moving: Set[tuple[str, int]] = frozenset(), executor_state: str | None = None) -> str | None:
    """Why the throttle may not come off yet (None: it may): ``executing`` the other rebalances that execute,
    ``moving`` the partitions Kafka reassigns, ``executor_state`` Cruise Control's executor (None: not asked)."""
    if others := sorted(executing):
        return f"rebalance {', '.join(others)} executes (its throttle may be the same)"
    if still := moving & _partitions(throttle):
        return f"Kafka still moves {len(still)} of its partitions"
    if executor_state is not None and executor_state not in IDLE_EXECUTOR:
        return f"Cruise Control's executor is {executor_state} (its throttle may be the same)"
    return None


@dataclass(frozen=True)
class Removal:
    """What is still there of a rebalance's throttle, to take off; and the rates on its brokers that are not its."""

    rates: dict[int, tuple[str, ...]] = field(default_factory=dict)  # broker -> rate configs to delete
    items: dict[tuple[str, str], tuple[str, ...]] = field(default_factory=dict)  # (topic, list) -> items to take out
    kept: dict[int, str] = field(default_factory=dict)  # broker -> why its rate stays

    @property
    def empty(self) -> bool:
        return not self.rates and not self.items


def removal(throttle: CruiseControlThrottle, broker_configs: Mapping[int, Mapping[str, str]],
            topic_configs: Mapping[str, Mapping[str, str]], controller_brokers: Set[int] = frozenset()) -> Removal:
    """``broker_configs``: the dynamic configs of the brokers read (one not read, being down, changes nothing);
    ``topic_configs``: those of the topics read (a topic left out no longer exists); ``controller_brokers``: where
    the throttle controller says the inter-broker rate is its own."""
    rates_set = {str(r) for r in throttle.rates}
    rates: dict[int, tuple[str, ...]] = {}
    kept: dict[int, str] = {}
    for broker in throttle.brokers:
        configs = broker_configs.get(broker, {})
        found = {key: configs[key] for key in RATES if configs.get(key) is not None}
        if not found:
            continue
        if broker in controller_brokers:
            kept[broker] = "the throttle controller's"
            continue
        ours = tuple(key for key, value in found.items() if value in rates_set)
        if ours:
            rates[broker] = ours
        if others := {v for k, v in found.items() if k not in ours}:
            kept[broker] = f"{', '.join(sorted(others))} B/s, someone else's"
    items: dict[tuple[str, str], tuple[str, ...]] = {}
    for recorded_items in throttle.replicas:
        configs = topic_configs.get(recorded_items.topic)
        if configs is None:
            continue
        ours = _items(recorded_items.items)
        for key in LISTS:
            present = _items(configs.get(key))
            if ALL_REPLICAS in present:
                continue  # someone throttles every replica of the topic: not this execution's to change
            if gone := present & ours:
                items[(recorded_items.topic, key)] = tuple(sorted(gone, key=_item_order))
    return Removal(rates, items, kept)


# -- what the status says -------------------------------------------------------------------------------------------

def _brokers(brokers: Iterable[int]) -> str:
    listed = sorted(set(brokers))
    return f"broker{'s' if len(listed) > 1 else ''} {', '.join(map(str, listed))}"


def _what(throttle: CruiseControlThrottle) -> str:
    return f"Cruise Control's replication throttle of {' and '.join(map(str, throttle.rates))} B/s"


def _said(status: RebalanceStatus, now: datetime, condition: Condition,
          throttle: CruiseControlThrottle | None) -> RebalanceStatus:
    """The condition in the status (and, Stopped, in its message: what Strimzi's users read first)."""
    fields: dict[str, object] = {"cruise_control_throttle": throttle,
                                 "conditions": [*without(status.conditions, REPLICATION_THROTTLE_LEFT), condition]}
    if status.state == S.STOPPED:
        fields["message"] = f"{stopped_message(status.progress)}. {condition.message}"
    return update(status, now, **fields)


def _left(removal: Removal) -> str:
    parts = []
    if removal.rates:
        parts.append(f"its rate on {_brokers(removal.rates)}")
    if removal.items:
        count = len({(t, i) for (t, _), items in removal.items.items() for i in items})
        topics_left = sorted({t for t, _ in removal.items})
        parts.append(f"{count} throttled replicas of topic{'s' if len(topics_left) > 1 else ''} "
                     f"{', '.join(topics_left)}")
    return "; ".join(parts)


def waiting(status: RebalanceStatus, left: Removal, reason: str, now: datetime) -> RebalanceStatus | None:
    """``left`` is still there and may not come off yet (None when the status says so already)."""
    throttle = status.cruise_control_throttle
    assert throttle is not None
    message = f"{_what(throttle)} was left ({_left(left)}); removed once nothing may use it: {reason}"
    current = status.condition(REPLICATION_THROTTLE_LEFT)
    if current is not None and current.message == message:
        return None
    return _said(status, now, Condition(type=REPLICATION_THROTTLE_LEFT, status="True", reason=WAITING,
                                        last_transition_time=now, message=message), throttle)


def cleaned(status: RebalanceStatus, done: Removal, down: Iterable[int], now: datetime) -> RebalanceStatus:
    """After ``done`` was taken off: the record is kept only for the brokers that are down (their rate is removed
    once they are back), and the status says what was left and what became of it."""
    throttle = status.cruise_control_throttle
    assert throttle is not None
    down = sorted(set(down) & set(throttle.brokers))
    notes = []
    if done.kept:
        notes.append("kept: " + "; ".join(f"broker {b}: {why}" for b, why in sorted(done.kept.items())))
    if throttle.unrecorded_topics:
        notes.append(f"the items of {throttle.unrecorded_topics} more topics were too many to record and are left "
                     f"as they are")
    if down:
        notes.append(f"{_brokers(down)} down: removed once back")
    note = f" ({'; '.join(notes)})" if notes else ""
    if not done.empty:
        message = f"{_what(throttle)} was left ({_left(done)}); Ballast removed it{note}"
        reason = WAITING if down else REMOVED
    elif down:
        message = f"{_what(throttle)}: none left where it could be read{note}"
        reason = WAITING
    else:
        message = f"{_what(throttle)} was taken off by Cruise Control{note}"
        reason = TAKEN_OFF
    remaining = throttle.model_copy(update={"brokers": down, "replicas": [], "unrecorded_topics": 0}) if down else None
    if reason == TAKEN_OFF and status.state != S.STOPPED and status.condition(REPLICATION_THROTTLE_LEFT) is None:
        # Nothing was left: said where a stop is (whose throttle operators ask about), not after every execution.
        return update(status, now, cruise_control_throttle=None)
    condition = Condition(type=REPLICATION_THROTTLE_LEFT, status="True" if down else "False", reason=reason,
                          last_transition_time=now, message=message)
    return _said(status, now, condition, remaining)


def not_supported(status: RebalanceStatus, now: datetime) -> RebalanceStatus:
    """The cluster keeps no throttles (the simulator's own): nothing was left."""
    return update(status, now, cruise_control_throttle=None)
