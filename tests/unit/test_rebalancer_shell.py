"""The rebalancer's shell driven through its ports without a broker: a request handed to its handler, its timers'
ticks (the step timer's, the brokers timer's look) called directly, Cruise Control and the cluster the simulator, the
bus an in-memory outbox."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from events import TOPICS, RebalanceAction, RebalanceRequest, RebalanceState, RebalanceStatus
from services.cluster_sim.app import Simulator
from services.common.outbox import MemoryOutbox
from services.common.settings import Settings
from services.rebalancer.app import RebalancerService
from services.rebalancer.observers.look import ClusterLook
from services.rebalancer.observers.shared import Shared
from services.rebalancer.observers.timer import Concern, Observers
from services.rebalancer.rebalances import Rebalances
from tests.unit.records import record
from tests.unit.simulated import FOUR_BROKERS, QUICK_EXECUTIONS, simulated_cluster


@pytest.fixture
async def service(stack) -> AsyncIterator[tuple[Rebalances, MemoryOutbox]]:
    rebalancer, outbox, _ = stack
    yield rebalancer, outbox


@pytest.fixture
def stack(started: tuple[RebalancerService, Simulator]) -> tuple[Rebalances, MemoryOutbox, Simulator]:
    service, simulator = started
    assert isinstance(service.outbox, MemoryOutbox)
    return service.rebalances, service.outbox, simulator


@pytest.fixture
def observers(started: tuple[RebalancerService, Simulator]) -> Observers:
    return started[0].observers


@pytest.fixture
async def started(tmp_path: Path) -> AsyncIterator[tuple[RebalancerService, Simulator]]:
    async with simulated_cluster(brokers=FOUR_BROKERS, **QUICK_EXECUTIONS) as cluster:
        await cluster.admin.create_topic("a", 8, 2, assignment=[[1, 2]] * 8)  # all on two brokers: to balance
        service = RebalancerService(Settings(data_dir=tmp_path), admin=cluster.admin,
                                    cruise_control=cluster.cruise_control(), outbox=MemoryOutbox())
        await service.start()
        yield service, cluster.simulator


async def until(rebalancer: Rebalances, outbox: MemoryOutbox, state: RebalanceState) -> RebalanceStatus:
    for _ in range(100):
        await rebalancer.tick()
        statuses = outbox.on(TOPICS.rebalance_status)
        if statuses and statuses[-1].state == state:
            return statuses[-1]
        await asyncio.sleep(0.05)
    raise AssertionError(f"never {state}: {[s.state for s in outbox.on(TOPICS.rebalance_status)]}")


async def test_a_request_gets_a_proposal_and_approval_executes_it(service) -> None:
    rebalancer, outbox = service
    await rebalancer.on_request_events([record(TOPICS.rebalance_requests, RebalanceRequest(name="even"), 0)])
    ready = await until(rebalancer, outbox, RebalanceState.PROPOSAL_READY)
    assert ready.summary is not None and ready.summary.num_replica_movements > 0
    await rebalancer.on_action_events([record(TOPICS.rebalance_actions,
                                              RebalanceAction(name="even", action="approve"), 0)])
    await until(rebalancer, outbox, RebalanceState.READY)


async def test_a_throttled_execution_records_its_throttle_and_a_cluster_without_throttles_drops_it(service) -> None:
    """The execution's answer lists its moves (verbose), which say where Cruise Control's throttle goes; the
    simulator's own cluster keeps no throttles, so once the rebalance is Ready there is nothing to remove or say."""
    rebalancer, outbox = service
    request = RebalanceRequest(name="fast", auto_approve=True, replication_throttle=10_000_000_000)
    await rebalancer.on_request_events([record(TOPICS.rebalance_requests, request, 0)])
    ready = await until(rebalancer, outbox, RebalanceState.READY)
    executing = [s for s in outbox.on(TOPICS.rebalance_status) if s.cruise_control_throttle is not None]
    assert executing and executing[-1].cruise_control_throttle.rates == [10_000_000_000]
    assert {r.topic for r in executing[-1].cruise_control_throttle.replicas} == {"a"}
    for _ in range(3):
        await rebalancer.tick()
    latest = rebalancer.statuses["fast"]
    assert latest.cruise_control_throttle is None and latest.conditions == ready.conditions
    assert latest.message == "Rebalance complete"


async def test_an_action_on_an_unknown_rebalance_is_a_dead_letter(service) -> None:
    rebalancer, outbox = service
    await rebalancer.on_action_events([record(TOPICS.rebalance_actions,
                                              RebalanceAction(name="nope", action="approve"), 0)])
    (letter,) = outbox.on(TOPICS.dead_letters)
    assert "no rebalance named 'nope'" in letter.reason


async def test_remove_disks_empties_a_volume_keeps_it_empty_and_releases_it(service, observers) -> None:
    rebalancer, outbox = service
    admin = rebalancer.admin
    data0, data1 = "/var/kafka/data-0", "/var/kafka/data-1"
    request = RebalanceRequest.model_validate({
        "name": "drain-1", "mode": "remove-disks", "autoApprove": True, "intraBrokerThrottle": 1_000_000,
        "moveReplicasOffVolumes": [{"brokerId": 1, "volumeIds": [1]}]})
    await rebalancer.on_request_events([record(TOPICS.rebalance_requests, request, 0)])
    ready = await until(rebalancer, outbox, RebalanceState.READY)
    assert [(d.broker, d.log_dirs) for d in ready.removed_log_dirs] == [(1, [data1])]
    assert ready.summary is not None and ready.summary.num_intra_broker_replica_movements > 0
    assert ready.summary.num_replica_movements == 0

    async def dirs_of_broker_1() -> list[str]:
        described = (await admin.describe_topics(["a"]))["a"]
        return [dict(p.log_dirs)[1] for p in described.partitions]

    assert set(await dirs_of_broker_1()) == {data0}
    # A replica put there behind Ballast's back is moved off at the next look.
    await admin.alter_replica_log_dirs("a", {(0, 1): data1})
    assert data1 in await dirs_of_broker_1()
    await observers.look()
    assert set(await dirs_of_broker_1()) == {data0}
    await observers.look()
    kept = rebalancer.statuses["drain-1"].condition("DisksEmpty")
    assert kept is not None and kept.status == "True"
    # Released: placement may use it again, and nothing moves it off any more.
    await rebalancer.on_action_events([record(TOPICS.rebalance_actions,
                                              RebalanceAction(name="drain-1", action="release"), 0)])
    assert rebalancer.statuses["drain-1"].released
    await admin.alter_replica_log_dirs("a", {(0, 1): data1})
    await observers.look()
    assert data1 in await dirs_of_broker_1()


async def test_remove_disks_naming_a_volume_the_broker_lacks_is_not_ready_with_the_reason(service) -> None:
    rebalancer, outbox = service
    request = RebalanceRequest.model_validate({
        "name": "drain-9", "mode": "remove-disks", "moveReplicasOffVolumes": [{"brokerId": 1, "volumeIds": [9]}]})
    await rebalancer.on_request_events([record(TOPICS.rebalance_requests, request, 0)])
    refused = await until(rebalancer, outbox, RebalanceState.NOT_READY)
    assert "volume 9 matches no log directories" in (refused.message or "")


async def test_a_failed_disk_is_reported_at_the_next_look_and_remediated_when_allowed(
        stack, observers) -> None:
    import httpx

    from events import BrokerStatus

    rebalancer, outbox, simulator = stack
    rebalancer.tuning = rebalancer.tuning.model_copy(update={"remediate_failed_disks": True})
    data0, data1 = "/var/kafka/data-0", "/var/kafka/data-1"
    await rebalancer.admin.alter_replica_log_dirs("a", {(p, 1): (data0, data1)[p % 2] for p in range(8)})
    await observers.look()
    first = {s.broker: s for s in outbox.on(TOPICS.broker_status)}
    assert set(first) == {1, 2, 3, 4} and first[1].condition("LogDirsOffline").status == "False"
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{simulator.settings.admin_port}") as sim:
        failed = (await sim.post("/faults/brokers/1/log-dirs/fail", json={"path": data1})).json()
    assert failed["offlineReplicas"] == 4
    await observers.look()
    latest: BrokerStatus = outbox.on(TOPICS.broker_status)[-1]
    assert latest.broker == 1 and [(d.path, d.online) for d in latest.log_dirs] == [(data0, True), (data1, False)]
    condition = latest.condition("LogDirsOffline")
    assert condition.status == "True" and data1 in condition.message
    # Remediation: a fix-offline-replicas rebalance, auto-approved, moves the four offline replicas off broker 1.
    (request,) = outbox.on(TOPICS.rebalance_requests)
    assert request.mode == "fix-offline-replicas" and request.auto_approve
    await rebalancer.on_request_events([record(TOPICS.rebalance_requests, request, 0)])
    ready = await until(rebalancer, outbox, RebalanceState.READY)
    assert ready.summary.num_replica_movements == 4
    described = (await rebalancer.admin.describe_topics(["a"]))["a"]
    assert [p.offline for p in described.partitions] == [()] * 8
    assert sum(1 for p in described.partitions if 1 in p.replicas) == 4  # those on the healthy disk stay
    await observers.look()  # the same failure does not ask again
    assert len(outbox.on(TOPICS.rebalance_requests)) == 1


async def test_disks_drifting_apart_request_a_disk_rebalance_once_and_not_while_another_runs(
        stack, observers) -> None:
    from datetime import timedelta

    from events import LoadAggregate
    from events.envelope import utcnow

    rebalancer, outbox, _ = stack
    auto = rebalancer.tuning.auto.model_copy(update={"disk_drift": 0.5, "disk_drift_min_mb": 100.0,
                                                     "rebalance_disk": {"autoApprove": True}})
    rebalancer.tuning = rebalancer.tuning.model_copy(update={"auto": auto})
    now = utcnow()

    def window(broker: int, log_dir: str, mb: float) -> LoadAggregate:
        return LoadAggregate(window_start=now - timedelta(seconds=70), window_end=now - timedelta(seconds=10),
                             entity_kind="log-dir", entity=f"{broker}:{log_dir}", disk_mb=mb, replicas=4)

    rebalancer.recent_load.take(window(1, "/var/kafka/data-0", 900.0))
    rebalancer.recent_load.take(window(1, "/var/kafka/data-1", 700.0))  # within 50 % of the mean: nothing
    await observers.look()
    assert outbox.on(TOPICS.rebalance_requests) == []
    rebalancer.recent_load.take(window(2, "/var/kafka/data-0", 900.0))
    rebalancer.recent_load.take(window(2, "/var/kafka/data-1", 100.0))  # 800 MB apart: 160 % of the mean
    await observers.look()
    (request,) = outbox.on(TOPICS.rebalance_requests)
    assert request.rebalance_disk and request.auto_approve and request.name.startswith("auto-rebalance-disk-")
    await observers.look()  # asked already: its status is there, not finished
    assert len(outbox.on(TOPICS.rebalance_requests)) == 1
    await rebalancer.on_request_events([record(TOPICS.rebalance_requests, request, 0)])
    await until(rebalancer, outbox, RebalanceState.READY)
    await observers.look()  # finished, but within the cooldown
    assert len(outbox.on(TOPICS.rebalance_requests)) == 1


async def test_an_observer_that_fails_is_logged_by_its_concern_and_the_others_still_look(stack, observers) -> None:
    import httpx
    from structlog.testing import capture_logs

    from services.adapters.admin import OperationRefused

    rebalancer, outbox, simulator = stack
    looked: list[list[int]] = []

    async def bug(shared: Shared, look: ClusterLook) -> None:
        raise RuntimeError("a bug in this concern")

    async def refused(shared: Shared, look: ClusterLook) -> None:
        raise OperationRefused("the cluster said no")

    async def last(shared: Shared, look: ClusterLook) -> None:
        looked.append(look.alive)

    observers.concerns = [Concern("bug", bug), Concern("refused", refused), *observers.concerns, Concern("last", last)]
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{simulator.settings.admin_port}") as sim:
        await sim.post("/faults/brokers/1/log-dirs/fail", json={"path": "/var/kafka/data-1"})
    reported = len(outbox.on(TOPICS.broker_status))
    with capture_logs() as logs:
        await observers.look()
    failed = {e["concern"]: e["log_level"] for e in logs if "concern" in e}
    assert failed == {"bug": "error", "refused": "warning"}
    # The real concerns after them still did their work: broker 1's failed disk is reported.
    assert [s.broker for s in outbox.on(TOPICS.broker_status)[reported:]] == [1]
    assert looked == [[1, 2, 3, 4]]
