"""How old the placers' reads of the whole cluster may get (services.topic_reconciler.freshness), and the two reads
that follow it: every topic's assignment (ClusterViewCache) and every directory's figures (PlacementLedger)."""

from __future__ import annotations

import asyncio
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
        # Set: every read of the whole cluster waits for it (a read under way while placements go on).
        self.gate: asyncio.Event | None = None
        self.replicas_per_dir = {"/d0": 5, "/d1": 0}

    async def brokers(self) -> list[BrokerInfo]:
        return [BrokerInfo(id=b, rack=f"/r{b}", alive=True) for b in (1, 2)]

    async def assignments(self) -> dict[str, list[list[int]]]:
        self.assignments_read += 1
        if self.gate is not None:
            await self.gate.wait()
        if self.unavailable:
            raise ClusterUnavailable("timed out")
        return {name: [list(r) for r in replicas] for name, replicas in self.topics.items()}

    async def describe_log_dirs(self, brokers: list[int] | None = None, *, replicas: bool = True
                                ) -> list[LogDirInfo]:
        if replicas:
            self.dirs_read += 1
            if self.gate is not None:
                await self.gate.wait()
        return [LogDirInfo(broker=b, path=d, error="KafkaStorageError" if (b, d) in self.offline else None,
                           replicas=tuple(LogDirReplica(topic="old", partition=0, size_bytes=1) for _ in
                                          range(self.replicas_per_dir[d])) if replicas else ())
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


async def used_old(cluster: Cluster, clock: Clock) -> ClusterViewCache:
    """A cache whose assignments were read at 0 s and placed on at 45 s: used past their age, due to be read again."""
    cache = ClusterViewCache(cluster, max_age_s=30, stale_max_s=600, clock=clock)  # type: ignore[arg-type]
    await cache.view()
    clock.now = 45.0
    await cache.view()
    assert cache.freshness.due
    return cache


async def test_a_failed_read_between_batches_keeps_the_last_one_and_is_tried_again() -> None:
    cluster, clock = Cluster(), Clock()
    cache = await used_old(cluster, clock)
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


async def until_read_begins(cluster: Cluster, reads_before: int, count: str = "assignments_read") -> None:
    async def begun() -> None:
        while getattr(cluster, count) == reads_before:
            await asyncio.sleep(0)
    await asyncio.wait_for(begun(), timeout=5)


async def test_placements_made_while_every_assignment_is_read_again_are_kept_over_the_read() -> None:
    cluster, clock = Cluster(), Clock()
    cluster.topics["gone"] = [[1, 2]]
    cache = await used_old(cluster, clock)
    cluster.gate = asyncio.Event()
    refresh = asyncio.create_task(cache.refresh_due())
    await until_read_begins(cluster, 1)
    # A batch meanwhile: places on the last read, and deletes a topic; the read under way shows neither.
    cache.set_topic("mine", [[2, 1]])
    cache.forget("gone")
    cluster.topics["theirs"] = [[1, 2]]
    cluster.gate.set()
    await refresh
    assert (await cache.view()).assignments == {"old": [[1, 2]], "theirs": [[1, 2]], "mine": [[2, 1]]}
    assert not cache.freshness.due and cluster.assignments_read == 2


async def test_a_batch_that_must_read_while_a_read_is_under_way_waits_for_that_read() -> None:
    cluster, clock = Cluster(), Clock()
    cache = await used_old(cluster, clock)
    cluster.gate = asyncio.Event()
    refresh = asyncio.create_task(cache.refresh_due())
    await until_read_begins(cluster, 1)
    clock.now = 700.0  # too old to place on: this batch reads first
    cluster.topics["theirs"] = [[1, 2]]
    placing = asyncio.create_task(cache.view())
    await asyncio.sleep(0.01)
    assert not placing.done()
    cluster.gate.set()
    assert set((await placing).assignments) == {"old", "theirs"}
    await refresh
    assert cluster.assignments_read == 2  # one read for both


async def test_replicas_placed_while_the_directories_are_read_again_count_in_the_new_figures() -> None:
    cluster, clock = Cluster(), Clock()
    cache = ClusterViewCache(cluster, max_age_s=30, stale_max_s=600, clock=clock)  # type: ignore[arg-type]
    at = {"now": datetime(2026, 12, 3, tzinfo=UTC)}
    ledger = PlacementLedger(cluster, RecentLoad(timedelta(minutes=5)), cache.rack_of,  # type: ignore[arg-type]
                             now=lambda: at["now"], dirs_max_age=timedelta(seconds=30),
                             dirs_stale_max=timedelta(seconds=600))
    await cache.view()
    assert await ledger.choose({0: [1]}, load_aware=True) == {(0, 1): "/d1"}
    at["now"] += timedelta(seconds=45)
    await ledger.choose({0: [1]}, load_aware=True)  # used old: due
    cluster.gate, cluster.replicas_per_dir = asyncio.Event(), {"/d0": 3, "/d1": 0}
    refresh = asyncio.create_task(ledger.refresh_due())
    await until_read_begins(cluster, 1, "dirs_read")
    # Three replicas go to broker 1's /d1 while the read under way still shows it empty.
    ledger.record("t", "create", {0: [1], 1: [1], 2: [1]}, {(0, 1): "/d1", (1, 1): "/d1", (2, 1): "/d1"})
    cluster.gate.set()
    await refresh
    assert not ledger.freshness.due and cluster.dirs_read == 2
    # 3 + 3 placed against 3 on /d0: without the three counted, /d1 (empty as read) would take the next two too.
    assert await ledger.choose({0: [1]}, load_aware=True) == {(0, 1): "/d0"}
