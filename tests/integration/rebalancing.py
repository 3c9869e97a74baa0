"""Test harness for rebalancing: a stack of its own (the cluster's brokers change), a watcher of rebalance statuses
and dead letters, and the calls an operator makes (requests, actions, brokers joining and leaving)."""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from events import (
    TOPICS,
    BrokerRemovalRequested,
    Decoded,
    DeadLetter,
    RebalanceAction,
    RebalanceRequest,
    RebalanceState,
    RebalanceStatus,
)
from services.common import busio
from services.local.stack import LocalStack
from services.adapters.cruise_control.client import without_session
from tests.integration.conftest import TEST_ENV
from tests.integration.harness import Follower
from tests.patience import WAIT_S

TOPIC_NAMES = [f"data-{i}" for i in range(6)]
# Fast loops, so failure paths resolve within seconds.
ENV = {**TEST_ENV, "BALLAST_REBALANCER__POLL_INTERVAL_S": "0.3", "BALLAST_REBALANCER__RETRY_INITIAL_S": "0.3",
       "BALLAST_REBALANCER__RETRY_MAX_S": "1", "BALLAST_REBALANCER__OBSERVE_INTERVAL_S": "0.5"}


class Rebalancing(Follower):
    def __init__(self, stack: LocalStack) -> None:
        self.stack = stack
        self.sim = httpx.Client(base_url=stack.sim_url, timeout=10)
        self.cc = without_session(httpx.Client(
            base_url=f"http://127.0.0.1:{stack.ports.cruise_control}/kafkacruisecontrol", timeout=10))
        self.latest: dict[str, RebalanceStatus] = {}
        self.history: dict[str, list[RebalanceStatus]] = defaultdict(list)
        self.dead_letters: list[DeadLetter] = []
        super().__init__(stack.settings(), [TOPICS.rebalance_status.name, TOPICS.dead_letters.name])

    def take(self, decoded: Decoded) -> None:
        event = decoded.event
        if isinstance(event, RebalanceStatus):
            self.latest[event.name] = event
            self.history[event.name].append(event)
        elif isinstance(event, DeadLetter):
            self.dead_letters.append(event)

    # -- waiting -------------------------------------------------------------------------------------------------

    def wait_for(self, name: str, predicate: Callable[[RebalanceStatus], bool], what: str,
                 timeout: float = WAIT_S) -> RebalanceStatus:
        def describe() -> str:
            status = self.latest.get(name)
            return status.model_dump_json(by_alias=True, exclude_none=True, exclude={"request"}) if status else "none"

        try:
            self.wait(f"{name}: {what}", lambda: name in self.latest and predicate(self.latest[name]), timeout)
        except AssertionError as exc:
            raise AssertionError(f"{exc} (last: {describe()})") from None
        return self.latest[name]

    def wait_state(self, name: str, state: RebalanceState, timeout: float = WAIT_S) -> RebalanceStatus:
        return self.wait_for(name, lambda s: s.state == state, f"state {state}", timeout)

    def states(self, name: str) -> list[RebalanceState]:
        """The states ``name`` went through, each once in a row."""
        states: list[RebalanceState] = []
        for status in self.history[name]:
            if not states or states[-1] != status.state:
                states.append(status.state)
        return states

    def wait_brokers_known(self, timeout: float = WAIT_S) -> None:
        """Until the rebalancer has had its first look at the brokers: a broker added before it is not 'new'. Its
        health port can refuse for a while (seen on a loaded machine), as it does while a rebalancer that lost its
        lease starts over in its process (services.common.lease)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                health = self.stack.http.get(self.stack.health_url("rebalancer"), timeout=5).json()
            except httpx.TransportError:
                health = {}
            if health.get("knownBrokers") is not None:
                return
            time.sleep(0.2)
        raise AssertionError("the rebalancer never looked at the brokers")

    # -- what an operator does -----------------------------------------------------------------------------------

    def request(self, **fields: object) -> RebalanceRequest:
        request = RebalanceRequest.model_validate(fields)
        busio.publish(self.bus, TOPICS.rebalance_requests, [request])
        return request

    def act(self, name: str, action: str) -> None:
        event = RebalanceAction(name=name, action=action)  # type: ignore[arg-type]
        busio.publish(self.bus, TOPICS.rebalance_actions, [event])

    def announce_removal(self, *brokers: int) -> None:
        event = BrokerRemovalRequested(brokers=list(brokers))
        busio.publish(self.bus, TOPICS.scaling, [event])

    def add_broker(self, broker: int, rack: str) -> None:
        self.sim.post("/admin/brokers", json={"id": broker, "rack": rack}).raise_for_status()

    def remove_broker(self, broker: int) -> None:
        self.sim.delete(f"/admin/brokers/{broker}").raise_for_status()

    def create_topic(self, name: str, partitions: int = 12, rf: int = 3,
                     assignment: list[list[int]] | None = None) -> None:
        body: dict[str, object] = {"name": name, "partitions": partitions, "replicationFactor": rf}
        if assignment is not None:
            body["assignment"] = assignment
        self.sim.post("/admin/topics", json=body).raise_for_status()

    def delete_topic(self, name: str) -> None:
        self.sim.delete(f"/admin/topics/{name}").raise_for_status()

    def fault(self, path: str, body: dict | None = None) -> None:
        response = self.sim.post(f"/faults/{path}", json=body or {})
        assert response.status_code in (200, 204), response.text

    def tune(self, **tuning: float) -> None:
        self.fault("tuning", tuning)

    # -- what the cluster says -----------------------------------------------------------------------------------

    def replicas_per_broker(self) -> dict[int, int]:
        counts = {b["id"]: 0 for b in self.sim.get("/admin/brokers").json()["brokers"]}
        for topic in self.sim.get("/admin/topics").json()["topics"]:
            for partition in topic["partitions"]:
                for broker in partition["replicas"]:
                    counts[broker] = counts.get(broker, 0) + 1
        return counts

    def tasks(self) -> list[dict]:
        return self.cc.get("/user_tasks", params={"json": "true"}).json()["userTasks"]

    def executor(self) -> dict:
        return self.cc.get("/state", params={"json": "true", "substates": "executor"}).json()["ExecutorState"]

    def close(self) -> None:
        self.stop()
        self.sim.close()
        self.cc.close()


@contextmanager
def rebalancing_stack(run_dir: Path, env: dict[str, str]) -> Iterator[Rebalancing]:
    """The broker, the simulator (with TOPIC_NAMES created) and the rebalancer alone, after its first look at the
    brokers."""
    with LocalStack(run_dir, env=env, services=("rebalancer",)) as stack:
        stack.start()
        client = Rebalancing(stack)
        try:
            for name in TOPIC_NAMES:
                client.create_topic(name)
            client.wait_brokers_known()
            yield client
        finally:
            client.close()
