"""The simulator answers as the real Cruise Control does: every exchange recorded from the real one
(``shared/reference/cruise-control-real/responses/*-real.json``) is replayed against the simulator, group by group on
a cluster set up as the real one's was, and the answers are held to the real ones: HTTP status, whether a
``User-Task-ID`` came, the error's exception and words, and the keys and types of the body. The differences that
remain are listed, each with its reason, in ``cruise_control_fidelity.yaml``; a listed difference that no longer
shows fails the test too, so the list stays true.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest
import yaml

from services.cluster_sim.app import Simulator
from services.cluster_sim.model import Cluster
from services.adapters.cruise_control.client import without_session
from tests.unit import sim_restart
from tests.unit.simulated import simulated_cluster

RECORDED = Path(__file__).resolve().parents[3] / "shared" / "reference" / "cruise-control-real" / "responses"
KNOWN_DIFFERENCES = yaml.safe_load((Path(__file__).with_name("cruise_control_fidelity.yaml")).read_text())
UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
RACKS = {1: "/dc1/r1", 2: "/dc1/r2", 3: "/dc2/r1", 4: "/dc2/r2", 5: "/dc1/r3"}


@dataclass
class Exchange:
    case: str
    method: str
    path: str  # the endpoint's path with the query, as recorded
    body: Any
    headers: dict[str, str]
    in_session: bool  # recorded with the session of the exchanges before it (the cookie sent back)
    status: int
    answer_headers: dict[str, str]
    answer: Any
    at: float

    @property
    def task_id(self) -> str | None:
        return self.answer_headers.get("user-task-id")


def recorded() -> dict[str, Exchange]:
    exchanges = {}
    for path in sorted(RECORDED.glob("*-real.json")):
        document = json.loads(path.read_text())
        request = document["request"]
        url = urlsplit(request["url"])
        headers = {k.lower(): v for k, v in document["headers"].items()}
        case = path.name.removesuffix("-real.json")
        exchanges[case] = Exchange(
            case=case, method=request["method"], path=url.path + (f"?{url.query}" if url.query else ""),
            body=request.get("body"), headers=request.get("headers") or {}, in_session="headers" not in request,
            status=document["status"], answer_headers=headers, answer=document["body"],
            at=parsedate_to_datetime(headers["date"]).timestamp())
    return exchanges


EXCHANGES = recorded()


# -- the clusters the recordings were made on ------------------------------------------------------------------------

def base_cluster(sim: Simulator, brokers: int = 4) -> Cluster:
    """Ballast's real local cluster as it was recorded: 4 brokers (a 5th, /dc1/r3, for the later cases), two log
    directories each, Ballast's own topics, and the test topics the requests name."""
    cluster = sim.cluster
    for broker in list(cluster.brokers):
        cluster.remove_broker(broker)
    for broker in range(1, brokers + 1):
        added = cluster.add_broker(broker, RACKS[broker])
        added.log_dirs = (f"/var/kafka/broker-{broker}/data-0", f"/var/kafka/broker-{broker}/data-1")
    topics = {"a": 3, "b": 3, "c": 2, "x.a": 3, "x.b": 3, "x.c": 2, "y.a": 2, "y.b": 2, "orders": 2, "payments": 2,
              "__consumer_offsets": 3, "ballast.topic.specs": 3, "ballast.topic.status": 3}
    for name, rf in topics.items():
        cluster.create_topic(name, 3, rf, {})
        for partition in cluster.topics[name].partitions:
            partition.size_mb = 3.0
    return cluster


@dataclass
class Group:
    """Exchanges replayed in the order recorded, on a fresh simulator set up by ``setup``."""

    name: str
    cases: list[str]
    setup: Callable[[Simulator, HttpClient], Awaitable[dict[str, str]]] | None = None  # -> real id: simulator id
    brokers: int = 4
    scanner_period_s: float = 0.01  # the recordings were paced by hand; the replay is not
    tuning: dict[str, float] = field(default_factory=dict)


class HttpClient:
    """One client per exchange, or one with a session (cookies kept) for exchanges recorded in one."""

    def __init__(self, sim: Simulator) -> None:
        self.base = f"http://127.0.0.1:{sim.settings.cruise_control_port}"
        self.session = httpx.AsyncClient(base_url=self.base, timeout=20)

    async def send(self, method: str, path: str, *, body: Any = None, headers: dict[str, str] | None = None,
                   in_session: bool = False) -> httpx.Response:
        if in_session:
            return await self.session.request(method, path, json=body, headers=headers)
        async with without_session(httpx.AsyncClient(base_url=self.base, timeout=20)) as fresh:
            return await fresh.request(method, path, json=body, headers=headers)


async def execute_tc(http: HttpClient, rf: int, topic: str, *, in_session: bool = False) -> str:
    answer = await http.send("POST", "/kafkacruisecontrol/topic_configuration?json=true&dryrun=false"
                             "&skip_rack_awareness_check=true", in_session=in_session,
                             body={"replication_factor": {"topic_by_replication_factor": {str(rf): topic}}})
    assert answer.status_code == 200, answer.text
    return answer.headers["User-Task-ID"]


async def executing(sim: Simulator, http: HttpClient) -> dict[str, str]:
    """tc-exec's execution runs on while the group's other requests are made (its task: recorded in the session)."""
    sim.cruise_control.tuning.min_execution_s = 30.0
    return {}


async def full_servlet(sim: Simulator, http: HttpClient) -> dict[str, str]:
    """Five requests just answered: their tasks are still active until the scanner's next run."""
    sim.cruise_control.tuning.task_scanner_period_s = 60.0
    for _ in range(5):
        assert (await http.send("GET", "/kafkacruisecontrol/state?json=true")).status_code == 200
    return {}


async def restarted(sim: Simulator, http: HttpClient) -> dict[str, str]:
    await execute_tc(http, 3, "c")
    await asyncio.sleep(0.2)
    await sim_restart.restarted(sim, warmup_s=0.0)
    return {}


async def failed_disk(sim: Simulator, http: HttpClient) -> dict[str, str]:
    broker = sim.cluster.brokers[5]
    sim.cluster.fail_log_dir(5, broker.log_dirs[1], [])
    return {}


async def dead_broker(sim: Simulator, http: HttpClient) -> dict[str, str]:
    await failed_disk(sim, http)
    sim.cluster.set_alive(4, False)
    return {}


async def broker_removed(sim: Simulator, http: HttpClient) -> dict[str, str]:
    answer = await http.send("POST", "/kafkacruisecontrol/remove_broker?json=true&dryrun=false&brokerid=5")
    assert answer.status_code == 200, answer.text
    await wait_idle(sim)
    return {}


async def mixed_rf(sim: Simulator, http: HttpClient) -> dict[str, str]:
    """x.a with one partition at another RF than the others (a change that was stopped part-way)."""
    partition = sim.cluster.topics["x.a"].partitions[0]
    partition.replicas = partition.replicas[:2]
    return {}


async def failed_execution(sim: Simulator, http: HttpClient) -> dict[str, str]:
    """A rebalance execution that ended CompletedWithError (stopped here; recorded: a broker died under it)."""
    sim.cruise_control.tuning.min_execution_s = 3600  # still executing when the stop comes, however slow the machine
    sim.cluster.add_broker(6, "/dc2/r3")
    answer = await http.send("POST", "/kafkacruisecontrol/rebalance?json=true&dryrun=false"
                             "&reason=ballast-rebalance-84367e3f-9db8-45ed-ae9e-e02d72c93319&replication_throttle=5000000")
    assert answer.status_code == 200, answer.text
    await asyncio.sleep(0.2)
    await http.send("POST", "/kafkacruisecontrol/stop_proposal_execution?json=true")
    sim.cruise_control.execution.duration_s = 0  # the movement in flight when it was stopped ends now
    await wait_idle(sim)
    return {"d77993f6-386d-4ade-9f9f-56edeebd392d": answer.headers["User-Task-ID"]}


async def wait_idle(sim: Simulator, timeout_s: float = 20.0) -> None:
    deadline = time.monotonic() + timeout_s
    while sim.cruise_control.execution is not None:
        assert time.monotonic() < deadline, "the execution never ended"
        await asyncio.sleep(0.05)
    await asyncio.sleep(0.05)


HEALTHY = ["state", "state-substates", "kafka_cluster_state", "load", "partition_load", "load-disk",
           "partition_load-topic", "user_tasks", "proposals", "proposals-verbose", "tc-dryrun", "tc-dryrun-rackcheck",
           "tc-nomatch", "tc-already", "tc-badparam", "tc-rf-too-high", "tc-nobody", "tc-querystyle",
           "state-executing", "rebalance-dryrun", "rebalance-disk-dryrun", "add_broker-dryrun", "remove_broker-dryrun",
           "remove_broker-unknown", "fix_offline_replicas-dryrun", "remove_disks-dryrun", "rebalance-goals-badgoal",
           "rebalance-ballast-params", "rebalance-disk-with-intra", "rebalance-unknown-utid", "rebalance-reask-utid",
           "rebalance-reask-utid-otherparams", "user_tasks-ids", "user_tasks-badid", "user_tasks-unknown",
           "user_tasks-endpoints", "user_tasks-endpoints-upper"]
GROUPS = [
    Group("healthy", HEALTHY),
    Group("one session during an execution, then after its stop",
          ["tc-exec", "state-executor-during", "rebalance-dryrun-while-executing", "user_tasks-during-fetch",
           "rebalance-while-executing", "tc-second-while-executing", "state-executor-during-nonverbose",
           "user_tasks-during", "stop_proposal_execution-idle", "state-executor-after-stop", "user_tasks-after-stop",
           "user_tasks-after-stop-fetch"], executing),
    # Its execution ran while tc-querystyle was asked, four seconds later: replayed alone.
    Group("dryrun=maybe executes", ["tc-badvalue"]),
    Group("servlet capacity", ["kafka_cluster_state-during", "stop_proposal_execution"], full_servlet),
    Group("after a restart", ["user_tasks-after-restart", "state-after-restart", "rebalance-dryrun-after-restart"],
          restarted),
    Group("a failed disk", ["load-disk-offline", "kafka_cluster_state-offline"], failed_disk, brokers=5),
    Group("a broker removed", ["add_broker-recently-removed", "rebalance-after-remove"], broker_removed, brokers=5),
    Group("mixed replication factors", ["tc-mixed-rf", "tc-rack-violation"], mixed_rf, brokers=5),
    Group("a proposal computed past the block time", ["rebalance-202"], None,
          tuning={"proposal_s": 1.0, "max_block_s": 0.15}),
    Group("a failed execution", ["user_tasks-failed-task", "user_tasks-failed-task-fetch"], failed_execution,
          brokers=5),
    Group("a dead broker", ["fix_offline_replicas-deadbroker", "kafka_cluster_state-deadbroker", "load-deadbroker"],
          dead_broker, brokers=5),
]


def test_every_recorded_exchange_is_replayed() -> None:
    replayed = [case for group in GROUPS for case in group.cases]
    assert len(replayed) == len(set(replayed))
    assert sorted(replayed) == sorted(EXCHANGES), "a recorded exchange belongs to no group"


# -- comparing two answers -------------------------------------------------------------------------------------------

def shape(value: Any) -> Any:
    """Keys and types, recursively. A dict keyed by data (broker ids, log directories, aggregates) is a map: only its
    values' shape counts; a list's shape is the union of its elements' (an empty list matches any list)."""
    if isinstance(value, dict):
        if value and all(_is_data_key(k) for k in value):
            return ("map", _union([shape(v) for v in value.values()]))
        return {k: shape(v) for k, v in value.items()}
    if isinstance(value, list):
        return ("list", _union([shape(v) for v in value]))
    return frozenset({type(value).__name__})


def _is_data_key(key: str) -> bool:
    return key.isdigit() or key.startswith("/") or (key.isupper() and "_" in key) or key in ("AVG", "MAX", "MIN", "STD")


def _union(shapes: list[Any]) -> Any:
    merged = None
    for one in shapes:
        merged = one if merged is None else _merge(merged, one)
    return merged


def _merge(a: Any, b: Any) -> Any:
    if isinstance(a, dict) and isinstance(b, dict):
        return {k: _merge(a[k], b[k]) if k in a and k in b else a.get(k, b.get(k)) for k in {*a, *b}}
    if isinstance(a, tuple) and isinstance(b, tuple) and a[0] == b[0]:
        return (a[0], b[1] if a[1] is None else a[1] if b[1] is None else _merge(a[1], b[1]))
    if isinstance(a, frozenset) and isinstance(b, frozenset):
        return a | b
    return frozenset({"mixed"})


def shape_differences(real: Any, sim: Any, path: str = "") -> list[str]:
    """Where two shapes differ, as 'path: real vs simulator'."""
    if isinstance(real, dict) and isinstance(sim, dict):
        found = []
        for key in sorted({*real, *sim}):
            if key not in sim:
                found.append(f"{path}/{key}: missing in the simulator")
            elif key not in real:
                found.append(f"{path}/{key}: only in the simulator")
            else:
                found.extend(shape_differences(real[key], sim[key], f"{path}/{key}"))
        return found
    if isinstance(real, tuple) and isinstance(sim, tuple) and real[0] == sim[0]:
        if real[1] is None or sim[1] is None:
            return []
        return shape_differences(real[1], sim[1], f"{path}[]")
    if real == sim:
        return []
    show = lambda s: "|".join(sorted(s)) if isinstance(s, frozenset) else s  # noqa: E731
    return [f"{path}: {show(real)} vs {show(sim)}"]


def error_of(answer: Any) -> str | None:
    """The exception and words of an error answer, with figures that depend on the cluster made neutral."""
    if not isinstance(answer, dict) or "errorMessage" not in answer:
        return None
    text = answer["errorMessage"]
    text = UUID.sub("<id>", text)
    text = re.sub(r"\[Broker\[id=.*\]\] to fix", "[<brokers>] to fix", text)
    text = re.sub(r"Supported: \[[^\]]*\]", "Supported: [<goals>]", text)
    text = re.sub(r"\d+", "<n>", text)
    return text


def differences(real: Exchange, status: int, headers: httpx.Headers, answer: Any) -> dict[str, str]:
    found: dict[str, str] = {}
    if status != real.status:
        found["status"] = f"real {real.status}, simulator {status}"
    if (real.task_id is not None) != ("User-Task-ID" in headers):
        found["User-Task-ID"] = f"real {'sent' if real.task_id else 'none'}, simulator " \
                                f"{'sent' if 'User-Task-ID' in headers else 'none'}"
    real_error, sim_error = error_of(real.answer), error_of(answer)
    if real_error != sim_error:
        found["error"] = f"real {real_error!r}, simulator {sim_error!r}"
    elif real_error is None and (gaps := shape_differences(shape(real.answer), shape(answer))):
        found["body"] = "; ".join(gaps)
    return found


# -- the replay ------------------------------------------------------------------------------------------------------

@pytest.fixture
async def simulator() -> AsyncIterator[Simulator]:
    async with simulated_cluster(proposal_s=0.01, min_execution_s=0.2, task_scanner_period_s=0.01) as cluster:
        yield cluster.simulator


def _ids_in(exchange: Exchange) -> set[str]:
    return set(UUID.findall(exchange.path)) | set(UUID.findall(" ".join(exchange.headers.values())))


@pytest.mark.parametrize("group", GROUPS, ids=[g.name for g in GROUPS])
async def test_the_simulator_answers_as_the_real_cruise_control(simulator: Simulator, group: Group) -> None:
    sim = simulator
    base_cluster(sim, group.brokers)
    sim.cruise_control.tuning.task_scanner_period_s = group.scanner_period_s
    for name, value in group.tuning.items():
        setattr(sim.cruise_control.tuning, name, value)
    http = HttpClient(sim)
    try:
        ids = await group.setup(sim, http) if group.setup else {}
        found: dict[str, dict[str, str]] = {}
        sim_task_of: dict[str, str | None] = {}
        for case in sorted(group.cases, key=lambda c: EXCHANGES[c].at):
            real = EXCHANGES[case]
            path, headers = real.path, dict(real.headers)
            for real_id in _ids_in(real):
                sim_id = ids.get(real_id, real_id)
                path = path.replace(real_id, sim_id)
                headers = {k: v.replace(real_id, sim_id) for k, v in headers.items()}
            # The recordings were paced by hand, so the real task scanner ran between any two requests: without a
            # pause, five requests answered within one of its periods kept their tasks active and the sixth was
            # refused for the servlet's capacity (seen on an idle machine, where they took 5 ms).
            await asyncio.sleep(2 * group.scanner_period_s)
            answer = await http.send(real.method, path, body=real.body, headers=headers, in_session=real.in_session)
            if real.task_id is not None and "User-Task-ID" in answer.headers:
                ids.setdefault(real.task_id, answer.headers["User-Task-ID"])
            sim_task_of[case] = answer.headers.get("User-Task-ID")
            if gaps := differences(real, answer.status_code, answer.headers, answer.json()):
                found[case] = gaps
        # Two answers the real one gave from one task (a session's cached answer) come from one task here too.
        for case in group.cases:
            for other in group.cases:
                if other < case and EXCHANGES[case].task_id and EXCHANGES[case].task_id == EXCHANGES[other].task_id:
                    assert sim_task_of[case] == sim_task_of[other], f"{case} is {other}'s task again"
    finally:
        await http.session.aclose()
    listed = {case: set(KNOWN_DIFFERENCES.get(case, {})) for case in group.cases if case in KNOWN_DIFFERENCES}
    assert {case: set(gaps) for case, gaps in found.items()} == listed, json.dumps(found, indent=1)
