"""Rebalances and cordons (issue 55), the rebalancer driven through its ports on the simulator: a full or
remove-brokers rebalance names only uncordoned brokers as Cruise Control's ``destination_broker_ids`` (the simulator
honours them as Cruise Control does), adding a fully cordoned broker is refused, and a proposal that moves replicas
onto a cordoned place is shown with ``CordonsCrossed`` and executes only when approved knowingly."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from events import TOPICS, RebalanceAction, RebalanceMode, RebalanceRequest, RebalanceState, RebalanceStatus
from events.conditions import CORDONS_CROSSED, INVALID_ACTION
from services.adapters.admin import CORDONED_LOG_DIRS
from services.adapters.admin.simulator import SimulatorClusterAdmin
from services.adapters.cruise_control.models import OptimizationResult
from services.cluster_sim.app import Simulator
from services.common.outbox import MemoryOutbox
from services.common.settings import Settings
from services.domain.cordons import Cordons, rebalance_destinations
from services.rebalancer import cordon_check
from services.rebalancer.app import RebalancerService
from services.rebalancer.rebalances import Rebalances
from tests.unit.records import record
from tests.unit.simulated import FOUR_BROKERS, QUICK_EXECUTIONS, simulated_cluster


class Stack:
    def __init__(self, rebalancer: Rebalances, outbox: MemoryOutbox, simulator: Simulator,
                 admin: SimulatorClusterAdmin) -> None:
        self.rebalancer, self.outbox, self.simulator, self.admin = rebalancer, outbox, simulator, admin

    async def request(self, request: RebalanceRequest) -> None:
        await self.rebalancer.on_request_events([record(TOPICS.rebalance_requests, request, 0)])

    async def act(self, action: RebalanceAction) -> None:
        await self.rebalancer.on_action_events([record(TOPICS.rebalance_actions, action, 0)])

    async def until(self, state: RebalanceState) -> RebalanceStatus:
        for _ in range(200):
            await self.rebalancer.tick()
            statuses = self.outbox.on(TOPICS.rebalance_status)
            if statuses and statuses[-1].state == state and not statuses[-1].checking_approval:
                return statuses[-1]
            await asyncio.sleep(0.05)
        raise AssertionError(f"never {state}: {[s.state for s in self.outbox.on(TOPICS.rebalance_status)]}")

    def brokers_of(self, topic: str) -> set[int]:
        return {b for p in self.simulator.cluster.topics[topic].partitions for b in p.replicas}


@pytest.fixture
async def stack(tmp_path: Path) -> AsyncIterator[Stack]:
    async with simulated_cluster(brokers=FOUR_BROKERS, **QUICK_EXECUTIONS) as cluster:
        # Everything on brokers 1-3, broker 4 empty: a full rebalance would fill broker 4 first.
        await cluster.admin.create_topic("a", 12, 2, assignment=[[1, 2], [2, 3], [3, 1]] * 4)
        outbox = MemoryOutbox()
        service = RebalancerService(Settings(data_dir=tmp_path), admin=cluster.admin,
                                    cruise_control=cluster.cruise_control(), outbox=outbox)
        await service.start()
        yield Stack(service.rebalances, outbox, cluster.simulator, cluster.admin)


async def test_a_full_rebalance_moves_nothing_onto_a_fully_cordoned_broker(stack: Stack) -> None:
    await stack.admin.alter_broker_configs(4, {CORDONED_LOG_DIRS: "*"})
    await stack.request(RebalanceRequest(name="even", auto_approve=True))
    done = await stack.until(RebalanceState.READY)
    assert done.condition(CORDONS_CROSSED) is None
    assert stack.brokers_of("a") == {1, 2, 3}
    # Uncordoned, broker 4 is a destination again.
    await stack.admin.alter_broker_configs(4, {CORDONED_LOG_DIRS: None})
    await stack.act(RebalanceAction(name="even", action="refresh"))
    await stack.until(RebalanceState.PROPOSAL_READY)
    await stack.act(RebalanceAction(name="even", action="approve"))
    await stack.until(RebalanceState.READY)
    assert 4 in stack.brokers_of("a")


async def test_removing_a_broker_drains_it_onto_uncordoned_brokers_only(stack: Stack) -> None:
    await stack.admin.alter_broker_configs(4, {CORDONED_LOG_DIRS: "*"})
    await stack.request(RebalanceRequest(name="drain-3", mode=RebalanceMode.REMOVE_BROKERS, brokers=[3],
                                         auto_approve=True))
    await stack.until(RebalanceState.READY)
    assert stack.brokers_of("a") == {1, 2}


async def test_adding_a_fully_cordoned_broker_is_refused_with_the_reason(stack: Stack) -> None:
    await stack.admin.alter_broker_configs(4, {CORDONED_LOG_DIRS: "*"})
    await stack.request(RebalanceRequest(name="add-4", mode=RebalanceMode.ADD_BROKERS, brokers=[4]))
    refused = await stack.until(RebalanceState.NOT_READY)
    assert "broker(s) 4 have all their log directories cordoned" in (refused.message or "")
    assert stack.brokers_of("a") == {1, 2, 3}


async def test_removing_brokers_with_nowhere_uncordoned_left_is_refused(stack: Stack) -> None:
    for broker in (3, 4):
        await stack.admin.alter_broker_configs(broker, {CORDONED_LOG_DIRS: "*"})
    await stack.request(RebalanceRequest(name="drain-1-2", mode=RebalanceMode.REMOVE_BROKERS, brokers=[1, 2],
                                         auto_approve=True))
    refused = await stack.until(RebalanceState.NOT_READY)
    assert "no broker would take the replicas" in (refused.message or "")
    assert stack.brokers_of("a") == {1, 2, 3}


async def test_a_full_rebalance_with_every_broker_cordoned_is_refused_not_sent_unrestricted(stack: Stack) -> None:
    for broker in (1, 2, 3, 4):
        await stack.admin.alter_broker_configs(broker, {CORDONED_LOG_DIRS: "*"})
    await stack.request(RebalanceRequest(name="even", auto_approve=True))
    refused = await stack.until(RebalanceState.NOT_READY)
    assert "no broker would take the replicas" in (refused.message or "")
    assert stack.brokers_of("a") == {1, 2, 3}


async def test_a_proposal_crossing_a_cordon_waits_for_a_knowing_approval(stack: Stack) -> None:
    """Emptying broker 1's one uncordoned directory can only fill its cordoned one: Cruise Control (which knows no
    cordons) proposes it all the same; Ballast sees it in the proposal's per-directory figures."""
    data0, data1 = "/var/kafka/data-0", "/var/kafka/data-1"
    await stack.admin.alter_broker_configs(1, {CORDONED_LOG_DIRS: data1})
    await stack.admin.alter_replica_log_dirs("a", {(p, 1): data0 for p in range(12) if p % 3 != 1})
    request = RebalanceRequest.model_validate({
        "name": "off-0", "mode": "remove-disks", "autoApprove": True,
        "moveReplicasOffVolumes": [{"brokerId": 1, "logDirs": [data0]}]})
    await stack.request(request)
    shown = await stack.until(RebalanceState.PROPOSAL_READY)
    crossed = shown.condition(CORDONS_CROSSED)
    assert crossed is not None and f"into broker 1's cordoned directory {data1}" in (crossed.message or "")
    for _ in range(5):  # auto-approval is never knowing
        await stack.rebalancer.tick()
    assert stack.outbox.on(TOPICS.rebalance_status)[-1].state == RebalanceState.PROPOSAL_READY
    await stack.act(RebalanceAction(name="off-0", action="approve"))
    warned = stack.outbox.on(TOPICS.rebalance_status)[-1]
    assert warned.state == RebalanceState.PROPOSAL_READY and warned.condition(INVALID_ACTION) is not None
    assert "accept_cordoned" in (warned.condition(INVALID_ACTION).message or "")
    await stack.act(RebalanceAction(name="off-0", action="approve", accept_cordoned=True))
    done = await stack.until(RebalanceState.READY)
    assert done.cordons_accepted
    # Kafka refuses every move into the cordoned directory; Cruise Control counts them done all the same (as the real
    # one does): nothing moved, and the directory is not empty.
    assert {p.log_dirs[1] for p in stack.simulator.cluster.topics["a"].partitions if 1 in p.replicas} == {data0}


def test_destinations_leave_out_fully_cordoned_and_leaving_brokers_and_are_default_without_them() -> None:
    cordons = Cordons({4: frozenset({"/a", "/b"}), 2: frozenset({"/a"})}, {4: frozenset({"/a", "/b"}),
                                                                          2: frozenset({"/a", "/b"})})
    assert cordons.fully_cordoned == {4} and cordons.partly_cordoned == {2: frozenset({"/a"})}
    assert rebalance_destinations(cordons, [1, 2, 3, 4], leaving=[3]) == [1, 2]
    assert rebalance_destinations(cordons, [1, 2, 3]) is None  # broker 4 is not alive: nothing to leave out
    assert rebalance_destinations(Cordons(), [1, 2, 3, 4]) is None


def test_an_intra_broker_move_into_a_cordoned_directory_is_a_crossing() -> None:
    def load(replicas_in_a: int, replicas_in_b: int) -> dict:
        return {"brokers": [{"Broker": 2, "Replicas": replicas_in_a + replicas_in_b, "DiskState": {
            "/a": {"DiskMB": 1.0, "NumReplicas": replicas_in_a}, "/b": {"DiskMB": 1.0, "NumReplicas": replicas_in_b}}}]}
    result = OptimizationResult.model_validate({
        "summary": {"numIntraBrokerReplicaMovements": 2},
        "loadBeforeOptimization": load(1, 5), "loadAfterOptimization": load(3, 3)})
    cordons = Cordons({2: frozenset({"/a"})}, {2: frozenset({"/a", "/b"})})
    assert cordon_check.crossings(result, cordons) == ["2 replica(s) into broker 2's cordoned directory /a"]
    assert cordon_check.crossings(result, Cordons({2: frozenset({"/b"})}, {2: frozenset({"/a", "/b"})})) == []
    assert cordon_check.crossings(result, Cordons()) == []
