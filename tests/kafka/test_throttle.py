"""The throttle controller (issue 32) on the real cluster: its rates appear on the brokers taking part in a move and
are gone after it, between brokers and between directories; a kill -9 mid-move leaves nothing behind once it is back;
someone else's rate is left alone, a rebalance's own throttle too; a partition outside the move that falls out of its
ISR, or a produce latency past its limit, drops the rates to the floor.

A move on this machine copies tens of MB a second unthrottled, faster than one look of the controller: so each move
starts where the controller sees it before it can copy (its destination broker down, under someone else's rate, or
under the controller's own from before a restart), and the controller's rates are then the ones that let it go on."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator

import pytest
from pydantic import ByteSize

from events import RebalanceState as S
from events import TOPICS, Decoded, ThrottleLedger, ThrottleRateChanged, ThrottleStatus
from events.envelope import utcnow
from events.throttle import OwnedBrokerConfig
from services.adapters.admin import INTRA_BROKER_THROTTLE
from services.adapters.admin.kafka import KafkaClusterAdmin
from services.common.busio import publish
from services.common.lease import lease_group
from services.common.outbox import MemoryOutbox
from services.common.settings import ByteRates, ThrottleSettings
from services.local.kafka_cluster import LocalKafka
from services.local.stack import LocalStack
from services.throttle.controller import ThrottleController
from services.throttle.moves import find_moves
from services.throttle.ownership import FOLLOWER_ITEMS, FOLLOWER_RATE, LEADER_ITEMS, LEADER_RATE, RATE_CONFIGS
from services.throttle.probe import LatencyProbe
from tests.integration.harness import Follower
from tests.integration.rebalancing import Rebalancing
from tests.kafka.conftest import eventually, fill, only, started_stack

# Each test chains several waits on a cluster (a broker restarted, a throttled move of megabytes, at the floor's
# 100 KB/s where the controller backs off): 48 s alone, over the 300 s default in a fresh clone's full run on a slow
# machine (2026-12-02), where the timeout said nothing of the step. With 600 s, a step that never ends fails in
# ``eventually`` (240 s), which names it.
pytestmark = pytest.mark.timeout(600)

# Kafka measures a replication quota over 11 one-second windows and counts a young one as 10 s long: a move copies
# about ten seconds' worth of its rate before the rate binds. A small ceiling keeps the tests' moves short and
# throttled; a large capacity keeps the rate at that ceiling whatever else the shared cluster carries meanwhile (its
# bus traffic, a restarted broker catching up), so that a drop to the floor is the back-off's.
FLOOR = 100_000
CEILING = 400_000
CAPACITY = 10_000_000
USERS_RATE = 250_000  # a rebalance's own throttle: none of the controller's rates (the floor times powers of two)
THROTTLE_ENV = {
    "BALLAST_THROTTLE__INTERVAL_S": "1",
    "BALLAST_THROTTLE__NETWORK_CAPACITY__DEFAULT": str(CAPACITY),
    "BALLAST_THROTTLE__DISK_CAPACITY__DEFAULT": str(2 * CAPACITY),
    "BALLAST_THROTTLE__FLOOR": str(FLOOR),
    "BALLAST_THROTTLE__CEILING": str(CEILING),
    "BALLAST_THROTTLE__BACK_OFF_HOLD_S": "3",
    "BALLAST_THROTTLE__TRAFFIC_SOURCE": "log-growth",
}


class Throttles(Follower):
    """The controller's statuses and changes since the test began (the topics hold every test's)."""

    def __init__(self, stack: LocalStack) -> None:
        self.since = utcnow()
        self.status: ThrottleStatus | None = None
        self.statuses: list[ThrottleStatus] = []
        self.changes: list[ThrottleRateChanged] = []
        super().__init__(stack.settings(), [TOPICS.throttle_status.name, TOPICS.throttle_changes.name])

    def take(self, decoded: Decoded) -> None:
        if decoded.envelope.time < self.since:
            return
        if isinstance(decoded.event, ThrottleStatus):
            self.status = decoded.event
            self.statuses.append(decoded.event)
        elif isinstance(decoded.event, ThrottleRateChanged):
            self.changes.append(decoded.event)

    def changes_of(self, broker: int) -> list[ThrottleRateChanged]:
        with self._changed:
            return [c for c in self.changes if c.broker == broker]

    def wait_last_change(self, broker: int, reason: str) -> list[ThrottleRateChanged]:
        """The broker's changes once the last of them has ``reason`` (the event follows the change it tells)."""
        self.wait(f"broker {broker}'s last rate change: {reason}",
                  lambda: any(c.broker == broker for c in self.changes)
                  and [c for c in self.changes if c.broker == broker][-1].reason == reason)
        return self.changes_of(broker)


# A cluster of its own, not the package's: the controller throttles every move in flight on its cluster, and the other
# modules' leftovers were moves too. On the shared cluster (a fresh clone's run, 2026-11-28), Kafka 4.3.1's
# alter-log-dirs thread failed (a NullPointerException in ReplicaAlterLogDirsThread.updateReassignmentState) while
# test_services' reconciler placed new replicas between directories, and left two future replicas that no thread
# copied any more: a move in flight for good, which the controller rightly kept throttling, and this module's tests
# waited on. tests/scheduling.py runs this module in a group of its own.
@pytest.fixture(scope="module")
def kafka_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalStack]:
    yield from started_stack(tmp_path_factory, "throttle-stack")


@pytest.fixture(scope="module")
def kafka(kafka_stack: LocalStack) -> LocalKafka:
    assert kafka_stack.kafka is not None
    return kafka_stack.kafka


@pytest.fixture(scope="module")
def controller(kafka_stack: LocalStack) -> Iterator[str]:
    name = "throttle"
    kafka_stack.instance_env[name] = THROTTLE_ENV
    kafka_stack.start_process(name)
    kafka_stack.wait_http(kafka_stack.health_url(name), name)
    try:
        yield name
    finally:
        kafka_stack.kill(name)


# How long the cluster must show no move before a test begins: the services finish earlier tests' work for a while
# after those tests end (seen on the shared cluster: the reconciler filling placeholders, and a replication-factor
# change the simulator executed, 15 s into this module's first test; the controller rightly throttled broker 4).
QUIET_S = 5.0


async def quiet(admin: KafkaClusterAdmin) -> None:
    """Wait until no reassignment and no move between directories has been in flight for QUIET_S."""
    quiet_since: float | None = None

    async def still() -> bool:
        nonlocal quiet_since
        moves = find_moves(await admin.list_reassignments(), await admin.describe_log_dirs())
        now = asyncio.get_running_loop().time()
        quiet_since = None if moves.in_flight else (quiet_since if quiet_since is not None else now)
        return quiet_since is not None and now - quiet_since >= QUIET_S

    await eventually(still, "a cluster with no move in flight", interval_s=0.5)


@pytest.fixture
async def throttles(kafka_stack: LocalStack, controller: str, admin: KafkaClusterAdmin) -> AsyncIterator[Throttles]:
    await quiet(admin)
    follower = Throttles(kafka_stack)
    yield follower
    follower.stop()


@pytest.fixture(autouse=True)
async def nothing_left(kafka: LocalKafka) -> object:
    """Whatever a test leaves (it failed half-way), no throttle stays on the cluster for the tests after."""
    yield
    admin = KafkaClusterAdmin({"bootstrap_servers": kafka.bootstrap_servers}, timeout_s=15)
    try:
        for broker in kafka.brokers:
            if kafka.brokers[broker].running:
                left = {k: None for k in await admin.broker_configs(broker) if k in RATE_CONFIGS}
                await admin.alter_broker_configs(broker, left)
    finally:
        await admin.aclose()


async def rates(admin: KafkaClusterAdmin, broker: int) -> dict[str, str]:
    return {k: v for k, v in (await admin.broker_configs(broker)).items() if k in RATE_CONFIGS}


async def items(admin: KafkaClusterAdmin, topic: str) -> dict[str, str]:
    configs = (await admin.topic_configs([topic])).get(topic, {})
    return {k: v for k, v in configs.items() if k in (LEADER_ITEMS, FOLLOWER_ITEMS)}


async def moved(admin: KafkaClusterAdmin, topic: str) -> bool:
    return not await admin.list_reassignments([topic])


async def move_to_a_broker_that_is_down(admin: KafkaClusterAdmin, kafka: LocalKafka, topic: str, source: int,
                                        destination: int, mb: float) -> None:
    await admin.create_topic(topic, 1, 1, assignment=[[source]])
    fill(kafka.bootstrap_servers, topic, 1, mb)
    kafka.kill_broker(destination)
    kafka.wait_fenced(destination)
    # The admin client may still pick the killed broker for a moment: the request again, to another.
    await eventually(lambda: _reassign(admin, topic, destination), f"{topic} reassigned to {destination}")


async def _reassign(admin: KafkaClusterAdmin, topic: str, destination: int) -> bool:
    await admin.reassign_partitions(topic, {0: [destination]})
    return True


async def test_rates_appear_on_the_brokers_taking_part_and_are_gone_after_the_move(
        kafka: LocalKafka, admin: KafkaClusterAdmin, throttles: Throttles, name: str) -> None:
    await move_to_a_broker_that_is_down(admin, kafka, name, 1, 2, 8)
    # The sending side first: broker 1's leader rate, and its replica in the topic's list.
    await eventually(lambda: _has(admin, 1, LEADER_RATE), "the controller's rate on broker 1")
    # Its list entry follows the rate (the rates are set first).
    await eventually(lambda: _items_are(admin, name, {LEADER_ITEMS: "0:1"}), "broker 1's replica in the leader list")
    kafka.start_broker(2)
    await eventually(lambda: _has(admin, 2, FOLLOWER_RATE), "the controller's rate on broker 2, back")
    both = {LEADER_ITEMS: "0:1", FOLLOWER_ITEMS: "0:2"}
    await eventually(lambda: _items_are(admin, name, both), "both replicas in the topic's lists")
    for outside in (3, 4):
        assert await rates(admin, outside) == {}, f"broker {outside} takes no part in the move"
    await eventually(lambda: moved(admin, name), "the move to end", timeout_s=120)
    await eventually(lambda: _none_left(admin, name, (1, 2)), "every throttle gone")
    # Each change said with its reason; the last of each broker's: the end of the moves.
    for broker in (1, 2):
        changes = throttles.wait_last_change(broker, "moves-ended")
        assert changes[0].from_bytes_per_s is None and changes[0].to_bytes_per_s, changes
        assert changes[-1].to_bytes_per_s is None, changes
    # While this move alone was in flight (an earlier test's services may still start one of their own).
    alone = [s for s in throttles.statuses if s.moving_partitions == 1 and s.moving_log_dirs == 0]
    seen = [b for s in alone for b in s.brokers if b.owner == "ballast"]
    assert {b.broker for b in seen} == {1, 2} and all(b.capacity_bytes_per_s == CAPACITY for b in seen), seen
    assert all(b.bytes_per_s is not None and FLOOR <= b.bytes_per_s <= CEILING for b in seen), seen
    assert any(s.traffic_source == "log-growth" and s.moving_partitions for s in throttles.statuses)


async def test_a_move_between_directories_under_the_controllers_rate_from_before_a_restart_is_taken_over(
        kafka_stack: LocalStack, kafka: LocalKafka, admin: KafkaClusterAdmin, throttles: Throttles,
        controller: str, name: str) -> None:
    """Between directories, a move copies faster than the controller looks; so it starts here under a rate the
    controller set before it was killed (its ledger says so), as after a crash mid-move."""
    broker = 3
    await admin.create_topic(name, 1, 1, assignment=[[broker]])
    fill(kafka.bootstrap_servers, name, 1, 8)

    async def where() -> str | None:
        # A description names a replica's directory once its broker answers DescribeLogDirs (best effort: on a
        # crowded machine, seen in a fresh clone's run, broker 3 did not answer the first time).
        described = (await admin.describe_topics([name]))[name]
        return dict(described.partitions[0].log_dirs).get(broker) if described else None

    source = await eventually(where, f"{name}'s directory on broker {broker}")
    destination = next(str(d) for d in kafka.log_dirs(broker) if str(d) != source)
    kafka_stack.kill(controller)
    left = "200000"
    publish(kafka_stack.settings().bus, TOPICS.throttle_ledger, [ThrottleLedger(broker_configs=[
        OwnedBrokerConfig(broker=broker, config=INTRA_BROKER_THROTTLE, values=[left])])])
    await admin.alter_broker_configs(broker, {INTRA_BROKER_THROTTLE: left})
    await admin.alter_replica_log_dirs(name, {(0, broker): destination})
    kafka_stack.start_process(controller)
    kafka_stack.wait_http(kafka_stack.health_url(controller), controller)
    # Its own rate, from the directories' headroom, in place of the one it left.
    await eventually(lambda: _above(admin, broker, INTRA_BROKER_THROTTLE, int(left)), "the intra rate raised")
    assert throttles.status is not None and {d.log_dir for d in throttles.status.log_dirs} >= {source, destination}

    async def in_destination() -> bool:
        now = (await admin.describe_topics([name]))[name]
        return now is not None and dict(now.partitions[0].log_dirs).get(broker) == destination \
            and now.partitions[0].replica_info[0].future_log_dir is None

    await eventually(in_destination, "the replica in its new directory", timeout_s=120)
    await eventually(lambda: _no_rates(admin, broker), "the intra rate gone")
    changes = throttles.wait_last_change(broker, "moves-ended")
    assert changes[0].from_bytes_per_s == int(left) and changes[0].reason == "headroom", changes
    assert changes[-1].to_bytes_per_s is None, changes


async def test_someone_elses_rate_stays_and_only_the_controllers_own_are_removed(
        kafka: LocalKafka, admin: KafkaClusterAdmin, throttles: Throttles, name: str) -> None:
    await admin.create_topic(name, 1, 1, assignment=[[1]])
    fill(kafka.bootstrap_servers, name, 1, 8)
    # As Kafka's reassignment tool sets a fixed --throttle: the rates on the sender, and its replica listed.
    theirs = "400000"
    await admin.alter_broker_configs(1, {LEADER_RATE: theirs, FOLLOWER_RATE: theirs})
    await admin.alter_configs(name, {LEADER_ITEMS: "0:1"})
    await admin.reassign_partitions(name, {0: [2]})
    try:
        await eventually(lambda: _has(admin, 2, FOLLOWER_RATE), "the controller's rate on broker 2")
        assert await rates(admin, 1) == {LEADER_RATE: theirs, FOLLOWER_RATE: theirs}
        await eventually(lambda: moved(admin, name), "the move to end", timeout_s=120)
        await eventually(lambda: _no_rates(admin, 2), "the controller's rate on broker 2 gone")
        assert await rates(admin, 1) == {LEADER_RATE: theirs, FOLLOWER_RATE: theirs}, "someone else's rate changed"
        # The controller's own entry leaves the lists after its rate (rates first, then lists); theirs stays.
        await eventually(lambda: _items_are(admin, name, {LEADER_ITEMS: "0:1"}), "only someone else's list left")
        assert not throttles.changes_of(1), "the controller changed broker 1, whose rate is someone else's"
    finally:
        await admin.alter_broker_configs(1, {LEADER_RATE: None, FOLLOWER_RATE: None})


async def test_a_kill_9_mid_move_leaves_no_throttle_once_the_controller_is_back(
        kafka_stack: LocalStack, kafka: LocalKafka, admin: KafkaClusterAdmin, throttles: Throttles,
        controller: str, name: str) -> None:
    await move_to_a_broker_that_is_down(admin, kafka, name, 1, 2, 8)
    await eventually(lambda: _has(admin, 1, LEADER_RATE), "the controller's rate on broker 1")
    await eventually(lambda: _items_are(admin, name, {LEADER_ITEMS: "0:1"}), "broker 1's replica in the leader list")
    kafka_stack.kill(controller)
    # While it is gone the move ends (cancelled here): its rate and list entry stay behind.
    await admin.cancel_reassignments(name, [0])
    await eventually(lambda: moved(admin, name), "the move to end")
    await asyncio.sleep(1.0)
    assert LEADER_RATE in await rates(admin, 1) and LEADER_ITEMS in await items(admin, name)
    kafka_stack.start_process(controller)
    kafka_stack.wait_http(kafka_stack.health_url(controller), controller)
    await eventually(lambda: _none_left(admin, name, (1,)), "the leftovers removed after the restart")
    throttles.wait_last_change(1, "leftover")
    kafka.start_broker(2)


async def test_a_partition_outside_the_move_out_of_its_isr_drops_the_rates_to_the_floor_at_once(
        kafka: LocalKafka, admin: KafkaClusterAdmin, throttles: Throttles, name: str) -> None:
    outside = f"{name}-outside"
    try:
        await move_to_a_broker_that_is_down(admin, kafka, name, 1, 2, 8)
        # The follower to stop: not the broker that coordinates the controller's lease (killing that one would make
        # the controller lose its lease and start over, blind to an ISR that shrank meanwhile).
        coordinator = await lease_coordinator(admin, "throttle")
        follower = 4 if coordinator != 4 else 3
        await admin.create_topic(outside, 1, 2, assignment=[[7 - follower, follower]])
        fill(kafka.bootstrap_servers, outside, 1, 1)
        # The rate climbs from the floor while nothing lags (broker 2's replicas are out of their ISR because it is
        # down: not counted).
        await eventually(lambda: _above(admin, 1, LEADER_RATE, FLOOR), "broker 1's rate above the floor")
        kafka.kill_broker(follower)  # the follower of the partition outside the move stops

        def backed_off(status: ThrottleStatus) -> bool:
            return status.back_off == "isr-back-off" and f"{outside}-0" in status.lagging_partitions \
                and any(b.broker == 1 and b.reason == "isr-back-off" and b.bytes_per_s == FLOOR for b in status.brokers)

        # Every status and change since the test began (the hold is short: the rate may climb again soon after).
        throttles.wait("the back-off in a status: broker 1 at the floor, the partition that caused it named",
                       lambda: any(backed_off(s) for s in throttles.statuses))
        throttles.wait("broker 1's rate changed to the floor for the back-off", lambda: any(
            c.broker == 1 and c.reason == "isr-back-off" for c in throttles.changes))
        drop = next(c for c in throttles.changes_of(1) if c.reason == "isr-back-off")
        assert drop.kind == "inter-broker" and drop.to_bytes_per_s == FLOOR, drop
        assert drop.from_bytes_per_s is not None and drop.from_bytes_per_s > FLOOR, drop
        # (Asked again: the admin client may first send it to the broker just killed.)
        await eventually(lambda: _cancelled(admin, name), "the move cancelled")
        await eventually(lambda: _none_left(admin, name, (1,)), "every throttle gone")
    finally:
        # Its move cancelled, lest it keep the next test's moves company.
        await eventually(lambda: _cancelled(admin, name), "the move cancelled")
        for broker in (3, 4, 2):
            if not kafka.brokers[broker].running:
                kafka.start_broker(broker)


async def test_a_produce_latency_past_its_limit_drops_the_rates_to_the_floor(
        kafka_stack: LocalStack, kafka: LocalKafka, admin: KafkaClusterAdmin, controller: str, name: str) -> None:
    """The controller runs in this test's process, with the probe; the service's is stopped meanwhile (each would take
    the other's rates for someone else's). No latency can be raised on purpose here: the limit is set under what the
    probe measures, once the rate has climbed with the limit above it."""
    kafka_stack.kill(controller)
    probe = LatencyProbe({"bootstrap_servers": kafka.bootstrap_servers}, f"{name}-probe", every_s=0.1, window_s=5)
    settings = ThrottleSettings(interval_s=1, floor=ByteSize(FLOOR), ceiling=ByteSize(CEILING), back_off_hold_s=3,
                                latency_limit_ms=60_000, traffic_source="log-growth",
                                network_capacity=ByteRates(default=ByteSize(CAPACITY)))
    ours = ThrottleController(settings, admin, MemoryOutbox(), probe)
    try:
        await ours.start()
        await probe.start(admin)

        async def probe_partitions() -> int | None:
            # The broker answering may not know the probe's topic yet, moments after its creation (seen loaded).
            return len((await admin.partition_states()).get(f"{name}-probe", ())) or None

        assert await eventually(probe_partitions, "the probe's topic in the brokers' metadata") == 4, \
            "one partition of the probe per broker"
        await move_to_a_broker_that_is_down(admin, kafka, name, 1, 2, 8)

        async def looked(check: Callable[[], Awaitable[bool]]) -> bool:
            try:
                await ours.look()
            except Exception as exc:  # noqa: BLE001 -- a look handles the cluster's errors; anything else is a bug
                pytest.fail(f"a look raised {exc!r}")  # not swallowed by ``eventually``
            return await check()

        await eventually(lambda: looked(lambda: _above(admin, 1, LEADER_RATE, FLOOR)),
                         "broker 1's rate above the floor", interval_s=0.5)
        measured = probe.p99_ms()
        assert measured is not None and 0 < measured < 60_000, measured
        ours.settings = settings.model_copy(update={"latency_limit_ms": measured / 2})

        async def latency_back_off() -> bool:
            return ours.status.back_off == "latency-back-off" and await _has(admin, 1, LEADER_RATE) == str(FLOOR)

        await eventually(lambda: looked(latency_back_off), "the latency back-off: broker 1 at the floor",
                         interval_s=0.5)
        assert ours.status.latency_p99_ms is not None and ours.status.latency_p99_ms > measured / 2, ours.status
        assert any(b.broker == 1 and b.reason == "latency-back-off" for b in ours.status.brokers), ours.status
        await admin.cancel_reassignments(name, [0])
        await eventually(lambda: looked(lambda: _none_left(admin, name, (1,))), "every throttle gone", interval_s=0.5)
    finally:
        probe.close()
        if not kafka.brokers[2].running:
            kafka.start_broker(2)
        kafka_stack.start_process(controller)
        kafka_stack.wait_http(kafka_stack.health_url(controller), controller)


async def test_a_rebalance_with_a_fixed_throttle_keeps_it_and_the_controller_sets_none(
        rb: Rebalancing, kafka: LocalKafka, admin: KafkaClusterAdmin, throttles: Throttles, name: str) -> None:
    """A user's ``replicationThrottle`` on a rebalance wins: Cruise Control (the simulator, executing on the real
    cluster) sets it on the brokers batch by batch; the controller names it fixed and sets no rate of its own."""
    await admin.create_topic(name, 6, 2, assignment=[[1, 2], [2, 1]] * 3)
    fill(kafka.bootstrap_servers, name, 6, 1)
    rb.request(name=name, auto_approve=True, excluded_topics=only(name), replication_throttle=USERS_RATE,
               concurrent_partition_movements_per_broker=1)

    def fixed(status: ThrottleStatus) -> bool:
        return any(b.reason == "fixed" and b.owner == "other" and b.bytes_per_s == USERS_RATE for b in status.brokers)

    throttles.wait("the rebalance's rate in a status, named fixed", lambda: any(fixed(s) for s in throttles.statuses))
    rb.wait_for(name, lambda s: any(t.reason == "fixed" and t.bytes_per_s == USERS_RATE for t in s.throttles),
                "the rebalance's status showing its rate as fixed")
    rb.wait_state(name, S.READY)
    await eventually(lambda: _none_left(admin, name, (1, 2, 3, 4)), "every throttle gone")
    assert throttles.changes == [], "the controller set no rate of its own"


async def lease_coordinator(admin: KafkaClusterAdmin, service: str) -> int | None:
    """The broker coordinating ``service``'s lease group: the leader of the ``__consumer_offsets`` partition Kafka
    keeps the group in: the absolute value of the group id's Java hash code, modulo the partitions."""
    described = (await admin.describe_topics(["__consumer_offsets"]))["__consumer_offsets"]
    assert described is not None
    code = 0
    for char in lease_group(service):
        code = (31 * code + ord(char)) & 0xFFFFFFFF
    signed = code - (1 << 32) if code >= 1 << 31 else code
    positive = abs(signed) if signed != -(1 << 31) else 0  # Kafka's Utils.abs
    return described.partitions[positive % len(described.partitions)].leader


async def _cancelled(admin: KafkaClusterAdmin, topic: str) -> bool:
    if await admin.list_reassignments([topic]):
        await admin.cancel_reassignments(topic, [0])
    return not await admin.list_reassignments([topic])


async def _has(admin: KafkaClusterAdmin, broker: int, config: str) -> str | None:
    return (await rates(admin, broker)).get(config)


async def _above(admin: KafkaClusterAdmin, broker: int, config: str, floor: int) -> bool:
    value = await _has(admin, broker, config)
    return value is not None and int(value) > floor


async def _items_are(admin: KafkaClusterAdmin, topic: str, wanted: dict[str, str]) -> bool:
    return await items(admin, topic) == wanted


async def _no_rates(admin: KafkaClusterAdmin, broker: int) -> bool:
    return await rates(admin, broker) == {}


async def _none_left(admin: KafkaClusterAdmin, topic: str, brokers: tuple[int, ...]) -> bool:
    for broker in brokers:
        if await rates(admin, broker):
            return False
    return await items(admin, topic) == {}
