"""The throttle controller's rules (services.throttle): what is moving, the live traffic, the rates, the back-off,
whose throttles are whose, and the decision that ties them together. All pure: called directly."""

from datetime import UTC, datetime, timedelta

from events import BrokerLoadSample, ThrottleLedger
from events.throttle import OwnedBrokerConfig, OwnedListItems
from services.adapters.admin import INTRA_BROKER_THROTTLE, LogDirInfo, LogDirReplica, PartitionInfo, Reassignment
from services.domain.throttle_limits import Capacities, Limits
from services.throttle.backoff import BackOff, back_off, held, lagging_partitions
from services.throttle.decisions import Situation, decide
from services.throttle.moves import Moves, find_moves, item, throttled_items, union
from services.throttle.ownership import (
    FOLLOWER_ITEMS,
    FOLLOWER_RATE,
    LEADER_ITEMS,
    LEADER_RATE,
    Seen,
    items_of,
    owner,
    plan,
    same,
)
from services.throttle.rates import headroom, next_rate, target, worth_changing
from services.throttle.probe import p99
from services.throttle.traffic import LogSizes, Traffic, choose, cruise_control_load, log_growth, log_sizes

T0 = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


# --- builders ----------------------------------------------------------------------------------------------------


def replica(topic: str, partition: int, size: int = 0, *, future: bool = False) -> LogDirReplica:
    return LogDirReplica(topic=topic, partition=partition, size_bytes=size, is_future=future)


def log_dir(broker: int, path: str, *replicas: LogDirReplica) -> LogDirInfo:
    return LogDirInfo(broker=broker, path=path, replicas=tuple(replicas))


def partition(pid: int, replicas: tuple[int, ...], isr: tuple[int, ...],
              offline: tuple[int, ...] = ()) -> PartitionInfo:
    return PartitionInfo(id=pid, replicas=replicas, isr=isr, offline=offline)


def ledger(*entries: OwnedBrokerConfig | OwnedListItems) -> ThrottleLedger:
    return ThrottleLedger(broker_configs=[e for e in entries if isinstance(e, OwnedBrokerConfig)],
                          topic_items=[e for e in entries if isinstance(e, OwnedListItems)])


def owned(broker: int, config: str, *values: str) -> OwnedBrokerConfig:
    return OwnedBrokerConfig(broker=broker, config=config, values=list(values))


def owned_items(topic: str, config: str, *items: str) -> OwnedListItems:
    return OwnedListItems(topic=topic, config=config, items=list(items))


def situation(moves: Moves, traffic: Traffic, **kwargs) -> Situation:
    brokers = moves.inter_brokers | set(moves.dir_moves)
    defaults = dict(alive=frozenset(brokers), racks={}, ours={}, others={})
    return Situation(moves=moves, traffic=traffic, **{**defaults, **kwargs})


LIMITS = Limits(share=0.5, floor=100, ceiling=None, ramp_up=2.0, min_change=0.1)


# --- moves -------------------------------------------------------------------------------------------------------


def test_a_reassignment_adding_replicas_sends_from_the_existing_ones_and_builds_the_added_ones() -> None:
    # Moving t-0 from [1, 2] to [2, 3]: Kafka lists replicas [2, 3, 1], adding [3], removing [1].
    moves = find_moves([Reassignment("t", 0, replicas=(2, 3, 1), adding=(3,), removing=(1,))], [])
    assert moves.sending == {"t": frozenset({(0, 1), (0, 2)})}
    assert moves.building == {"t": frozenset({(0, 3)})}
    assert moves.inter_brokers == {1, 2, 3}
    assert moves.partitions == {("t", 0)}
    assert moves.in_flight
    assert moves.is_building("t", 0, 3) and not moves.is_building("t", 0, 1)


def test_a_reassignment_that_adds_nothing_is_no_move() -> None:
    moves = find_moves([Reassignment("t", 0, replicas=(2, 1)),  # leaders reordered
                        Reassignment("t", 1, replicas=(1, 2, 3), removing=(3,))], [])  # a replica dropped
    assert moves.sending == {} and moves.building == {}
    assert moves.inter_brokers == frozenset() and moves.partitions == frozenset()
    assert not moves.in_flight


def test_a_future_replica_makes_a_move_between_the_current_and_the_future_directory() -> None:
    dirs = [log_dir(1, "/a", replica("t", 0, 100), replica("t", 1, 50)),
            log_dir(1, "/b", replica("t", 0, 10, future=True)),
            log_dir(1, "/c", replica("u", 0, 70)),
            log_dir(2, "/a", replica("t", 0, 100))]  # broker 2's copy of t-0 is not moving
    moves = find_moves([], dirs)
    assert moves.dir_moves == {1: frozenset({"/a", "/b"})}
    assert moves.moving_log_dirs == 1
    assert moves.in_flight
    assert moves.inter_brokers == frozenset() and moves.partitions == frozenset()


def test_every_future_replica_is_counted_as_a_move_between_directories() -> None:
    dirs = [log_dir(1, "/a", replica("t", 0), replica("t", 1)),
            log_dir(1, "/b", replica("t", 0, future=True), replica("t", 1, future=True)),
            log_dir(2, "/x", replica("u", 3, future=True))]  # its current replica not seen: only the target
    moves = find_moves([], dirs)
    assert moves.moving_log_dirs == 3
    assert moves.dir_moves == {1: frozenset({"/a", "/b"}), 2: frozenset({"/x"})}


def test_throttled_items_name_only_the_replicas_on_the_brokers_given() -> None:
    moves = find_moves([Reassignment("t", 0, replicas=(2, 3, 1), adding=(3,), removing=(1,)),
                        Reassignment("u", 4, replicas=(5, 6), adding=(6,))], [])
    assert throttled_items(moves, [1, 2, 3]) == {
        ("t", LEADER_ITEMS): frozenset({"0:1", "0:2"}),
        ("t", FOLLOWER_ITEMS): frozenset({"0:3"}),
    }
    # Broker 2 only: it sends t-0; nothing of u is on it, and no empty list is asked for.
    assert throttled_items(moves, [2]) == {("t", LEADER_ITEMS): frozenset({"0:2"})}


def test_an_item_is_partition_colon_broker_and_union_merges_per_topic() -> None:
    assert item(7, 3) == "7:3"
    merged = union({"t": frozenset({(0, 1)})}, {"t": frozenset({(0, 2)}), "u": frozenset({(1, 1)})})
    assert merged == {"t": frozenset({(0, 1), (0, 2)}), "u": frozenset({(1, 1)})}


# --- traffic -----------------------------------------------------------------------------------------------------


def test_log_sizes_leave_out_future_replicas() -> None:
    sizes = log_sizes([log_dir(1, "/a", replica("t", 0, 100)), log_dir(1, "/b", replica("t", 0, 40, future=True))],
                      T0)
    assert sizes.sizes == {(1, "/a", "t", 0): 100}


def test_log_growth_is_bytes_written_per_second_per_broker_and_directory() -> None:
    before = LogSizes(at(0), {(1, "/a", "t", 0): 1_000, (1, "/b", "t", 1): 0, (2, "/a", "t", 0): 1_000})
    after = LogSizes(at(10), {(1, "/a", "t", 0): 6_000, (1, "/b", "t", 1): 2_000, (2, "/a", "t", 0): 4_000})
    traffic = log_growth(before, after, building={})
    assert traffic.source == "log-growth"
    assert traffic.taken_at == at(10)
    assert traffic.brokers == {1: 700.0, 2: 300.0}
    assert traffic.log_dirs == {(1, "/a"): 500.0, (1, "/b"): 200.0, (2, "/a"): 300.0}


def test_log_growth_leaves_out_replicas_being_built_shrinking_logs_and_new_replicas() -> None:
    before = LogSizes(at(0), {(1, "/a", "t", 0): 1_000,
                              (1, "/a", "t", 2): 0,  # being built on broker 1: the copy, not live traffic
                              (2, "/a", "t", 0): 5_000})  # retention deleted segments
    after = LogSizes(at(10), {(1, "/a", "t", 0): 2_000,
                              (1, "/a", "t", 2): 900_000,
                              (2, "/a", "t", 0): 1_000,
                              (2, "/b", "u", 0): 50_000})  # not in the earlier look
    traffic = log_growth(before, after, building={"t": frozenset({(2, 1)})})
    assert traffic.brokers == {1: 100.0, 2: 0.0}
    # A directory with nothing measurable is still known, at nothing written.
    assert traffic.log_dirs == {(1, "/a"): 100.0, (2, "/a"): 0.0, (2, "/b"): 0.0}


def test_log_growth_over_no_time_or_backwards_has_no_figures() -> None:
    sizes = {(1, "/a", "t", 0): 1_000}
    assert log_growth(LogSizes(at(5), sizes), LogSizes(at(5), sizes), {}).source == "none"
    assert log_growth(LogSizes(at(5), sizes), LogSizes(at(0), sizes), {}).source == "none"


def test_cruise_control_load_is_in_bytes_and_as_old_as_its_newest_sample() -> None:
    traffic = cruise_control_load({1: BrokerLoadSample(broker=1, sampled_at=at(0), bytes_in_kb_s=2.0),
                                   2: BrokerLoadSample(broker=2, sampled_at=at(30), bytes_in_kb_s=0.5)})
    assert traffic.source == "cruise-control"
    assert traffic.brokers == {1: 2048.0, 2: 512.0}
    assert traffic.taken_at == at(30)
    assert cruise_control_load({}).source == "none"


CC = Traffic("cruise-control", at(0), {1: 5_000.0})
GROWTH = Traffic("log-growth", at(50), {1: 9_000.0}, {(1, "/a"): 1_234.0})


def test_auto_takes_fresh_cruise_control_figures_with_the_log_growths_directories() -> None:
    chosen = choose("auto", CC, GROWTH, now=at(60), max_age_s=60)
    assert chosen.source == "cruise-control"
    assert chosen.taken_at == at(0)
    assert chosen.brokers == {1: 5_000.0}
    assert chosen.log_dirs == {(1, "/a"): 1_234.0}  # Cruise Control has no figures per directory


def test_auto_falls_back_to_log_growth_when_cruise_control_is_stale() -> None:
    assert choose("auto", CC, GROWTH, now=at(61), max_age_s=60) == GROWTH
    assert choose("auto", Traffic("none"), GROWTH, now=at(61), max_age_s=60) == GROWTH


def test_asking_for_cruise_control_when_it_is_stale_gives_no_broker_figures() -> None:
    chosen = choose("cruise-control", CC, GROWTH, now=at(61), max_age_s=60)
    assert chosen.source == "none"
    assert chosen.brokers == {}
    assert chosen.log_dirs == GROWTH.log_dirs
    assert choose("cruise-control", CC, GROWTH, now=at(10), max_age_s=60).source == "cruise-control"


def test_asking_for_log_growth_ignores_fresh_cruise_control() -> None:
    assert choose("log-growth", CC, GROWTH, now=at(1), max_age_s=60) == GROWTH


# --- rates -------------------------------------------------------------------------------------------------------


CAPACITIES = Capacities(default=5, racks={"/dc1": 10, "/dc1/r1": 20, "/dc10": 30}, brokers={7: 50},
                        log_dirs={"1:/data-a": 3})


def test_a_brokers_own_capacity_wins_over_its_racks() -> None:
    assert CAPACITIES.of_broker(7, "/dc1/r1") == 50


def test_the_longest_rack_path_covering_the_brokers_rack_wins() -> None:
    assert CAPACITIES.of_broker(1, "/dc1/r1") == 20
    assert CAPACITIES.of_broker(1, "/dc1/r2") == 10
    assert CAPACITIES.of_broker(1, "/dc1") == 10


def test_a_rack_path_covers_only_whole_path_segments() -> None:
    assert CAPACITIES.of_broker(1, "/dc10/r1") == 30  # /dc10's, not /dc1's
    assert CAPACITIES.of_broker(1, "/dc100") == 5  # neither /dc1 nor /dc10 covers it
    assert Capacities(racks={"/dc1": 10}).of_broker(1, "/dc10") is None


def test_a_rack_key_with_a_trailing_slash_still_covers_its_sub_racks() -> None:
    assert Capacities(racks={"/dc1/": 10}).of_broker(1, "/dc1/r1") == 10


def test_without_a_rack_the_default_applies() -> None:
    assert CAPACITIES.of_broker(1, None) == 5
    assert Capacities().of_broker(1, "/dc1") is None


def test_a_log_directorys_own_capacity_wins_then_its_brokers() -> None:
    assert CAPACITIES.of_log_dir(1, "/dc1/r1", "/data-a") == 3
    assert CAPACITIES.of_log_dir(1, "/dc1/r1", "/data-b") == 20
    assert CAPACITIES.of_log_dir(2, None, "/data-a") == 5  # "1:/data-a" is broker 1's directory only
    assert CAPACITIES.of_log_dir(7, None, "/data-a") == 50


def test_headroom_is_capacity_less_live_and_never_negative() -> None:
    assert headroom(10_000, 2_500.7) == 7_499
    assert headroom(1_000, 1_500.0) == 0


def test_target_takes_the_share_of_the_headroom_within_floor_and_ceiling() -> None:
    limits = Limits(share=0.8, floor=1_000, ceiling=6_000)
    assert target(5_000, limits) == 4_000
    assert target(100_000, limits) == 6_000
    assert target(500, limits) == 1_000
    assert target(0, limits) == 1_000
    # A ceiling under the floor: the floor still holds.
    assert target(100_000, Limits(floor=1_000, ceiling=500)) == 1_000


def test_next_rate_goes_down_at_once_and_up_by_at_most_the_ramp() -> None:
    limits = Limits(ramp_up=1.5)
    assert next_rate(4_000, 1_000, limits) == 1_000
    assert next_rate(1_000, 10_000, limits) == 1_500
    assert next_rate(1_000, 1_200, limits) == 1_200
    assert next_rate(None, 10_000, limits) == 10_000
    assert next_rate(0, 10, limits) == 1  # a rate of nothing still climbs


def test_worth_changing_ignores_small_changes_but_never_a_drop_to_the_floor() -> None:
    limits = Limits(floor=990, min_change=0.1)
    assert worth_changing(None, 5, limits)
    assert not worth_changing(1_000, 1_050, limits)
    assert not worth_changing(1_000, 995, limits)
    assert worth_changing(1_000, 1_100, limits)
    assert worth_changing(1_000, 900, limits)
    assert worth_changing(1_000, 990, limits)  # 1 % down, but to the floor


# --- back-off ----------------------------------------------------------------------------------------------------


def test_a_partition_being_moved_never_counts_as_lagging() -> None:
    states = {"t": (partition(0, (1, 2, 3), isr=(1,)),)}
    before = {"t": (partition(0, (1, 2, 3), isr=(1, 2, 3)),)}
    assert lagging_partitions(states, before, moving={("t", 0)}, alive={1, 2, 3}) == []


def test_a_replica_newly_out_of_the_isr_counts_even_on_a_dead_broker() -> None:
    states = {"t": (partition(0, (1, 2), isr=(1,), offline=(2,)),)}
    before = {"t": (partition(0, (1, 2), isr=(1, 2)),)}
    assert lagging_partitions(states, before, moving=set(), alive={1}) == ["t-0"]


def test_a_replica_long_out_of_the_isr_on_a_dead_broker_does_not_count() -> None:
    states = {"t": (partition(0, (1, 2), isr=(1,), offline=(2,)),)}
    assert lagging_partitions(states, states, moving=set(), alive={1}) == []
    # Not alive is enough, whether or not the partition says offline.
    states = {"t": (partition(0, (1, 2), isr=(1,)),)}
    assert lagging_partitions(states, states, moving=set(), alive={1}) == []


def test_a_replica_out_of_the_isr_on_a_live_online_broker_counts() -> None:
    states = {"t": (partition(0, (1, 2), isr=(1,)),)}
    assert lagging_partitions(states, states, moving=set(), alive={1, 2}) == ["t-0"]
    assert lagging_partitions(states, {}, moving=set(), alive={1, 2}) == ["t-0"]


def test_a_replica_on_a_failed_directory_of_a_live_broker_counts_only_when_newly_out() -> None:
    states = {"t": (partition(0, (1, 2), isr=(1,), offline=(2,)),)}
    assert lagging_partitions(states, states, moving=set(), alive={1, 2}) == []
    before = {"t": (partition(0, (1, 2), isr=(1, 2)),)}
    assert lagging_partitions(states, before, moving=set(), alive={1, 2}) == ["t-0"]


def test_lagging_partitions_are_named_topic_dash_partition_in_order() -> None:
    behind = partition(1, (1, 2), isr=(2,))
    fine = partition(0, (1, 2), isr=(1, 2))
    states = {"u": (behind,), "t": (fine, behind)}
    assert lagging_partitions(states, states, moving=set(), alive={1, 2}) == ["t-1", "u-1"]


def test_a_back_off_is_renewed_while_a_cause_is_seen() -> None:
    first = held(back_off(None, lagging=["t-0"], latency_high=False, now=at(0)), at=at(1), hold_s=60)
    assert first == BackOff("isr-back-off", at(61), ("t-0",))
    renewed = back_off(first, lagging=[], latency_high=True, now=at(30))
    assert renewed == BackOff("latency-back-off", None)
    assert held(renewed, at=at(31), hold_s=60) == BackOff("latency-back-off", at(91))
    # Both causes: the ISR is named.
    assert back_off(None, lagging=["t-0"], latency_high=True, now=at(0)) == BackOff("isr-back-off", None, ("t-0",))


def test_a_back_off_holds_until_its_end_then_ends() -> None:
    current = BackOff("isr-back-off", at(60), ("t-0",))
    assert back_off(current, lagging=[], latency_high=False, now=at(59)) == current
    assert back_off(current, lagging=[], latency_high=False, now=at(60)) is None
    assert back_off(None, lagging=[], latency_high=False, now=at(0)) is None


def test_a_back_offs_hold_counts_from_when_its_floor_is_in_force_not_from_when_its_cause_was_seen() -> None:
    seen = back_off(None, lagging=["t-0"], latency_high=False, now=at(0))
    # Not in force yet (the look that saw it failed before setting the rates): it holds however long that takes.
    assert back_off(seen, lagging=[], latency_high=False, now=at(600)) == seen
    assert held(seen, at=at(605), hold_s=3) == BackOff("isr-back-off", at(608), ("t-0",))
    # Once started, a hold is not started again by a look that only keeps it.
    assert held(BackOff("isr-back-off", at(608)), at=at(606), hold_s=3) == BackOff("isr-back-off", at(608))
    assert held(None, at=at(0), hold_s=3) is None


# --- ownership ---------------------------------------------------------------------------------------------------


def test_items_of_splits_a_list_config() -> None:
    assert items_of(" 0:1, 1:2,,") == {"0:1", "1:2"}
    assert items_of(None) == frozenset() and items_of("") == frozenset()


def test_owner_is_ballast_only_for_a_value_its_ledger_names() -> None:
    seen = Seen(broker_configs={1: {LEADER_RATE: "100"}, 2: {LEADER_RATE: "999"}, 3: {}})
    book = ledger(owned(1, LEADER_RATE, "100"), owned(2, LEADER_RATE, "100"))
    assert owner(book, seen, 1, LEADER_RATE) == "ballast"
    assert owner(book, seen, 2, LEADER_RATE) == "other"  # changed by someone since
    assert owner(book, seen, 3, LEADER_RATE) == "none"
    assert owner(book, seen, 1, FOLLOWER_RATE) == "none"


def test_a_wanted_rate_where_none_is_set_is_set_and_named_in_the_ledger_first() -> None:
    p = plan({1: {LEADER_RATE: "500"}}, {}, Seen(broker_configs={1: {}}), ledger())
    assert p.broker_changes == {1: {LEADER_RATE: "500"}}
    assert p.before.broker_configs == [owned(1, LEADER_RATE, "500")]
    assert p.after.broker_configs == [owned(1, LEADER_RATE, "500")]
    assert p.add_items == {} and p.remove_items == {}


def test_someone_elses_rate_is_neither_changed_nor_deleted_nor_taken_over() -> None:
    seen = Seen(broker_configs={1: {LEADER_RATE: "999", FOLLOWER_RATE: "888"}})
    p = plan({1: {LEADER_RATE: "500"}}, {}, seen, ledger())  # wants another leader rate, no follower rate
    assert p.broker_changes == {}
    assert p.before.broker_configs == [] and p.after.broker_configs == []
    assert p.add_items == {} and p.remove_items == {}


def test_a_ledger_entry_whose_value_someone_replaced_is_no_longer_ours() -> None:
    seen = Seen(broker_configs={1: {LEADER_RATE: "999"}})
    p = plan({}, {}, seen, ledger(owned(1, LEADER_RATE, "100")))
    assert p.broker_changes == {}
    assert p.before.empty and p.after.empty


def test_the_controllers_own_rate_no_longer_wanted_is_deleted() -> None:
    seen = Seen(broker_configs={1: {LEADER_RATE: "100", INTRA_BROKER_THROTTLE: "300"}})
    book = ledger(owned(1, LEADER_RATE, "100"), owned(1, INTRA_BROKER_THROTTLE, "300"))
    p = plan({1: {INTRA_BROKER_THROTTLE: "300"}}, {}, seen, book)
    assert p.broker_changes == {1: {LEADER_RATE: None}}
    # Until a look reads it gone, it is still named: a late answer showing it is not taken for someone else's.
    assert owned(1, LEADER_RATE, "100") in p.before.broker_configs
    assert p.after.broker_configs == [owned(1, LEADER_RATE, "100"), owned(1, INTRA_BROKER_THROTTLE, "300")]
    late = plan({1: {INTRA_BROKER_THROTTLE: "300"}}, {}, seen, p.after)
    assert late.broker_changes == {1: {LEADER_RATE: None}}  # deleted again, not left as someone else's
    gone = plan({1: {INTRA_BROKER_THROTTLE: "300"}}, {}, Seen(broker_configs={1: {INTRA_BROKER_THROTTLE: "300"}}),
                p.after)
    assert gone.broker_changes == {}
    assert gone.after.broker_configs == [owned(1, INTRA_BROKER_THROTTLE, "300")]


def test_a_rate_already_as_wanted_is_left_and_stays_in_the_ledger() -> None:
    seen = Seen(broker_configs={1: {LEADER_RATE: "500"}})
    p = plan({1: {LEADER_RATE: "500"}}, {}, seen, ledger(owned(1, LEADER_RATE, "500")))
    assert p.broker_changes == {}
    assert p.before.broker_configs == p.after.broker_configs == [owned(1, LEADER_RATE, "500")]
    assert same(p.after, ledger(owned(1, LEADER_RATE, "500")))


def test_a_broker_that_could_not_be_read_keeps_its_ledger_entries_and_is_not_changed() -> None:
    book = ledger(owned(2, LEADER_RATE, "100", "200"))
    p = plan({2: {LEADER_RATE: "500"}}, {}, Seen(broker_configs={1: {}}), book)
    assert p.broker_changes == {}
    assert p.before.broker_configs == [owned(2, LEADER_RATE, "100", "200")]
    assert p.after.broker_configs == [owned(2, LEADER_RATE, "100", "200")]


def test_while_a_rate_changes_the_ledger_names_both_values_so_a_crash_still_finds_it_ours() -> None:
    seen = Seen(broker_configs={1: {LEADER_RATE: "100"}})
    p = plan({1: {LEADER_RATE: "500"}}, {}, seen, ledger(owned(1, LEADER_RATE, "100")))
    assert p.broker_changes == {1: {LEADER_RATE: "500"}}
    assert p.before.broker_configs == [owned(1, LEADER_RATE, "100", "500")]
    # Crashed after writing ``before``, or read a moment late after the change: either value is the controller's.
    for value in ("100", "500"):
        assert owner(p.before, Seen(broker_configs={1: {LEADER_RATE: value}}), 1, LEADER_RATE) == "ballast"
        assert owner(p.after, Seen(broker_configs={1: {LEADER_RATE: value}}), 1, LEADER_RATE) == "ballast"
    late = plan({1: {LEADER_RATE: "500"}}, {}, seen, p.after)
    assert late.broker_changes == {1: {LEADER_RATE: "500"}}  # set again, harmlessly
    # Once a look reads the new value, the old one is forgotten.
    read = plan({1: {LEADER_RATE: "500"}}, {}, Seen(broker_configs={1: {LEADER_RATE: "500"}}), p.after)
    assert read.broker_changes == {} and read.after.broker_configs == [owned(1, LEADER_RATE, "500")]


def test_items_already_in_a_list_are_neither_added_nor_removed_nor_owned() -> None:
    seen = Seen(topic_configs={"t": {LEADER_ITEMS: "0:1,0:9"}})
    p = plan({}, {("t", LEADER_ITEMS): frozenset({"0:1", "0:2"})}, seen, ledger())
    assert p.add_items == {("t", LEADER_ITEMS): ("0:2",)}
    assert p.remove_items == {}  # 0:9 is someone else's
    assert p.before.topic_items == [owned_items("t", LEADER_ITEMS, "0:2")]
    assert p.after.topic_items == [owned_items("t", LEADER_ITEMS, "0:2")]


def test_the_controllers_own_items_no_longer_wanted_are_removed() -> None:
    seen = Seen(topic_configs={"t": {FOLLOWER_ITEMS: "0:1,0:2,0:3"}})
    book = ledger(owned_items("t", FOLLOWER_ITEMS, "0:2", "0:3"))
    p = plan({}, {("t", FOLLOWER_ITEMS): frozenset({"0:3"})}, seen, book)
    assert p.add_items == {}
    assert p.remove_items == {("t", FOLLOWER_ITEMS): ("0:2",)}
    assert p.before.topic_items == [owned_items("t", FOLLOWER_ITEMS, "0:2", "0:3")]
    assert p.after.topic_items == [owned_items("t", FOLLOWER_ITEMS, "0:3")]


def test_an_owned_item_not_read_in_its_list_is_still_taken_out_and_only_then_forgotten() -> None:
    # The answering broker may not show an item just added yet: forgetting it then would leave it behind.
    seen = Seen(topic_configs={"t": {FOLLOWER_ITEMS: "0:1"}})
    p = plan({}, {}, seen, ledger(owned_items("t", FOLLOWER_ITEMS, "0:2")))
    assert p.remove_items == {("t", FOLLOWER_ITEMS): ("0:2",)}
    assert p.before.topic_items == [owned_items("t", FOLLOWER_ITEMS, "0:2")]
    assert p.after.empty
    # Still wanted, it is added again and stays named.
    again = plan({}, {("t", FOLLOWER_ITEMS): frozenset({"0:2"})}, seen, ledger(owned_items("t", FOLLOWER_ITEMS, "0:2")))
    assert again.add_items == {("t", FOLLOWER_ITEMS): ("0:2",)} and again.remove_items == {}
    assert again.after.topic_items == [owned_items("t", FOLLOWER_ITEMS, "0:2")]


def test_nothing_is_added_to_a_list_that_throttles_every_replica() -> None:
    seen = Seen(topic_configs={"t": {LEADER_ITEMS: "*"}})
    p = plan({}, {("t", LEADER_ITEMS): frozenset({"0:1"})}, seen, ledger())
    assert p.add_items == {} and p.remove_items == {}
    assert p.before.empty and p.after.empty


def test_a_topic_that_no_longer_exists_drops_out_of_the_ledger() -> None:
    book = ledger(owned_items("gone", LEADER_ITEMS, "0:1"), owned_items("t", LEADER_ITEMS, "0:1"))
    seen = Seen(topic_configs={"t": {LEADER_ITEMS: "0:1"}})
    p = plan({}, {("gone", LEADER_ITEMS): frozenset({"0:1"}), ("t", LEADER_ITEMS): frozenset({"0:1"})}, seen, book)
    assert p.add_items == {} and p.remove_items == {}
    assert p.before.topic_items == p.after.topic_items == [owned_items("t", LEADER_ITEMS, "0:1")]


# --- decisions ---------------------------------------------------------------------------------------------------


# t-0 moves from broker 1 to broker 3.
INTER = find_moves([Reassignment("t", 0, replicas=(3, 1), adding=(3,), removing=(1,))], [])
BUSY = Traffic("log-growth", at(0), {1: 2_000.0, 3: 4_000.0})
NETWORK = Capacities(default=10_000)


def test_inter_broker_rates_set_leader_and_follower_rates_alike_from_the_headroom() -> None:
    d = decide(situation(INTER, BUSY), NETWORK, Capacities(), LIMITS)
    # (10 000 - live) * 0.5
    assert d.rates == {1: {LEADER_RATE: "4000", FOLLOWER_RATE: "4000"},
                       3: {LEADER_RATE: "3000", FOLLOWER_RATE: "3000"}}
    assert d.reasons == {(1, "inter-broker"): "headroom", (3, "inter-broker"): "headroom"}
    assert [(b.broker, b.owner, b.bytes_per_s, b.headroom_bytes_per_s) for b in d.brokers] == [
        (1, "ballast", 4_000, 8_000), (3, "ballast", 3_000, 6_000)]


def test_a_dead_broker_gets_no_rate() -> None:
    d = decide(situation(INTER, BUSY, alive={1}), NETWORK, Capacities(), LIMITS)
    assert set(d.rates) == {1}


def test_a_kind_a_rebalance_fixed_is_left_alone() -> None:
    d = decide(situation(INTER, BUSY, fixed={"inter-broker"}), NETWORK, Capacities(), LIMITS)
    assert d.rates == {}
    assert d.reasons == {(1, "inter-broker"): "fixed", (3, "inter-broker"): "fixed"}


def test_a_broker_with_someone_elses_rate_is_left_alone() -> None:
    d = decide(situation(INTER, BUSY, others={(1, "inter-broker"): 777}), NETWORK, Capacities(), LIMITS)
    assert 1 not in d.rates and 3 in d.rates
    assert d.reasons[(1, "inter-broker")] == "fixed"
    status = next(b for b in d.brokers if b.broker == 1)
    assert (status.owner, status.bytes_per_s) == ("other", 777)


def test_no_capacity_means_no_rate() -> None:
    d = decide(situation(INTER, BUSY), Capacities(brokers={3: 10_000}), Capacities(), LIMITS)
    assert set(d.rates) == {3}
    assert d.reasons[(1, "inter-broker")] == "no-capacity"


def test_a_back_off_drops_to_the_floor_at_once_with_its_reason() -> None:
    s = situation(INTER, BUSY, ours={(1, "inter-broker"): 4_000},
                  back_off=BackOff("latency-back-off", at(60)))
    d = decide(s, NETWORK, Capacities(), LIMITS)
    assert d.rates[1] == {LEADER_RATE: "100", FOLLOWER_RATE: "100"}
    assert d.reasons[(1, "inter-broker")] == "latency-back-off"


def test_without_traffic_figures_the_rate_starts_at_the_floor() -> None:
    d = decide(situation(INTER, Traffic("none")), NETWORK, Capacities(), LIMITS)
    assert d.rates[1] == {LEADER_RATE: "100", FOLLOWER_RATE: "100"}
    assert d.reasons[(1, "inter-broker")] == "headroom"


def test_a_rate_in_force_ramps_up_and_a_small_change_is_not_made() -> None:
    ours = {(1, "inter-broker"): 1_000, (3, "inter-broker"): 2_900}
    d = decide(situation(INTER, BUSY, ours=ours), NETWORK, Capacities(), LIMITS)
    assert d.rates[1][LEADER_RATE] == "2000"  # wants 4000; ramp 2x
    assert d.rates[3][LEADER_RATE] == "2900"  # wants 3000: under min_change


def test_intra_broker_the_tightest_directory_decides() -> None:
    moves = Moves(dir_moves={1: frozenset({"/a", "/b"})})
    # /b has the smaller capacity, but /a the smaller headroom.
    disks = Capacities(default=10_000, log_dirs={"1:/b": 6_000})
    traffic = Traffic("log-growth", at(0), {1: 9_000.0}, {(1, "/a"): 8_000.0, (1, "/b"): 1_000.0})
    d = decide(situation(moves, traffic), Capacities(), disks, LIMITS)
    assert d.rates == {1: {INTRA_BROKER_THROTTLE: "1000"}}  # 2000 * 0.5
    assert d.reasons == {(1, "intra-broker"): "headroom"}
    assert [(x.log_dir, x.capacity_bytes_per_s, x.headroom_bytes_per_s) for x in d.log_dirs] == [
        ("/a", 10_000, 2_000), ("/b", 6_000, 5_000)]


def test_intra_broker_without_disk_capacity_means_no_rate() -> None:
    moves = Moves(dir_moves={1: frozenset({"/a", "/b"})})
    traffic = Traffic("log-growth", at(0), {}, {(1, "/a"): 10.0, (1, "/b"): 10.0})
    d = decide(situation(moves, traffic), NETWORK, Capacities(), LIMITS)
    assert d.rates == {}
    assert d.reasons == {(1, "intra-broker"): "no-capacity"}


def test_a_directory_holding_only_the_copy_still_has_its_headroom_counted() -> None:
    # Moving onto an empty disk: /b holds nothing but the future replica, and its small capacity decides.
    before = log_sizes([log_dir(1, "/a", replica("t", 0, 1000)), log_dir(1, "/b", replica("t", 0, 0, future=True))],
                       at(0))
    after = log_sizes([log_dir(1, "/a", replica("t", 0, 2000)), log_dir(1, "/b", replica("t", 0, 500, future=True))],
                      at(10))
    traffic = log_growth(before, after, {})
    assert traffic.log_dirs == {(1, "/a"): 100.0, (1, "/b"): 0.0}
    moves = find_moves([], [log_dir(1, "/a", replica("t", 0, 2000)),
                            log_dir(1, "/b", replica("t", 0, 500, future=True))])
    disks = Capacities(default=100_000, log_dirs={"1:/b": 5_000})
    d = decide(situation(moves, traffic), Capacities(), disks, Limits(floor=100, share=0.5))
    assert d.rates == {1: {INTRA_BROKER_THROTTLE: "2500"}}


def test_a_rack_key_ending_in_a_slash_covers_the_rack_itself() -> None:
    assert Capacities(racks={"/dc1/": 10}).of_broker(1, "/dc1") == 10


def test_the_probes_p99_needs_a_few_samples_and_takes_the_slowest_hundredth() -> None:
    assert p99([1.0, 2.0, 3.0, 4.0]) is None
    latencies = [float(n) for n in range(1, 201)]
    assert p99(latencies) == 198.0  # the nearest rank: the 198th of 200


def test_a_latency_past_the_limit_backs_off_with_its_own_reason() -> None:
    current = back_off(None, lagging=[], latency_high=True, now=at(0))
    assert current == BackOff("latency-back-off", None)
    # A lagging partition is named first when both are seen.
    assert back_off(None, lagging=["t-0"], latency_high=True, now=at(0)) == BackOff("isr-back-off", None, ("t-0",))
