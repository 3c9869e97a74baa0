"""Which throttles are the controller's, and the changes that bring the cluster to the rates it wants without
touching anyone else's. Its ledger (``ThrottleLedger`` on the bus) names every value it set and every item it added;
a value in force that the ledger does not name is someone else's (a rebalance's fixed ``replicationThrottle``,
Kafka's tools, an operator) and is left as it is, as are the items that were in a list before the controller added
its own. Pure."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from events import ThrottleLedger
from events.throttle import OwnedBrokerConfig, OwnedListItems
from services.adapters.admin import INTRA_BROKER_THROTTLE

LEADER_RATE = "leader.replication.throttled.rate"
FOLLOWER_RATE = "follower.replication.throttled.rate"
INTER_BROKER_RATES = (LEADER_RATE, FOLLOWER_RATE)
RATE_CONFIGS = (LEADER_RATE, FOLLOWER_RATE, INTRA_BROKER_THROTTLE)
LEADER_ITEMS = "leader.replication.throttled.replicas"
FOLLOWER_ITEMS = "follower.replication.throttled.replicas"
ALL_REPLICAS = "*"  # a list that throttles every replica of the topic

ItemKey = tuple[str, str]  # (topic, config)


def items_of(value: str | None) -> frozenset[str]:
    return frozenset(i.strip() for i in (value or "").split(",") if i.strip())


@dataclass(frozen=True)
class Seen:
    """What the cluster has now: the rate configs set on each broker that was read (a broker that could not be read
    is absent, and nothing of it changes), and the configs set on each topic that was read (a topic absent from it
    no longer exists)."""

    broker_configs: Mapping[int, Mapping[str, str]] = field(default_factory=dict)
    topic_configs: Mapping[str, Mapping[str, str]] = field(default_factory=dict)


def owner(ledger: ThrottleLedger, seen: Seen, broker: int, config: str) -> str:
    """``ballast``, ``other`` or ``none``: whose value of ``config`` is in force on ``broker``."""
    value = seen.broker_configs.get(broker, {}).get(config)
    if value is None:
        return "none"
    ours = next((o for o in ledger.broker_configs if o.broker == broker and o.config == config), None)
    return "ballast" if ours is not None and value in ours.values else "other"


@dataclass(frozen=True)
class Plan:
    broker_changes: dict[int, dict[str, str | None]]  # None: delete
    add_items: dict[ItemKey, tuple[str, ...]]
    remove_items: dict[ItemKey, tuple[str, ...]]
    before: ThrottleLedger  # to write before any change is applied: what is owned now and what will be
    after: ThrottleLedger  # once every change is applied


def _unique(values: list[str | None]) -> list[str]:
    return list(dict.fromkeys(v for v in values if v is not None))


def same(a: ThrottleLedger, b: ThrottleLedger) -> bool:
    return a.broker_configs == b.broker_configs and a.topic_items == b.topic_items


def plan(wanted_rates: Mapping[int, Mapping[str, str]], wanted_items: Mapping[ItemKey, frozenset[str]], seen: Seen,
         ledger: ThrottleLedger) -> Plan:
    """The changes from what is in force to ``wanted_rates`` (broker -> config -> value; any rate config not named is
    to be gone, if it is the controller's) and ``wanted_items`` (the throttled-replicas items to be present)."""
    changes: dict[int, dict[str, str | None]] = {}
    # The same before and after a change: a value stays named until a later look reads it replaced or gone.
    owned_configs: list[OwnedBrokerConfig] = []
    owned_values = {(o.broker, o.config): o.values for o in ledger.broker_configs}
    brokers = sorted(set(wanted_rates) | {b for b, _ in owned_values})
    for broker in brokers:
        if broker not in seen.broker_configs:
            # Not read (down): what the ledger holds of it stays, for a later look.
            owned_configs += [o for o in ledger.broker_configs if o.broker == broker]
            continue
        in_force = seen.broker_configs[broker]
        for config in RATE_CONFIGS:
            value = in_force.get(config)
            values = owned_values.get((broker, config), [])
            if value is not None and value not in values:
                continue  # someone else's: neither changed nor remembered
            want = wanted_rates.get(broker, {}).get(config)
            # A broker answers with what it has applied, which may be a moment behind a change just made: a value
            # the controller set stays named until a look reads it replaced (or gone), lest a late answer show
            # the controller's own throttle as someone else's, never to be removed.
            if want is not None:
                if want != value:
                    changes.setdefault(broker, {})[config] = want
                kept = _unique([value, want])
            elif value is not None:
                changes.setdefault(broker, {})[config] = None
                kept = [value]
            else:
                kept = []  # read gone: no longer the controller's to remember
            if kept:
                owned_configs.append(OwnedBrokerConfig(broker=broker, config=config, values=kept))

    add: dict[ItemKey, tuple[str, ...]] = {}
    remove: dict[ItemKey, tuple[str, ...]] = {}
    before_items: list[OwnedListItems] = []
    after_items: list[OwnedListItems] = []
    owned_items = {(o.topic, o.config): frozenset(o.items) for o in ledger.topic_items}
    for key in sorted(set(wanted_items) | set(owned_items)):
        topic, config = key
        if topic not in seen.topic_configs:
            continue  # the topic is gone, and its lists with it
        present = items_of(seen.topic_configs[topic].get(config))
        # Named until taken out by the controller itself, present or not: the broker answering may not show an item
        # just added yet, and one forgotten then would be left behind (taking out an absent item changes nothing).
        ours = owned_items.get(key, frozenset())
        wanted = wanted_items.get(key, frozenset())
        to_add = frozenset() if ALL_REPLICAS in present else wanted - present
        to_remove = ours - wanted
        if to_add:
            add[key] = tuple(sorted(to_add))
        if to_remove:
            remove[key] = tuple(sorted(to_remove))
        if ours | to_add:
            before_items.append(OwnedListItems(topic=topic, config=config, items=sorted(ours | to_add)))
        if (ours | to_add) - to_remove:
            after_items.append(OwnedListItems(topic=topic, config=config, items=sorted((ours | to_add) - to_remove)))
    return Plan(changes, add, remove, ThrottleLedger(broker_configs=owned_configs, topic_items=before_items),
                ThrottleLedger(broker_configs=owned_configs, topic_items=after_items))
