"""How old the placers' reads of the whole cluster may get (services.topic_reconciler.freshness), and the two reads
that follow it: every topic's assignment (ClusterViewCache) and every directory's figures (PlacementLedger)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from services.adapters.admin import BrokerInfo, ClusterUnavailable, LogDirInfo, LogDirReplica
from services.common.recent_load import RecentLoad
from services.topic_reconciler.cluster_view import ClusterViewCache
from services.topic_reconciler.freshness import Freshness
from services.topic_reconciler.placements import PlacementLedger


def test_a_read_is_used_as_it_is_past_its_age_and_read_first_past_the_stale_window() -> None:
    freshness = Freshness(max_age_s=30, stale_max_s=600)
    assert freshness.must_read(0.0)  # never read
    freshness.was_read(0.0)
    assert not freshness.must_read(30.0) and not freshness.due
    assert not freshness.must_read(31.0) and freshness.due  # used old: read again soon
    assert freshness.must_read(601.0)
    freshness.was_read(601.0)
    assert not freshness.due and not freshness.must_read(602.0)


def test_without_a_stale_window_a_read_past_its_age_is_read_first() -> None:
    freshness = Freshness(max_age_s=30, stale_max_s=5)  # a window shorter than the age is the age
    freshness.was_read(0.0)
    assert freshness.must_read(31.0) and not freshness.due


class Cluster:
    """Only what the two caches read: brokers, their directories (with replicas or not), assignments."""

    def __init__(self) -> None:
        self.assignments_read = 0
        self.dirs_read = 0
        self.topics = {"old": [[1, 2]]}
        self.offline: set[tuple[int, str]] = set()
        self.unavailable = False

    async def brokers(self) -> list[BrokerInfo]:
        return [BrokerInfo(id=b, rack=f"/r{b}", alive=True) for b in (1, 2)]

    async def assignments(self) -> dict[str, list[list[int]]]:
        self.assignments_read += 1
        if self.unavailable:
            raise ClusterUnavailable("timed out")
        return {name: [list(r) for r in replicas] for name, replicas in self.topics.items()}

    async def describe_log_dirs(self, brokers: list[int] | None = None, *, replicas: bool = True
                                ) -> list[LogDirInfo]:
        if replicas:
            self.dirs_read += 1
        return [LogDirInfo(broker=b, path=d, error="KafkaStorageError" if (b, d) in self.offline else None,
                           replicas=tuple(LogDirReplica(topic="old", partition=0, size_bytes=1) for _ in
                                          range(5 if d == "/d0" else 0)) if replicas else ())
                for b in (brokers or (1, 2)) for d in ("/d0", "/d1")]


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


async def test_an_old_view_is_placed_on_as_it_is_with_ballasts_placements_and_read_again_between_batches() -> None:
    cluster, clock = Cluster(), Clock()
    cache = ClusterViewCache(cluster, max_age_s=30, stale_max_s=600, clock=clock)  # type: ignore[arg-type]
    assert (await cache.view()).assignments == {"old": [[1, 2]]} and cluster.assignments_read == 1
    cache.set_topic("mine", [[2, 1]])
    cluster.topics["theirs"] = [[1, 2]]  # made by someone else meanwhile
    clock.now = 45.0
    view = await cache.view()
    assert set(view.assignments) == {"old", "mine"} and cluster.assignments_read == 1  # no read on the way
    await cache.refresh_due()
    assert set((await cache.view()).assignments) == {"old", "theirs"} and cluster.assignments_read == 2
    await cache.refresh_due()  # nothing used old since
    assert cluster.assignments_read == 2
    clock.now = 700.0
    await cache.view()
    assert cluster.assignments_read == 3  # too old to place on: read first


async def test_a_failed_read_between_batches_keeps_the_last_one_and_is_tried_again() -> None:
    cluster, clock = Cluster(), Clock()
    cache = ClusterViewCache(cluster, max_age_s=30, stale_max_s=600, clock=clock)  # type: ignore[arg-type]
    await cache.view()
    clock.now = 45.0
    await cache.view()
    cluster.unavailable = True
    await cache.refresh_due()
    assert (await cache.view()).assignments == {"old": [[1, 2]]} and cache.freshness.due
    cluster.unavailable = False
    await cache.refresh_due()
    assert cluster.assignments_read == 3 and not cache.freshness.due


async def test_a_directory_failed_since_the_figures_were_read_is_known_from_the_look_and_never_chosen() -> None:
    cluster, clock = Cluster(), Clock()
    cache = ClusterViewCache(cluster, max_age_s=30, stale_max_s=600, clock=clock)  # type: ignore[arg-type]
    at = {"now": datetime(2026, 12, 3, tzinfo=UTC)}
    ledger = PlacementLedger(cluster, RecentLoad(timedelta(minutes=5)), cache.rack_of,  # type: ignore[arg-type]
                             cordoned=cache.cordoned, offline=cache.offline, now=lambda: at["now"],
                             dirs_max_age=timedelta(seconds=30), dirs_stale_max=timedelta(seconds=600))
    await cache.view()
    assert await ledger.choose({0: [1]}, load_aware=True) == {(0, 1): "/d1"}  # the emptier one
    cluster.offline.add((1, "/d1"))
    at["now"] += timedelta(seconds=45)
    await cache.view()  # a batch's look: brokers and their directories, cheaply
    assert cache.offline(1) == frozenset({"/d1"})
    assert await ledger.choose({0: [1, 2]}, load_aware=True) == {(0, 2): "/d1"}  # broker 1: its only one left
    assert cluster.dirs_read == 1 and ledger.freshness.due  # the old figures, used as they are
    await ledger.refresh_due()
    assert cluster.dirs_read == 2 and not ledger.freshness.due
