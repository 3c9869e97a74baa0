"""The simulated Cruise Control refuses what Cruise Control refuses, with its words (UpdateTopicConfigurationRunnable
and RunnableUtils in linkedin/cruise-control): checked against the running simulator through Ballast's client."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from services.cluster_sim.app import Simulator
from services.adapters.cruise_control import CruiseControlClient, RequestRejected
from services.common.settings import CruiseControlSettings
from tests.unit.simulated import simulated_cluster


@pytest.fixture
async def sim() -> AsyncIterator[Simulator]:
    # One rack a data centre.
    async with simulated_cluster(brokers=["1:/dc1/r1", "2:/dc1/r1", "3:/dc2/r1", "4:/dc2/r1"], min_execution_s=0.1,
                                 proposal_s=0.01) as cluster:
        await cluster.admin.create_topic("a", 2, 2)
        await cluster.admin.create_topic("b", 2, 2)
        yield cluster.simulator


def client(sim: Simulator, *, rack_enabled: bool = False) -> CruiseControlClient:
    return CruiseControlClient(CruiseControlSettings(port=sim.settings.cruise_control_port, rack_enabled=rack_enabled))


async def refusal(sim: Simulator, groups: dict[int, list[str]], *, rack_enabled: bool = False) -> str:
    async with client(sim, rack_enabled=rack_enabled) as cc:
        with pytest.raises(RequestRejected) as refused:
            await cc.topic_configuration(groups)
    return refused.value.detail or ""


async def test_a_pattern_matching_no_topic_refuses_the_request(sim: Simulator) -> None:
    detail = await refusal(sim, {3: ["a"], 4: ["gone"]})
    assert "java.lang.IllegalStateException: There is no topic in cluster matching pattern 'gone'." in detail


async def test_nothing_left_to_change_is_an_error(sim: Simulator) -> None:
    detail = await refusal(sim, {2: ["a", "b"]})
    assert ("All topics matching given pattern already have target replication factor. Requested topic pattern by "
            "replication factor: {2=a|b}.") in detail


async def test_topics_already_at_target_are_left_out_of_a_request_that_has_others(sim: Simulator) -> None:
    async with client(sim) as cc:
        submission = await cc.topic_configuration({2: ["a"], 3: ["b"]})
    assert submission.task_id


async def test_rf_above_alive_brokers_names_the_topics_as_java_prints_a_set(sim: Simulator) -> None:
    detail = await refusal(sim, {5: ["a", "b"]})
    assert ("java.lang.RuntimeException: Unable to change replication factor (RF) of topics [a, b] to 5 since there "
            "are only 4 alive brokers in the cluster. Requested RF cannot be more than number of alive brokers."
            in detail)


async def test_rf_above_racks_needs_the_skip_flag(sim: Simulator) -> None:
    detail = await refusal(sim, {3: ["a"]}, rack_enabled=True)
    assert ("Unable to change replication factor of topics [a] to 3 since there are only 2 racks in the cluster, to "
            "skip the rack-awareness check, set skip_rack_awareness_check to true in the request." in detail)
    async with client(sim) as cc:  # skip_rack_awareness_check=true
        assert (await cc.topic_configuration({3: ["a"]})).task_id


async def test_an_offline_replica_anywhere_refuses_every_change(sim: Simulator) -> None:
    sim.cluster.set_alive(4, False)
    offline = {b for t in sim.cluster.topics.values() for p in t.partitions for b in p.replicas} & {4}
    assert offline, "broker 4 holds a replica"
    detail = await refusal(sim, {3: ["a"]})
    assert "java.lang.IllegalStateException: Topic partition " in detail and "has offline replicas on brokers [4]." \
        in detail


async def test_add_broker_knows_only_alive_brokers_and_remove_broker_takes_dead_ones(sim: Simulator) -> None:
    sim.cluster.set_alive(4, False)
    async with client(sim) as cc:
        with pytest.raises(RequestRejected) as refused:
            await cc.add_broker([4, 9])
        assert "java.lang.IllegalArgumentException: Broker [4, 9] does not exist." in (refused.value.detail or "")
        assert (await cc.remove_broker([4])).task_id  # draining a dead broker is what remove_broker is for


def test_the_simulator_knows_each_endpoints_parameters_as_cruise_controls_description_lists_them() -> None:
    from pathlib import Path

    import yaml

    from services.cluster_sim.parameters import VALID_PARAMETERS

    described = Path(__file__).resolve().parents[3] / "shared" / "reference" / "cruise-control-openapi" / "endpoints"
    files = {"topic_configuration": "topicConfiguration", "rebalance": "rebalance", "add_broker": "addBroker",
             "remove_broker": "removeBroker", "remove_disks": "removeDisks",
             "fix_offline_replicas": "fixOfflineReplicas", "stop_proposal_execution": "stopProposalExecution", "state": "state",
             "kafka_cluster_state": "kafkaClusterState", "load": "load", "partition_load": "partitionLoad",
             "user_tasks": "userTasks", "proposals": "proposals"}
    assert set(files) == set(VALID_PARAMETERS)
    for endpoint, name in files.items():
        document = yaml.safe_load((described / f"{name}.yaml").read_text())
        listed = {p["name"] for ops in document.values() for op in ops.values() for p in op.get("parameters", [])}
        assert VALID_PARAMETERS[endpoint] == listed, endpoint


async def test_a_parameter_the_endpoint_does_not_take_is_refused(sim: Simulator) -> None:
    import httpx

    url = f"http://127.0.0.1:{sim.settings.cruise_control_port}/kafkacruisecontrol/topic_configuration"
    async with httpx.AsyncClient() as http:
        answer = await http.post(url, params={"json": "true", "topic": "a", "replication_factor": "3",
                                              "brokerid": "1", "Colour": "red"})
    assert answer.status_code == 400
    assert answer.json()["errorMessage"] == ("Unrecognized endpoint parameters in TOPIC_CONFIGURATION POST request: "
                                             "[brokerid, Colour].")


# -- how the servlet reads parameters (ParameterUtils): whatever fails there is a 400 with its own message ---------

async def call(sim: Simulator, method: str, endpoint: str, params: dict[str, str], body: bytes | None = None
               ) -> tuple[int, dict]:
    """One request from a new client (no session: a fresh answer)."""
    import httpx

    url = f"http://127.0.0.1:{sim.settings.cruise_control_port}/kafkacruisecontrol/{endpoint}"
    async with httpx.AsyncClient(timeout=10) as http:
        answer = await http.request(method, url, params={"json": "true", **params}, content=body)
    return answer.status_code, answer.json()


async def test_a_flag_is_true_only_when_it_says_true_and_names_match_in_any_case(sim: Simulator) -> None:
    # Boolean.parseBoolean: "yes" is false, so dryrun=yes executes; DryRun names the same parameter.
    for topic, flag in (("a", {"dryrun": "yes"}), ("b", {"DryRun": "FALSE"})):
        status, _ = await call(sim, "POST", "topic_configuration", {"topic": topic, "replication_factor": "3",
                                                                     "skip_rack_awareness_check": "true", **flag})
        assert status == 200
        await asyncio.sleep(0.5)  # one execution at a time
    rf = {t: len(sim.cluster.topics[t].partitions[0].replicas) for t in ("a", "b")}
    assert rf == {"a": 3, "b": 3}


@pytest.mark.parametrize(("endpoint", "params", "body", "expected"), [
    ("add_broker", {"dryrun": "true"}, None, (400, "Target broker ID is not provided for ADD_BROKER request")),
    ("remove_broker", {"brokerid": "1, 2"}, None, (400, 'For input string: " 2"')),
    ("topic_configuration", {"topic": "a"}, None,
     (400, "Topic's replication factor is not specified in URL while subject topic is specified.")),
    ("topic_configuration", {"replication_factor": "3"}, None,
     (400, "Topic is not specified in URL while target replication factor is specified.")),
    ("topic_configuration", {}, None, (400, "Nothing executable found in request.")),
    ("topic_configuration", {"topic": "a", "replication_factor": "3"},
     b'{"replication_factor": {"topic_by_replication_factor": {"3": "b"}}}',
     (400, "Requesting topic replication factor change from both HTTP request parameter and body is forbidden.")),
    ("topic_configuration", {"topic": "a", "replication_factor": "70000"}, None,
     (400, 'Value out of range. Value:"70000" Radix:10')),
    ("rebalance", {"dryrun": "true", "stop_ongoing_execution": "true"}, None,
     (400, "stop_ongoing_execution and dryrun cannot both be set to true.")),
    ("rebalance", {"replication_throttle": "-1"}, None,
     (400, "Requested rebalance throttle must be non-negative (Requested: -1).")),
])
async def test_refusals_have_cruise_controls_status_and_words(sim: Simulator, endpoint: str, params: dict[str, str],
                                                             body: bytes | None, expected: tuple[int, str]) -> None:
    status, answer = await call(sim, "POST", endpoint, params, body)
    assert (status, answer["errorMessage"]) == expected


async def test_goal_names_are_not_trimmed_and_unknown_ones_are_refused_by_the_task(sim: Simulator) -> None:
    status, answer = await call(sim, "POST", "rebalance", {"goals": "RackAwareGoal, ReplicaCapacityGoal"})
    assert status == 500
    assert "Goals [ ReplicaCapacityGoal] are not supported. Supported: [" in answer["errorMessage"]
    status, _ = await call(sim, "POST", "rebalance", {"goals": "ReplicaDistributionGoal, Nope",
                                                      "skip_hard_goal_check": "true"})
    assert status == 200, "skip_hard_goal_check skips the whole sanity check"


async def test_user_tasks_filters_as_user_task_state_does(sim: Simulator) -> None:
    # The RF change stays InExecution for the whole test, however slow the machine, while the dry run is Completed.
    sim.cruise_control.tuning.min_execution_s = 3600
    sim.cruise_control.tuning.task_scanner_period_s = 0.01
    rf_change = {"topic": "a", "replication_factor": "3", "dryrun": "false", "skip_rack_awareness_check": "true"}
    ids = []
    for endpoint, params in (("rebalance", {}), ("topic_configuration", rf_change)):
        status, _ = await call(sim, "POST", endpoint, params)
        assert status == 200
        _, tasks = await call(sim, "GET", "user_tasks", {"endpoints": endpoint})
        ids.append(tasks["userTasks"][0]["UserTaskId"])
    await asyncio.sleep(0.05)

    async def listed(**params: str) -> list[str]:
        status, answer = await call(sim, "GET", "user_tasks", params)
        assert status == 200, answer
        return [t["UserTaskId"] for t in answer["userTasks"]]

    every = await listed()
    assert set(ids) < set(every), "the user_tasks requests are tasks too"
    assert await listed(endpoints="rebalance") == [ids[0]]
    unknown_name = await listed(endpoints="NO_SUCH_ENDPOINT")
    assert set(ids) < set(unknown_name) and len(unknown_name) > len(ids), "unknown names filter nothing"
    assert ids[0] in await listed(types="Completed") and ids[1] not in await listed(types="Completed")
    assert await listed(types="InExecution") == [ids[1]]
    assert await listed(client_ids="10.0.0.1") == []
    assert len(await listed(entries="1")) == 1
    assert await listed(user_task_ids=ids[1]) == [ids[1]]
    status, answer = await call(sim, "GET", "user_tasks", {"entries": "0"})
    assert (status, answer["errorMessage"]) == (400, "The requested entries must be positive (Requested: 0).")
    status, answer = await call(sim, "GET", "user_tasks", {"user_task_ids": "not-a-uuid"})
    assert (status, answer["errorMessage"]) == (400, "Invalid UUID string: not-a-uuid")


async def test_an_execution_in_progress_shows_its_original_response(sim: Simulator) -> None:
    sim.cruise_control.tuning.min_execution_s = 3600  # in progress for the whole test, however slow the machine
    status, _ = await call(sim, "POST", "topic_configuration", {"topic": "a", "replication_factor": "3",
                                                                 "dryrun": "false", "skip_rack_awareness_check": "true"})
    assert status == 200
    _, answer = await call(sim, "GET", "user_tasks", {"fetch_completed_task": "true", "types": "InExecution"})
    (task,) = answer["userTasks"]
    assert task["Status"] == "InExecution" and "originalResponse" in task


def test_ballast_reads_the_core_of_every_kind_of_refusal() -> None:
    from services.adapters.cruise_control.errors import classify

    assert classify(400, "Target broker ID is not provided for ADD_BROKER request").message == \
        "Request failed (400), Target broker ID is not provided for ADD_BROKER request"
    other = classify(500, "Error processing POST request '/remove_broker' due to: 'com.linkedin.kafka.cruisecontrol."
                          "exception.KafkaCruiseControlException: java.lang.IllegalArgumentException: Broker 42 does "
                          "not exist.'.")
    assert other.message == "Request failed (500), Broker 42 does not exist."
