"""The simulated Cruise Control refuses what Cruise Control refuses, with its words (UpdateTopicConfigurationRunnable
and RunnableUtils in linkedin/cruise-control): checked against the running simulator through Ballast's client."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from services.cluster_sim.app import Simulator
from services.common.admin.simulator import SimulatorClusterAdmin
from services.common.cruise_control import CruiseControlClient, RequestRejected
from services.common.settings import CruiseControlSettings, SimulatorSettings
from services.local.broker import free_port


@pytest.fixture
async def sim() -> AsyncIterator[Simulator]:
    simulator = Simulator(SimulatorSettings(cruise_control_port=free_port(), admin_port=free_port(),
                                            min_execution_s=0.1, proposal_s=0.01,
                                            brokers=["1:/dc1/r1", "2:/dc1/r1", "3:/dc2/r1", "4:/dc2/r1"]))
    await simulator.start()
    admin = SimulatorClusterAdmin(f"http://127.0.0.1:{simulator.settings.admin_port}")
    await admin.create_topic("a", 2, 2)
    await admin.create_topic("b", 2, 2)
    await admin.aclose()
    yield simulator
    await simulator.stop()


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
             "remove_broker": "removeBroker", "stop_proposal_execution": "stopProposalExecution", "state": "state",
             "kafka_cluster_state": "kafkaClusterState", "load": "load", "partition_load": "partitionLoad",
             "user_tasks": "userTasks"}
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
