"""The simulator speaks Cruise Control: every answer validates against Cruise Control's OpenAPI description, and the
task semantics (servlet capacity, one execution at a time, warm-up, restart) match seed 000."""

from __future__ import annotations

import asyncio
import json
import ssl
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import trustme
from pydantic import SecretStr
from openapi_core import Config, OpenAPI
from openapi_core.testing import MockRequest, MockResponse

from services.cluster_sim.app import Simulator
from services.adapters.admin import AdminError
from services.adapters.admin.simulator import SimulatorClusterAdmin
from services.adapters.cruise_control import (
    OptimizationOptions,
    AuthorizationError,
    ClusterModelNotReady,
    ConnectionFailed,
    CruiseControlClient,
    OngoingExecution,
    RequestRejected,
    ServletFull,
)
from services.adapters.cruise_control.client import without_session
from services.common.settings import CruiseControlSettings, SimulatorSettings
from services.local.broker import free_port
from tests.patience import WAIT_S
from tests.unit.sim_restart import at, restarted
from tests.unit.simulated import simulated_cluster

OPENAPI = Path(__file__).resolve().parents[3] / "shared" / "reference" / "cruise-control-openapi" / "base.yaml"


@pytest.fixture(scope="module")
def openapi() -> OpenAPI:
    # Cruise Control's own description does not pass strict spec validation (null defaults on strings);
    # the responses are still validated against it.
    return OpenAPI.from_file_path(str(OPENAPI), config=Config(spec_validator_cls=None))


class Recorder(httpx.AsyncBaseTransport):
    """Keeps every exchange so the test can validate each against the OpenAPI description."""

    def __init__(self, inner: httpx.AsyncBaseTransport) -> None:
        self.inner = inner
        self.exchanges: list[tuple[httpx.Request, httpx.Response, bytes]] = []

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        response = await self.inner.handle_async_request(request)
        body = await response.aread()
        self.exchanges.append((request, response, body))
        return httpx.Response(response.status_code, headers=response.headers, content=body, request=request)


# Where the real Cruise Control's answers differ from its OpenAPI description (recorded in
# shared/reference/cruise-control-real), the simulator answers as the real one does: a float for these figures the
# description types as integers, no version inside a 202's progress entries, and a proposal's ``topicPartition`` as
# the object Kafka's TopicPartition is written as ({"hash", "partition", "topic"}; proposals-verbose), not a string.
REAL_FLOATS = {"averageConcurrentPartitionMovementsPerBroker", "averageConcurrentLeaderMovementsPerBroker",
               "averageConcurrentIntraBrokerPartitionMovementsPerBroker", "cpu", "networkInbound", "networkOutbound",
               "disk", "msg_in", "StdReplicasPerBroker", "StdLeadersPerBroker"}


def _only_as_the_real_one(error: Exception) -> bool:
    """Every schema error is one of the real one's own departures from its description."""
    causes = getattr(error, "schema_errors", None) or getattr(getattr(error, "__cause__", None), "schema_errors", None)
    if not causes:
        return False
    leaves = [leaf for cause in causes for leaf in (cause.context or [cause])]

    def as_real(leaf: Any) -> bool:
        if leaf.message == "'version' is a required property":
            return "progress" in leaf.path
        if isinstance(leaf.instance, dict) and "is not of type 'string'" in leaf.message:
            return bool(leaf.path) and leaf.path[-1] == "topicPartition" and set(leaf.instance) == {
                "hash", "partition", "topic"}
        return isinstance(leaf.instance, float) and "is not of type 'integer'" in leaf.message \
            and bool(leaf.path) and leaf.path[-1] in REAL_FLOATS
    return all(as_real(leaf) for leaf in leaves)


def validate_all(openapi: OpenAPI, recorder: Recorder) -> int:
    for request, response, body in recorder.exchanges:
        mock_request = MockRequest("http://localhost", request.method.lower(), request.url.path,
                                   args=dict(request.url.params))
        mock_response = MockResponse(body, status_code=response.status_code, content_type="application/json")
        try:
            openapi.validate_response(mock_request, mock_response)
        except Exception as exc:  # noqa: BLE001 - re-raised unless it is only where the real one differs
            if not _only_as_the_real_one(exc):
                raise
    return len(recorder.exchanges)


@pytest.fixture
async def sim() -> AsyncIterator[Simulator]:
    async with simulated_cluster(min_execution_s=0.3, proposal_s=0.05, task_scanner_period_s=0.1) as cluster:
        yield cluster.simulator


def client_for(sim: Simulator, transport: httpx.AsyncBaseTransport | None = None, **kw) -> CruiseControlClient:
    """Ballast's client, with a share of the simulator's user tasks (its scanner runs every 0.1 s here)."""
    settings = CruiseControlSettings(port=sim.settings.cruise_control_port, task_scanner_period_s=0.1,
                                     user_task_shares={"test": 4}, **kw)
    return CruiseControlClient(settings, service="test", transport=transport)


def plain_http(sim: Simulator, transport: httpx.AsyncBaseTransport | None = None) -> httpx.AsyncClient:
    """A plain HTTP client that keeps no session cookie: every request gets a fresh answer."""
    base = f"http://127.0.0.1:{sim.settings.cruise_control_port}/kafkacruisecontrol"
    return without_session(httpx.AsyncClient(base_url=base, transport=transport, timeout=10))


async def wait_status(cc: CruiseControlClient, task_id: str, status: str, timeout: float = 5.0) -> None:
    for _ in range(int(timeout / 0.05)):
        tasks = (await cc.user_tasks([task_id])).by_id()
        if task_id in tasks and tasks[task_id].status == status:
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"task {task_id} never reached {status}")


async def test_answers_validate_against_openapi(sim: Simulator, openapi: OpenAPI) -> None:
    admin = SimulatorClusterAdmin(f"http://127.0.0.1:{sim.settings.admin_port}")
    await admin.create_topic("a", 3, 3)
    await admin.create_topic("b", 2, 2, {"min.insync.replicas": "2"})
    recorder = Recorder(httpx.AsyncHTTPTransport())
    cc = client_for(sim, recorder)
    await cc.state()
    submission = await cc.topic_configuration({2: ["a"], 3: ["b"]})
    await cc.state()  # executing
    await wait_status(cc, submission.task_id, "Completed")
    await cc.user_tasks([submission.task_id], fetch_completed_task=True)
    with pytest.raises(RequestRejected):
        await cc.topic_configuration({9: ["a"]})
    sim.cluster.set_alive(1, False)
    await cc.kafka_cluster_state()
    sim.cruise_control.tuning.proposal_s, sim.cruise_control.tuning.max_block_s = 0.5, 0.05
    slow = await cc.topic_configuration({2: ["b"]}, dryrun=True)
    assert slow.in_progress
    loads = await cc.load(populate_disk_info=True)
    alive = next(b for b in loads.brokers if b.broker == 2)
    assert set(alive.disk_state) == {"/var/kafka/data-0", "/var/kafka/data-1"}
    assert sum(d.replicas for d in alive.disk_state.values()) == alive.replicas
    partitions = await cc.partition_load()
    assert len(partitions.records) == 5 and all(r.network_inbound > 0 for r in partitions.records)
    assert validate_all(openapi, recorder) >= 10
    await cc.aclose()
    await admin.aclose()


async def test_validation_catches_a_wrong_shape(openapi: OpenAPI) -> None:
    request = MockRequest("http://localhost", "get", "/kafkacruisecontrol/user_tasks")
    response = MockResponse(json.dumps({"userTasks": [{"Status": "Done"}], "version": 1}).encode(),
                            content_type="application/json")
    with pytest.raises(Exception, match="not valid for schema"):
        openapi.validate_response(request, response)


async def test_task_lifecycle_and_one_execution_at_a_time(sim: Simulator) -> None:
    admin = SimulatorClusterAdmin(f"http://127.0.0.1:{sim.settings.admin_port}")
    await admin.create_topic("a", 2, 3)
    await admin.create_topic("b", 2, 3)
    sim.cruise_control.tuning.min_execution_s = 3600  # executing until the test lets it end, however slow the machine
    cc = client_for(sim)
    first = await cc.topic_configuration({2: ["a"]})
    assert (await cc.user_tasks([first.task_id])).user_tasks[0].status == "InExecution"
    assert (await cc.state()).executor.triggered_user_task_id == first.task_id
    with pytest.raises(OngoingExecution, match="Another task is executing"):
        await cc.topic_configuration({2: ["b"]})
    sim.cruise_control.execution.duration_s = 0  # now it ends
    await wait_status(cc, first.task_id, "Completed")
    assert (await admin.describe_topics(["a"]))["a"].replication_factor == 2
    assert [len(replicas) for replicas in (await admin.assignments())["a"]] == [2, 2]
    await cc.aclose()
    await admin.aclose()


async def test_servlet_capacity_counts_every_request_until_the_scanner_sees_it_done(sim: Simulator) -> None:
    admin = SimulatorClusterAdmin(f"http://127.0.0.1:{sim.settings.admin_port}")
    await admin.create_topic("a", 1, 3)
    # The scanner does not run during the test (its runs are whole periods from the start, the first an hour in): with
    # a 1 s period a loaded machine let it run between two requests, and the done ones no longer counted.
    sim.cruise_control.tuning.task_scanner_period_s = 3600.0
    sim.cruise_control.tuning.proposal_s, sim.cruise_control.tuning.max_block_s = 2.0, 0.05
    unbudgeted = CruiseControlClient(CruiseControlSettings(port=sim.settings.cruise_control_port))
    for _ in range(3):
        assert (await unbudgeted.topic_configuration({2: ["a"]}, dryrun=True)).in_progress
    await unbudgeted.state()  # GETs are tasks too: done at once, active until the scanner's next run
    await unbudgeted.user_tasks()
    with pytest.raises(ServletFull):
        await unbudgeted.load()
    await unbudgeted.aclose()
    await admin.aclose()


async def test_a_request_whose_client_hung_up_while_it_was_held_back_is_never_handled(sim: Simulator) -> None:
    """Latency before the answer holds a request back; a client that dies meanwhile takes the request with it (the
    kill -9 tests of the replicas-change service rely on it: Cruise Control never saw the request)."""
    admin = SimulatorClusterAdmin(f"http://127.0.0.1:{sim.settings.admin_port}")
    await admin.create_topic("a", 1, 3)
    sim.faults.latency_s["topic_configuration"] = 1.0
    served = sim.cruise_control.requests_served
    async with httpx.AsyncClient(timeout=0.2) as hasty:
        with pytest.raises(httpx.TimeoutException):
            await hasty.post(f"http://127.0.0.1:{sim.settings.cruise_control_port}/kafkacruisecontrol/"
                             "topic_configuration", params={"topic": "a", "replication_factor": "2", "json": "true"})
    await asyncio.sleep(1.5)
    assert sim.cruise_control.requests_served == served
    watcher = client_for(sim)
    assert not [t for t in (await watcher.user_tasks()).user_tasks if "topic_configuration" in t.request_url]
    await watcher.aclose()
    sim.faults.latency_s["topic_configuration"] = 0.2
    patient, served = client_for(sim), sim.cruise_control.requests_served
    assert (await patient.topic_configuration({2: ["a"]}, dryrun=True)).task_id
    assert sim.cruise_control.requests_served == served + 1  # a client that waits is answered
    await patient.aclose()
    await admin.aclose()


async def test_restart_forgets_tasks_and_warms_up(sim: Simulator) -> None:
    admin = SimulatorClusterAdmin(f"http://127.0.0.1:{sim.settings.admin_port}")
    await admin.create_topic("a", 1, 3)
    cc = client_for(sim)
    done = await cc.topic_configuration({2: ["a"]})
    deadline = time.monotonic() + WAIT_S
    while sim.cruise_control.execution is not None:  # its execution ends before the restart
        assert time.monotonic() < deadline, "the execution never ended"
        await asyncio.sleep(0.05)
    await sim.stop_cruise_control()
    with pytest.raises(ConnectionFailed):
        await CruiseControlClient(CruiseControlSettings(port=sim.settings.cruise_control_port, timeout_s=0.1)) \
            .topic_configuration({3: ["a"]})
    await restarted(sim)
    assert (await cc.user_tasks([done.task_id])).user_tasks == []
    with pytest.raises(ClusterModelNotReady):  # its metadata knows no topic yet
        await cc.topic_configuration({3: ["a"]})
    at(sim, 1.0)
    assert (await cc.topic_configuration({3: ["a"]})).task_id
    await cc.aclose()
    await admin.aclose()


async def test_basic_auth_and_tls(tmp_path: Path) -> None:
    ca = trustme.CA()
    cert = ca.issue_cert("127.0.0.1")
    cert.private_key_and_cert_chain_pem.write_to_path(str(tmp_path / "server.pem"))
    ca.cert_pem.write_to_path(str(tmp_path / "ca.pem"))
    settings = SimulatorSettings(cruise_control_port=free_port(), admin_port=free_port(), auth_username="admin",
                                 auth_password="pw", tls_certfile=tmp_path / "server.pem",
                                 tls_keyfile=tmp_path / "server.pem")
    simulator = Simulator(settings)
    await simulator.start()
    try:
        good = CruiseControlSettings(port=settings.cruise_control_port, ssl_enabled=True, ca_file=tmp_path / "ca.pem",
                                     auth_enabled=True, username="admin", password="pw")
        async with CruiseControlClient(good) as cc:
            assert (await cc.state()).executor.state == "NO_TASK_IN_PROGRESS"
        async with CruiseControlClient(good.model_copy(update={"password": SecretStr("wrong")})) as cc:
            with pytest.raises(AuthorizationError, match="Authorization error"):
                await cc.state()
        async with CruiseControlClient(good.model_copy(update={"ca_file": None})) as cc:
            with pytest.raises(ConnectionFailed):  # server certificate not trusted without the CA
                await cc.state()
    finally:
        await simulator.stop()
    assert isinstance(ssl.create_default_context(cafile=str(tmp_path / "ca.pem")), ssl.SSLContext)


from hypothesis import given, settings
from hypothesis import strategies as st

from services.cluster_sim.proposals import literal_alternatives as _literal_alternatives
from services.adapters.cruise_control import topic_regex

TOPIC_NAMES = st.text(alphabet="abc.-_1", min_size=1, max_size=6)


@settings(max_examples=300, deadline=None)
@given(chosen=st.lists(TOPIC_NAMES, min_size=1, max_size=5), others=st.lists(TOPIC_NAMES, max_size=8))
def test_literal_fast_path_agrees_with_the_regex(chosen: list[str], others: list[str]) -> None:
    import re

    regex = topic_regex(chosen)
    literals = _literal_alternatives(regex)
    assert literals == set(chosen)
    pattern = re.compile(regex)
    for name in chosen + others:
        assert (name in literals) == bool(pattern.fullmatch(name))


def test_non_literal_regex_falls_back() -> None:
    assert _literal_alternatives("topic_[0-9].*") is None
    assert _literal_alternatives(r"a\dc") is None


async def test_explicit_replica_assignments_through_the_admin_port(sim: Simulator) -> None:
    admin = SimulatorClusterAdmin(f"http://127.0.0.1:{sim.settings.admin_port}")
    sim.cluster.set_alive(2, False)
    await admin.create_topic("placed", 0, 0, assignment=[[2, 3, 1], [3, 1, 4]])
    placed = (await admin.describe_topics(["placed"]))["placed"]
    assert [p.replicas for p in placed.partitions] == [(2, 3, 1), (3, 1, 4)]
    assert [p.leader for p in placed.partitions] == [3, 3]  # broker 2 is down: the next replica leads
    await admin.create_partitions("placed", 3, assignment=[[4, 2, 3]])
    placed = (await admin.describe_topics(["placed"]))["placed"]
    assert [p.replicas for p in placed.partitions][2] == (4, 2, 3)
    for bad, message in [([[1, 1, 2]], "more than once"), ([[1, 99]], "no such broker is registered"),
                         ([[1, 2], [3]], "same number of replicas"), ([[]], "empty replica list")]:
        with pytest.raises(AdminError, match=message):
            await admin.create_topic("bad", 0, 0, assignment=bad)
    with pytest.raises(AdminError, match="only 1 assignment"):
        await admin.create_partitions("placed", 5, assignment=[[1, 2, 3]])
    with pytest.raises(AdminError, match="same number of replicas"):
        await admin.create_partitions("placed", 4, assignment=[[1, 2]])
    # AlterPartitionReassignments: a placeholder filled by broker 5; the leader stays where it was.
    await admin.reassign_partitions("placed", {1: [3, 1, 4, 5]})
    placed = (await admin.describe_topics(["placed"]))["placed"]
    assert placed.partitions[1].replicas == (3, 1, 4, 5) and placed.partitions[1].leader == 3
    with pytest.raises(AdminError, match="not registered"):
        await admin.reassign_partitions("placed", {0: [1, 99]})
    await admin.aclose()


async def test_replicas_go_to_the_log_directories_named_and_the_load_follows(sim: Simulator) -> None:
    admin = SimulatorClusterAdmin(f"http://127.0.0.1:{sim.settings.admin_port}")
    data0, data1 = sim.cluster.brokers[1].log_dirs
    await admin.create_topic("jbod", 0, 0, assignment=[[1, 2], [2, 1]])
    await admin.alter_replica_log_dirs("jbod", {(0, 1): data1, (1, 1): data1, (0, 2): data0, (1, 2): data0})
    described = (await admin.describe_topics(["jbod"]))["jbod"]
    assert [dict(p.log_dirs) for p in described.partitions] == [{1: data1, 2: data0}, {1: data1, 2: data0}]
    # Cruise Control's load sees both replicas of broker 1 in data-1 and none in data-0.
    dirs = sim.cruise_control.load.brokers()[1]["dirs"]
    assert (dirs[data1]["replicas"], dirs[data0]["replicas"]) == (2, 0)
    # Refused whole, in Kafka's words: a broker without that replica, a directory the broker does not have.
    with pytest.raises(AdminError, match="not available"):
        await admin.alter_replica_log_dirs("jbod", {(0, 1): data0, (0, 3): data0})
    with pytest.raises(AdminError, match="not found in broker 1"):
        await admin.alter_replica_log_dirs("jbod", {(0, 1): "/elsewhere"})
    assert dict((await admin.describe_topics(["jbod"]))["jbod"].partitions[0].log_dirs)[1] == data1
    # A replica that leaves its broker forgets its directory.
    await admin.reassign_partitions("jbod", {0: [3, 2]})
    assert sim.cluster.topics["jbod"].partitions[0].log_dirs == {2: data0}
    await admin.aclose()


async def test_topics_created_in_one_request_with_their_directories_and_each_ones_error(sim: Simulator) -> None:
    """The simulator's CreateTopics for many topics (issue 52): each topic's replicas in the directories named from
    the start, and each topic's own refusal beside the others' success, as Kafka answers per topic."""
    from services.adapters.admin import NewTopic, OperationRefused, TopicAlreadyExists

    admin = SimulatorClusterAdmin(f"http://127.0.0.1:{sim.settings.admin_port}")
    data0, data1 = sim.cluster.brokers[1].log_dirs
    await admin.create_topic("batch-taken", 0, 0, assignment=[[1]])
    outcome = await admin.create_topics([
        NewTopic("batch-a", ((1, 2), (2, 1)), {"retention.ms": "60000"}, {(0, 1): data1, (1, 1): data1}),
        NewTopic("batch-taken", ((1,),)),
        NewTopic("batch-bad", ((1,),), {"retention.ms": "forever"}),
        NewTopic("batch-b", ((3,),)),
    ])
    assert outcome["batch-a"] is None and outcome["batch-b"] is None
    assert isinstance(outcome["batch-taken"], TopicAlreadyExists)
    assert type(outcome["batch-bad"]) is OperationRefused and "retention.ms" in str(outcome["batch-bad"])
    described = (await admin.describe_topics(["batch-a"]))["batch-a"]
    assert [p.replicas for p in described.partitions] == [(1, 2), (2, 1)]
    assert [dict(p.log_dirs)[1] for p in described.partitions] == [data1, data1]
    assert described.config == {"retention.ms": "60000"} and "batch-bad" not in sim.cluster.topics
    await admin.aclose()


async def test_add_remove_and_full_rebalance_proposals_execute_and_validate(sim: Simulator, openapi: OpenAPI) -> None:
    admin = SimulatorClusterAdmin(f"http://127.0.0.1:{sim.settings.admin_port}")
    for index in range(4):
        await admin.create_topic(f"t{index}", 12, 3)
    recorder = Recorder(httpx.AsyncHTTPTransport())
    async with plain_http(sim, recorder) as cc:
        # Brokers 7 and 8 join /dc1 and /dc2: add_broker moves replicas only onto them.
        sim.cluster.add_broker(7, "/dc1/r1")
        sim.cluster.add_broker(8, "/dc2/r1")
        before = {n: [list(p.replicas) for p in t.partitions] for n, t in sim.cluster.topics.items()}
        proposal = await cc.post("/add_broker", params={"brokerid": "7,8", "json": "true"})  # dryrun by default
        assert proposal.status_code == 200 and proposal.headers["User-Task-ID"]
        moved = proposal.json()["summary"]["numReplicaMovements"]
        assert moved > 0 and {n: [list(p.replicas) for p in t.partitions] for n, t in sim.cluster.topics.items()} \
            == before, "a dry run changes nothing"
        run = await cc.post("/add_broker", params={"brokerid": "7,8", "dryrun": "false", "json": "true"})
        task_id = run.headers["User-Task-ID"]
        state = (await cc.get("/state", params={"json": "true"})).json()["ExecutorState"]
        assert state["triggeredTaskReason"].startswith("No reason provided (Client: 127.0.0.1, Date: 20")
        assert state["numTotalPartitionMovements"] > 0
        for _ in range(100):
            tasks = (await cc.get("/user_tasks", params={"user_task_ids": task_id, "json": "true"})).json()
            if tasks["userTasks"][0]["Status"] == "Completed":
                break
            await asyncio.sleep(0.05)
        counts = sim.cluster.replica_counts()
        assert counts[7] > 0 and counts[8] > 0
        for name, topic in sim.cluster.topics.items():
            for old, partition in zip(before[name], topic.partitions):
                assert set(partition.replicas) - set(old) <= {7, 8}

        # remove_broker drains broker 8 again; unknown brokers and bad goals are refused in Cruise Control's words.
        drained = await cc.post("/remove_broker", params={"brokerid": "8", "dryrun": "false", "json": "true"})
        assert drained.status_code == 200
        for _ in range(100):
            if sim.cruise_control.execution is None:
                break
            await asyncio.sleep(0.05)
        assert sim.cluster.replica_counts()[8] == 0
        unknown = await cc.post("/remove_broker", params={"brokerid": "42", "json": "true"})
        assert unknown.status_code == 500 and "Broker 42 does not exist." in unknown.json()["errorMessage"]
        bad = await cc.post("/rebalance", params={"goals": "RackAwareGoal,ReplicaCapacityGoal", "json": "true"})
        assert bad.status_code == 500 and "Missing hard goals" in bad.json()["errorMessage"]
        full = await cc.post("/rebalance", params={"json": "true", "verbose": "true"})
        assert full.status_code == 200 and "proposals" in full.json()
        assert (await cc.post("/stop_proposal_execution", params={"json": "true"})).json()["message"] == \
            "Proposal execution stopped."
        load = (await cc.get("/load", params={"json": "true"})).json()
        assert {b["Broker"]: b["Replicas"] for b in load["brokers"]}[8] == 0
    assert validate_all(openapi, recorder) >= 8
    await admin.aclose()


async def test_stop_lets_the_movement_in_flight_finish_and_leaves_the_rest_undone(sim: Simulator) -> None:
    admin = SimulatorClusterAdmin(f"http://127.0.0.1:{sim.settings.admin_port}")
    for index in range(3):
        await admin.create_topic(f"s{index}", 20, 3)
    sim.cluster.add_broker(9, "/dc1/r1")
    # Long enough that no pause of a loaded machine lets a movement end before the stop arrives (30 s did not: two
    # suites side by side); the test ends the one in flight once it has seen the executor stopping.
    sim.cruise_control.tuning.min_execution_s = 3600
    async with plain_http(sim) as cc:
        run = await cc.post("/add_broker", params={"brokerid": "9", "dryrun": "false", "json": "true",
                                                    "verbose": "true"})
        onto_9 = sum(1 for p in run.json()["proposals"] if 9 in p["newReplicas"])
        assert onto_9 > 1
        await asyncio.sleep(0.5)
        assert (await cc.get("/state", params={"json": "true"})).json()["ExecutorState"]["state"] == \
            "INTER_BROKER_REPLICA_MOVEMENT_TASK_IN_PROGRESS"
        before_stop = sim.cluster.replica_counts()[9]
        stop = await cc.post("/stop_proposal_execution", params={"json": "true"})
        assert stop.status_code == 200 and stop.headers["User-Task-ID"], "answered at once, as a task of its own"
        # The movement in flight goes on: the executor is stopping until it has finished.
        stopping = (await cc.get("/state", params={"json": "true", "substates": "executor"})).json()
        assert set(stopping) == {"ExecutorState", "version"}
        assert stopping["ExecutorState"]["state"] == "STOPPING_EXECUTION"
        sim.cruise_control.execution.duration_s = 0
        deadline = time.monotonic() + WAIT_S
        while (await cc.get("/state", params={"json": "true", "substates": "executor"})).json()[
                "ExecutorState"]["state"] != "NO_TASK_IN_PROGRESS":
            assert time.monotonic() < deadline, "the executor never finished stopping"
            await asyncio.sleep(0.05)
        stopped_at = sim.cluster.replica_counts()[9]
        await asyncio.sleep(0.3)
        assert before_stop < stopped_at == sim.cluster.replica_counts()[9] < onto_9, \
            "the movement in flight finished, the rest were dropped, and nothing moves after"
        # Cruise Control's notifyFinishedTask: an execution stopped by the user ends its task with an error.
        tasks = (await cc.get("/user_tasks", params={"json": "true"})).json()["userTasks"]
        assert [t["Status"] for t in tasks if t["UserTaskId"] == run.headers["User-Task-ID"]] == ["CompletedWithError"]
    await admin.aclose()


async def test_client_drives_add_and_remove_broker_on_the_simulator(sim: Simulator) -> None:
    admin = SimulatorClusterAdmin(f"http://127.0.0.1:{sim.settings.admin_port}")
    await admin.create_topic("c0", 18, 3)
    sim.cluster.add_broker(7, "/dc3/r1")
    cc = client_for(sim)
    proposal = await cc.add_broker([7], OptimizationOptions(verbose=True, replication_throttle=10_000_000))
    assert not proposal.in_progress and proposal.result is not None
    summary = proposal.result.summary
    assert summary.num_replica_movements > 0 and summary.data_to_move_mb > 0
    assert all(7 in p["newReplicas"] for p in proposal.result.proposals)
    again = await cc.add_broker([7], OptimizationOptions(verbose=True, replication_throttle=10_000_000),
                                task_id=proposal.task_id)  # the same task's answer, not a new task
    assert again.task_id == proposal.task_id and again.result == proposal.result
    with pytest.raises(RequestRejected, match=r"Broker 99 does not exist"):
        await cc.remove_broker([99])
    with pytest.raises(ValueError, match="takes no goals"):
        OptimizationOptions(goals=("RackAwareGoal",), rebalance_disk=True)
    loads = {b.broker: b for b in (await cc.load()).brokers}
    assert loads[7].replicas == 0 and loads[1].replicas > 0
    assert await cc.stop_proposal_execution() == "Proposal execution stopped."
    await cc.aclose()
    await admin.aclose()


async def test_executions_copy_at_the_throttle_and_proposals_score_balance(sim: Simulator) -> None:
    admin = SimulatorClusterAdmin(f"http://127.0.0.1:{sim.settings.admin_port}")
    await admin.create_topic("b0", 12, 3)
    sim.cluster.add_broker(7, "/dc1/r3")
    sim.cruise_control.tuning.min_execution_s = 0.0
    cc = client_for(sim)
    proposal = await cc.add_broker([7], OptimizationOptions(verbose=True))
    summary = proposal.result.summary
    assert summary.balancedness_before < summary.balancedness_after, "an empty broker is imbalance"
    after = {b.broker: b.replicas for b in proposal.result.load_after_optimization.brokers}
    before = {b.broker: b.replicas for b in proposal.result.load_before_optimization.brokers}
    assert before[7] == 0 and after[7] == summary.num_replica_movements and sum(after.values()) == sum(before.values())
    data_mb = summary.data_to_move_mb
    # 1 MB/s: the execution lasts data / throttle simulated seconds (time_scale of them per real second).
    await cc.add_broker([7], OptimizationOptions(replication_throttle=1_000_000), dryrun=False)
    execution = sim.cruise_control.execution
    assert execution is not None
    assert execution.duration_s == pytest.approx(data_mb / 1.0 / sim.cruise_control.tuning.time_scale, rel=0.01)
    drain = await cc.remove_broker([7], OptimizationOptions(verbose=True))
    assert drain.result.summary.balancedness_after is not None  # broker 7 leaving does not count as empty
    await cc.stop_proposal_execution()
    await cc.aclose()
    await admin.aclose()


async def test_rebalance_disk_and_remove_disks_move_replicas_between_a_brokers_directories(
        sim: Simulator, openapi: OpenAPI) -> None:
    admin = SimulatorClusterAdmin(f"http://127.0.0.1:{sim.settings.admin_port}")
    data0, data1 = sim.cluster.brokers[1].log_dirs
    await admin.create_topic("skew", 0, 0, assignment=[[1, 2]] * 8)
    # Every replica of broker 1 in data-0: the skew a disk rebalance evens out.
    await admin.alter_replica_log_dirs("skew", {(p, 1): data0 for p in range(8)})
    await admin.alter_replica_log_dirs("skew", {(p, 2): (data0, data1)[p % 2] for p in range(8)})  # even already
    for p in sim.cluster.topics["skew"].partitions:
        p.size_mb = 1_000.0
    recorder = Recorder(httpx.AsyncHTTPTransport())
    cc = client_for(sim, recorder)
    proposal = await cc.rebalance(OptimizationOptions(rebalance_disk=True))
    summary = proposal.result.summary
    assert summary.num_replica_movements == 0 and summary.num_intra_broker_replica_movements == 4
    assert summary.intra_broker_data_to_move_mb == 4_000
    assert {g["goal"] for g in proposal.result.goal_summary} == {"IntraBrokerDiskCapacityGoal",
                                                                  "IntraBrokerDiskUsageDistributionGoal"}
    run = await cc.rebalance(OptimizationOptions(rebalance_disk=True), dryrun=False)
    seen_intra = False
    for _ in range(200):
        executor = (await cc.state()).executor
        if executor is not None and executor.state == "INTRA_BROKER_REPLICA_MOVEMENT_TASK_IN_PROGRESS":
            seen_intra = executor.num_total_intra_broker_partition_movements == 4
        if executor is None or executor.state == "NO_TASK_IN_PROGRESS":
            break
        await asyncio.sleep(0.02)
    await wait_status(cc, run.task_id, "Completed")
    assert seen_intra
    dirs = [p.log_dirs[1] for p in sim.cluster.topics["skew"].partitions]
    assert dirs.count(data0) == dirs.count(data1) == 4
    assert all(p.replicas == [1, 2] for p in sim.cluster.topics["skew"].partitions)

    # remove_disks empties data-1 of broker 1 into data-0; refusals in Cruise Control's words.
    drained = await cc.remove_disks({1: [data1]}, dryrun=False)
    assert drained.result.summary.num_intra_broker_replica_movements == 4
    await wait_status(cc, drained.task_id, "Completed")
    assert {p.log_dirs[1] for p in sim.cluster.topics["skew"].partitions} == {data0}
    for bad, message in (({1: ["/nope"]}, "Invalid log dirs provided for broker 1."),
                         ({1: [data0, data1]}, "No log dir remaining to move replicas to for broker 1."),
                         ({42: [data0]}, "Broker [42] does not exist.")):
        with pytest.raises(RequestRejected, match=message.replace(".", r"\.").replace("[", r"\[")):
            await cc.remove_disks(bad)
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{sim.settings.cruise_control_port}") as raw:
        refused = await raw.post("/kafkacruisecontrol/rebalance", params={
            "rebalance_disk": "true", "goals": "RackAwareGoal", "json": "true"})
        assert refused.status_code == 400
        assert "Rebalance disk mode does not support explicitly specifying goals" in refused.json()["errorMessage"]
    full = await cc.remove_disks({2: [data1]}, dryrun=True)
    assert full.result.summary.num_intra_broker_replica_movements >= 0
    assert validate_all(openapi, recorder) >= 6
    await cc.aclose()
    await admin.aclose()


async def test_a_batch_creation_cut_short_makes_its_first_topics_and_holds_its_answer(sim: Simulator) -> None:
    """The fault a kill -9 in the middle of a batch of creations stands on: the cluster makes some of a request's
    topics, then neither makes the rest nor answers until the fault is cleared."""
    from services.adapters.admin import NewTopic

    admin = SimulatorClusterAdmin(f"http://127.0.0.1:{sim.settings.admin_port}")
    faults = httpx.AsyncClient(base_url=f"http://127.0.0.1:{sim.settings.admin_port}")

    async def held(names: str) -> tuple[asyncio.Task[Any], dict[str, Any]]:
        creating = asyncio.create_task(admin.create_topics([NewTopic(n, ((1,),)) for n in names]))
        deadline = time.monotonic() + WAIT_S
        while (stats := (await faults.get("/faults/stats")).json())["heldCreations"] == 0:
            assert time.monotonic() < deadline and not creating.done(), "the request was not held"
            await asyncio.sleep(0.02)
        return creating, stats

    assert (await faults.post("/faults/admin/cut-batch", json={"afterTopics": 2})).status_code == 204
    creating, stats = await held("abcd")
    assert stats["heldTopicsMade"] == 2 and sorted(sim.cluster.topics) == ["a", "b"]
    await faults.post("/faults/reset")
    with pytest.raises(AdminError, match="cut short"):
        await creating
    assert sorted(sim.cluster.topics) == ["a", "b"]
    # Cut in the middle of a request: one that reaches the cut before its first topic makes that one first.
    await faults.post("/faults/admin/cut-batch", json={"afterTopics": 0})
    creating, stats = await held("ef")
    assert stats["heldTopicsMade"] == 1 and sorted(sim.cluster.topics) == ["a", "b", "e"]
    await faults.post("/faults/reset")
    with pytest.raises(AdminError):
        await creating
    assert await admin.create_topics([NewTopic("f", ((1,),))]) == {"f": None}  # no cut once reset
    assert (await faults.post("/faults/admin/cut-batch", json={"afterTopics": -1})).status_code == 400
    await faults.aclose()
    await admin.aclose()
