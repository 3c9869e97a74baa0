"""The throttle benchmark's seeded ledger (bench.throttle.seeded_ledger): (c) and (d) restart the controller with the
floor named in its ledger, and what the controller held when it was killed stays named, so the restarted controller
still removes its own. Pure: called directly, and fed to the controller's ownership rule."""

from bench.throttle import DESTINATION, FLOOR, PARTITIONS, SOURCE, seeded_ledger
from events import ThrottleLedger
from events.throttle import OwnedBrokerConfig, OwnedListItems
from services.adapters.admin import INTRA_BROKER_THROTTLE
from services.throttle.ownership import FOLLOWER_ITEMS, FOLLOWER_RATE, LEADER_ITEMS, LEADER_RATE, Seen, plan

TOPIC = "bench-move-rebalance-c"
FLOOR_S = str(FLOOR)
# The controller's rate on the move that placed the topic's replicas in broker 1's first directory, still in force
# when the benchmark killed it (seen in a run: 4933346 on broker 1, left on it for good).
HELD = ThrottleLedger(broker_configs=[OwnedBrokerConfig(broker=SOURCE, config=INTRA_BROKER_THROTTLE,
                                                        values=["4933346"])])


def test_a_rate_the_controller_held_when_killed_is_still_its_own_and_removed_once_no_move_needs_it() -> None:
    ledger = seeded_ledger(HELD, TOPIC, "rebalance")
    seen = Seen(broker_configs={SOURCE: {INTRA_BROKER_THROTTLE: "4933346", LEADER_RATE: FLOOR_S, FOLLOWER_RATE: FLOOR_S},
                                DESTINATION: {LEADER_RATE: FLOOR_S, FOLLOWER_RATE: FLOOR_S}},
                topic_configs={TOPIC: {}})
    # The reassignment has ended: the controller wants no rate anywhere.
    p = plan({}, {}, seen, ledger)
    assert p.broker_changes == {SOURCE: {INTRA_BROKER_THROTTLE: None, LEADER_RATE: None, FOLLOWER_RATE: None},
                                DESTINATION: {LEADER_RATE: None, FOLLOWER_RATE: None}}


def test_the_floor_joins_what_the_controller_held_without_dropping_any_of_it() -> None:
    held = ThrottleLedger(
        broker_configs=[OwnedBrokerConfig(broker=SOURCE, config=INTRA_BROKER_THROTTLE, values=["4933346", "6000000"])],
        topic_items=[OwnedListItems(topic=TOPIC, config=LEADER_ITEMS, items=["0:3"])])
    drain = seeded_ledger(held, TOPIC, "drain")
    assert drain.broker_configs == [OwnedBrokerConfig(broker=SOURCE, config=INTRA_BROKER_THROTTLE,
                                                      values=["4933346", "6000000", FLOOR_S])]
    assert drain.topic_items == held.topic_items
    rebalance = seeded_ledger(held, TOPIC, "rebalance")
    leader = next(i for i in rebalance.topic_items if i.config == LEADER_ITEMS)
    follower = next(i for i in rebalance.topic_items if i.config == FOLLOWER_ITEMS)
    assert set(leader.items) == {"0:3", *(f"{p}:{SOURCE}" for p in range(PARTITIONS))}
    assert set(follower.items) == {f"{p}:{DESTINATION}" for p in range(PARTITIONS)}
    assert {(o.broker, o.config) for o in rebalance.broker_configs} == {
        (SOURCE, INTRA_BROKER_THROTTLE), *((b, c) for b in (SOURCE, DESTINATION) for c in (LEADER_RATE, FOLLOWER_RATE))}
