"""Ballast's Cruise Control client against what the real Cruise Control answers (recorded in
shared/reference/cruise-control-real) and against the simulator that now behaves as it does: every answer parses,
every request gets a fresh answer, warm-up refusals are temporary, a failed fetch of a task's result falls back, and a
service keeps to its share of Cruise Control's user tasks."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from services.cluster_sim.app import Simulator
from services.adapters.cruise_control import (
    ClusterModelNotReady,
    CruiseControlClient,
    CruiseControlState,
    KafkaClusterState,
    OptimizationResult,
    RequestRejected,
    UserTasks,
)
from services.adapters.cruise_control.budget import TaskBudget
from services.adapters.cruise_control.errors import ShareHeldByComputingTasks, TaskForgotten, classify
from services.adapters.cruise_control.models import BrokerLoads, PartitionLoads
from services.adapters.cruise_control.warm_up import warming_up
from services.common.settings import CruiseControlSettings
from tests.unit.sim_restart import at, restarted
from tests.unit.simulated import simulated_cluster

REAL = Path(__file__).resolve().parents[3] / "shared" / "reference" / "cruise-control-real" / "responses"


def real(case: str) -> dict:
    return json.loads((REAL / f"{case}-real.json").read_text())


def _model(case: str) -> type | None:
    endpoint = real(case)["request"]["url"].split("/kafkacruisecontrol/")[1].split("?")[0]
    return {"user_tasks": UserTasks, "state": CruiseControlState, "kafka_cluster_state": KafkaClusterState,
            "load": BrokerLoads, "partition_load": PartitionLoads, "stop_proposal_execution": None}.get(
        endpoint, OptimizationResult)


ANSWERED = sorted(p.name.removesuffix("-real.json") for p in REAL.glob("*-real.json")
                  if json.loads(p.read_text())["status"] == 200)


@pytest.mark.parametrize("case", ANSWERED)
def test_every_answer_of_the_real_cruise_control_parses(case: str) -> None:
    model = _model(case)
    if model is not None:
        model.model_validate(real(case)["body"])


def test_offline_log_directories_are_a_state_not_a_number() -> None:
    loads = BrokerLoads.model_validate(real("load-disk-offline")["body"]).by_broker()
    failed = loads[5].disk_state["/var/kafka/broker-5/data-1"]
    assert not failed.online and failed.disk_mb is None and failed.disk_pct is None
    assert loads[5].disk_state["/var/kafka/broker-5/data-0"].online
    proposal = OptimizationResult.model_validate(real("remove_disks-dryrun")["body"])
    after = proposal.load_after_optimization.by_broker()[2].disk_state
    assert not after["/var/kafka/broker-2/data-1"].online, "the directory a remove-disks proposal empties"


@pytest.mark.parametrize(("case", "temporary"), [
    ("kafka_cluster_state-during", True),  # servlet capacity
    ("rebalance-while-executing", True),  # another execution
    ("rebalance-unknown-utid", True),  # a task Cruise Control does not know
    ("remove_broker-unknown", False),
    ("rebalance-goals-badgoal", False),
    ("tc-rf-too-high", False),
])
def test_the_real_ones_refusals_are_temporary_or_permanent(case: str, temporary: bool) -> None:
    recorded = real(case)
    assert classify(recorded["status"], recorded["body"]["errorMessage"]).temporary is temporary


def test_the_unknown_task_header_is_a_forgotten_task() -> None:
    recorded = real("rebalance-reask-utid-otherparams")
    assert isinstance(classify(recorded["status"], recorded["body"]["errorMessage"]), TaskForgotten)


def test_warming_up_is_read_from_cruise_controls_own_state() -> None:
    assert warming_up(CruiseControlState.model_validate(real("state")["body"])) is None
    assert warming_up(CruiseControlState.model_validate(real("state-after-restart")["body"])) is None
    loading = CruiseControlState.model_validate({"MonitorState": {"state": "LOADING", "loadingProgressPct": 40.0,
                                                                  "numMonitoredWindows": 0}})
    assert warming_up(loading) == "its load monitor is loading, 40% loaded"
    # Measured on the real one until ~30 s after a restart, although it answered again after 4 s.
    empty = CruiseControlState.model_validate({
        "MonitorState": {"state": "RUNNING", "numMonitoredWindows": 3, "numTotalPartitions": 0,
                         "monitoringCoveragePct": 0.0},
        "AnalyzerState": {"isProposalReady": False, "readyGoals": ["RackAwareGoal"]}})
    assert warming_up(empty) == "its load monitor covers no partition yet"
    unready = CruiseControlState.model_validate({
        "MonitorState": {"state": "RUNNING", "numMonitoredWindows": 3, "numTotalPartitions": 93,
                         "monitoringCoveragePct": 100.0},
        "AnalyzerState": {"isProposalReady": False, "readyGoals": []}})
    assert warming_up(unready) == "no proposal ready yet"


# -- against the simulator ---------------------------------------------------------------------------------------

@pytest.fixture
async def sim() -> AsyncIterator[Simulator]:
    async with simulated_cluster(proposal_s=0.02, min_execution_s=0.2, task_scanner_period_s=0.05) as cluster:
        await cluster.admin.create_topic("a", 3, 2)
        yield cluster.simulator


def settings_for(sim: Simulator, **extra: object) -> CruiseControlSettings:
    return CruiseControlSettings(**{"port": sim.settings.cruise_control_port, "task_scanner_period_s": 0.05, **extra})


async def test_every_request_gets_a_fresh_answer_where_a_session_would_get_its_old_one(sim: Simulator) -> None:
    async with CruiseControlClient(settings_for(sim)) as cc:
        first = await cc.topic_configuration({3: ["a"]}, dryrun=True)
        again = await cc.topic_configuration({3: ["a"]}, dryrun=True)
    assert first.task_id != again.task_id, "a new task each time"
    # A client that keeps Cruise Control's session cookie (as an httpx client does by default) gets the old task.
    url = f"http://127.0.0.1:{sim.settings.cruise_control_port}/kafkacruisecontrol/state?json=true"
    async with httpx.AsyncClient() as session:
        before = await session.get(url)
        sim.cluster.set_alive(1, False)
        cached = await session.get(url)
    assert before.headers["User-Task-ID"] == cached.headers["User-Task-ID"] and before.json() == cached.json()


async def test_a_refusal_during_the_warm_up_is_temporary_and_nothing_is_submitted_into_it(sim: Simulator) -> None:
    # A warm-up of 1,000 s, moved through its phases by hand: each phase lasts far longer than the test.
    await restarted(sim)
    # This one-off client has no user-task budget, and the seven tasks (the restart's probe, three looks at the state,
    # three requests) can fall within one task-scanner period: servlet-full one run in twenty. Capacity is not what
    # this test is about (test_a_service_holds_no_more_than_its_share_of_user_tasks is).
    sim.cruise_control.tuning.max_active_user_tasks = 20
    async with CruiseControlClient(settings_for(sim)) as cc:
        # The first phase: the metadata holds no topic yet.
        with pytest.raises(ClusterModelNotReady, match="warming up \\(its load monitor is loading"):
            await cc.topic_configuration({3: ["a"]}, dryrun=True)
        at(sim, 0.5)  # everything would answer now, but Cruise Control's state does not say so yet
        served = sim.cruise_control.requests_served
        with pytest.raises(ClusterModelNotReady, match="warming up \\(its load monitor covers no partition yet\\)"):
            await cc.topic_configuration({3: ["a"]}, dryrun=True)
        assert sim.cruise_control.requests_served == served + 1, "only Cruise Control's state was asked"
        at(sim, 1.0)
        assert (await cc.topic_configuration({3: ["a"]}, dryrun=True)).result is not None
        with pytest.raises(RequestRejected, match="no topic in cluster matching"):  # warm now: a true refusal
            await cc.topic_configuration({3: ["gone"]}, dryrun=True)


async def test_a_task_whose_result_cannot_be_fetched_is_read_without_it() -> None:
    """The real one on Java 17 without --add-opens answers 500 to fetch_completed_task=true for a failed task."""
    refused = real("user_tasks-failed-task-fetch")
    listed = real("user_tasks-failed-task")
    asked: list[str] = []

    def answer(request: httpx.Request) -> httpx.Response:
        asked.append(request.url.params["fetch_completed_task"])
        if request.url.params["fetch_completed_task"] == "true":
            return httpx.Response(refused["status"], json=refused["body"])
        return httpx.Response(200, json=listed["body"], headers={"User-Task-ID": "x"})

    async with CruiseControlClient(CruiseControlSettings(), transport=httpx.MockTransport(answer)) as cc:
        tasks = await cc.user_tasks(["d77993f6-386d-4ade-9f9f-56edeebd392d"], fetch_completed_task=True)
    assert asked == ["true", "false"]
    assert tasks.user_tasks[0].status == "CompletedWithError"


async def test_a_service_holds_no_more_than_its_share_of_user_tasks(sim: Simulator) -> None:
    sim.cruise_control.tuning.task_scanner_period_s = 0.5
    shares = {"rebalancer": 2, "replicas-change": 1, "load-collector": 1}
    clients = {name: CruiseControlClient(settings_for(sim, task_scanner_period_s=0.5, user_task_shares=shares),
                                         service=name) for name in shares}
    try:
        async def busy(cc: CruiseControlClient) -> None:
            for _ in range(4):
                await cc.state()
                await cc.load()
        started = time.monotonic()
        await asyncio.gather(*(busy(cc) for cc in clients.values()))  # 32 requests: none refused
        assert time.monotonic() - started >= 0.5, "the shares made the requests wait their turn"
        # A person's request still fits beside them: the shares leave one task of Cruise Control's five.
        async with CruiseControlClient(settings_for(sim)) as person:
            assert (await person.state()).executor is not None
    finally:
        for cc in clients.values():
            await cc.aclose()


async def test_a_task_still_computing_holds_its_slot_until_answered() -> None:
    budget = TaskBudget(1, retention_s=0.05)
    async with budget.new_task() as slot:
        slot.computing("t1")
    assert budget.in_use == 1
    await asyncio.sleep(0.1)
    assert budget.in_use == 1, "held while Cruise Control computes"
    budget.answered("t1")
    await asyncio.sleep(0.1)
    assert budget.in_use == 0


async def test_a_request_does_not_wait_on_a_share_that_only_computing_tasks_hold() -> None:
    # A poll waiting for a slot held by a 202 would wait for 3 minutes: the answer that frees it only comes when the
    # service follows the task, which the waiting poll stops it doing (seen in a loaded run of the suite).
    budget = TaskBudget(1, retention_s=0.05)
    async with budget.new_task() as slot:
        slot.computing("t1")
    with pytest.raises(ShareHeldByComputingTasks) as refused:
        async with budget.new_task():
            pass
    assert refused.value.temporary and refused.value.quiet
    budget.answered("t1")
    await asyncio.sleep(0.1)
    async with budget.new_task():  # free again
        assert budget.in_use == 1


async def test_a_request_waits_for_a_slot_that_a_finished_task_gives_back() -> None:
    budget = TaskBudget(1, retention_s=0.3)
    async with budget.new_task():
        pass
    started = time.monotonic()
    async with budget.new_task():
        assert time.monotonic() - started > 0.2, "waited for the retention, not refused"


def test_shares_must_leave_room_under_cruise_controls_limit() -> None:
    with pytest.raises(ValueError, match="leaves no room"):
        CruiseControlSettings(user_task_shares={"rebalancer": 3, "replicas-change": 2})
