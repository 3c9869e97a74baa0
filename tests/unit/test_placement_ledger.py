"""After a placement (services.topic_reconciler.placements): log directories chosen through the admin port where it
can, the broker's choice where it cannot, and the ReplicasPlaced event either way."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime, timedelta

from events import LoadAggregate
from services.adapters.admin import AdminError, ClusterUnavailable, LogDirInfo, LogDirReplica, Unsupported
from services.topic_reconciler.placements import PlacementLedger
from services.common.recent_load import RecentLoad

NOW = datetime(2026, 11, 23, 12, 5, tzinfo=UTC)
RACKS = {1: "/dc1/r1", 2: "/dc2/r1"}


class Admin:
    """Only what the ledger calls: records the directories asked for, or fails as told; describes the log
    directories it is given (none: it cannot tell, as an adapter without DescribeLogDirs)."""

    def __init__(self, error: AdminError | None = None, dirs: list[LogDirInfo] | None = None) -> None:
        self.error = error
        self.dirs = dirs
        self.calls: list[tuple[str, dict[tuple[int, int], str]]] = []
        self.described = 0
        self.unavailable = 0  # the next describe_log_dirs calls that time out

    async def describe_log_dirs(self, brokers: list[int] | None = None, *, replicas: bool = True) -> list[LogDirInfo]:
        self.described += 1
        if self.unavailable:
            self.unavailable -= 1
            raise ClusterUnavailable("timed out")
        if self.dirs is None:
            raise Unsupported("no DescribeLogDirs here")
        return self.dirs

    async def alter_replica_log_dirs(self, name: str, dirs: Mapping[tuple[int, int], str]) -> None:
        self.calls.append((name, dict(dirs)))
        if self.error:
            raise self.error


def recent_load() -> RecentLoad:
    recent = RecentLoad(max_age=timedelta(minutes=5))
    for broker, (a, b) in {1: (500.0, 100.0), 2: (100.0, 500.0)}.items():
        for log_dir, disk in (("/d0", a), ("/d1", b)):
            recent.take(LoadAggregate(window_start=NOW - timedelta(seconds=70), window_end=NOW - timedelta(seconds=10),
                                      entity_kind="log-dir", entity=f"{broker}:{log_dir}", disk_mb=disk, replicas=5))
    return recent


def ledger(admin: Admin, recent: RecentLoad | None = None) -> PlacementLedger:
    return PlacementLedger(admin, recent or recent_load(), RACKS.get, now=lambda: NOW)  # type: ignore[arg-type]


async def test_new_replicas_go_to_the_least_used_directories_and_the_event_says_where() -> None:
    admin = Admin()
    event = await ledger(admin).placed("orders", "create", {0: [1, 2], 1: [2, -1]}, load_aware=True)
    assert admin.calls == [("orders", {(0, 1): "/d1", (0, 2): "/d0", (1, 2): "/d0"})]
    assert [(r.partition, r.broker, r.rack, r.log_dir) for r in event.placed] == [
        (0, 1, "/dc1/r1", "/d1"), (0, 2, "/dc2/r1", "/d0"), (1, 2, "/dc2/r1", "/d0")]  # the placeholder is no replica
    assert (event.topic, event.reason, event.placed_at) == ("orders", "create", NOW)


async def test_the_next_placement_counts_the_replicas_just_sent() -> None:
    admin, recent = Admin(), recent_load()
    # Broker 1's mean replica is 600 MB / 10: /d1 (100 MB) takes seven before it would pass /d0 (500 MB).
    await ledger(admin, recent).placed("a", "create", {p: [1] for p in range(7)}, load_aware=True)
    assert set(admin.calls[-1][1].values()) == {"/d1"} and recent.log_dirs(NOW)[1]["/d1"].placed_since == 7
    await ledger(admin, recent).placed("b", "create", {0: [1]}, load_aware=True)
    assert admin.calls[-1] == ("b", {(0, 1): "/d0"})  # /d1 counts as 100 + 7 x 60 MB by now


async def test_a_failed_choice_leaves_the_topic_to_the_brokers_and_opted_out_specs_are_not_asked() -> None:
    admin = Admin(ClusterUnavailable("broker 1 is down"))
    event = await ledger(admin).placed("a", "create", {0: [1]}, load_aware=True)
    assert event.placed[0].log_dir is None and len(admin.calls) == 1
    quiet = Admin()
    event = await ledger(quiet).placed("a", "create", {0: [1]}, load_aware=False)
    assert quiet.calls == [] and [r.broker for r in event.placed] == [1]


def _dir(broker: int, path: str, mb: float, *, error: str | None = None) -> LogDirInfo:
    return LogDirInfo(broker=broker, path=path, error=error,
                      replicas=(LogDirReplica(topic="t", partition=broker, size_bytes=int(mb * 1e6)),))


async def test_the_cluster_s_own_directories_decide_where_the_aggregates_name_others() -> None:
    """A real cluster whose load comes from a Cruise Control that knows other paths: DescribeLogDirs' bytes decide."""
    real = [_dir(1, "/kafka/b1/data-0", 10), _dir(1, "/kafka/b1/data-1", 900),
            _dir(2, "/kafka/b2/data-0", 900), _dir(2, "/kafka/b2/data-1", 10)]
    admin = Admin(dirs=real)
    placements = ledger(admin)
    event = await placements.placed("orders", "create", {0: [1, 2]}, load_aware=True)
    assert admin.calls == [("orders", {(0, 1): "/kafka/b1/data-0", (0, 2): "/kafka/b2/data-1"})]
    assert [r.log_dir for r in event.placed] == ["/kafka/b1/data-0", "/kafka/b2/data-1"]
    await placements.placed("more", "create", {0: [1]}, load_aware=True)
    assert admin.described == 1  # read once, kept for a while


async def test_a_describe_that_timed_out_is_asked_again_at_the_next_placement_a_refused_one_is_not() -> None:
    real = [_dir(1, "/kafka/b1/data-0", 10), _dir(1, "/kafka/b1/data-1", 900)]
    admin = Admin(dirs=real)
    admin.unavailable = 1
    placements = ledger(admin)
    await placements.placed("first", "create", {0: [1]}, load_aware=True)
    assert admin.calls[-1] == ("first", {(0, 1): "/d1"})  # the aggregates' paths, for want of the cluster's
    await placements.placed("second", "create", {0: [1]}, load_aware=True)
    assert admin.calls[-1] == ("second", {(0, 1): "/kafka/b1/data-0"}) and admin.described == 2
    refused = Admin()  # no DescribeLogDirs: Unsupported, a refusal
    placements = ledger(refused)
    for name in ("a", "b"):
        await placements.placed(name, "create", {0: [1]}, load_aware=True)
    assert refused.described == 1


async def test_an_offline_directory_is_never_chosen() -> None:
    # The aggregates say /d1 is broker 1's emptier directory, but its disk has failed since.
    admin = Admin(dirs=[_dir(1, "/d0", 500), _dir(1, "/d1", 0, error="KafkaStorageError"), _dir(2, "/d0", 100),
                        _dir(2, "/d1", 500)])
    await ledger(admin).placed("orders", "create", {0: [1, 2]}, load_aware=True)
    # Broker 1 has one directory left, so the broker chooses (it can only take /d0); broker 2 keeps the aggregates.
    assert admin.calls == [("orders", {(0, 2): "/d0"})]


async def test_drained_and_failed_directories_from_the_brokers_status_take_no_new_replica() -> None:
    from events import BrokerStatus, LogDirState

    admin = Admin()
    placements = ledger(admin)
    # Without the status, broker 1's emptier /d1 and broker 2's /d0 would be chosen (the test above).
    placements.take_broker_status(BrokerStatus(broker=1, log_dirs=[LogDirState(path="/d0"),
                                                                   LogDirState(path="/d1", drained_by="drain")]))
    placements.take_broker_status(BrokerStatus(broker=2, log_dirs=[LogDirState(path="/d0", online=False),
                                                                   LogDirState(path="/d1")]))
    await placements.placed("orders", "create", {0: [1, 2]}, load_aware=True)
    assert admin.calls == [("orders", {(0, 1): "/d0"})]  # broker 2 has one directory left: its own choice


async def test_a_window_that_lacks_a_directory_does_not_hide_it() -> None:
    """The load-flow test once saw a replica put in a broker's fuller directory: the newest window held a sample of
    that directory only (the other's came late), and the aggregates decided alone."""
    recent = RecentLoad(max_age=timedelta(minutes=5))
    recent.take(LoadAggregate(window_start=NOW - timedelta(seconds=70), window_end=NOW - timedelta(seconds=10),
                              entity_kind="log-dir", entity="1:/d0", disk_mb=500.0, replicas=6))
    admin = Admin(dirs=[_dir(1, "/d0", 500), _dir(1, "/d1", 0)])
    await ledger(admin, recent).placed("orders", "create", {0: [1]}, load_aware=True)
    assert admin.calls == [("orders", {(0, 1): "/d1"})]  # the cluster's own figures, which know both
