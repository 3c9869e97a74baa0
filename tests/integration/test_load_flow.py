"""Load from the simulator through the collector and the Spark job into placement, on the real local parts."""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from events import TOPICS, TopicSpec
from services.common import busio
from services.cli.views import latest_windows
from services.cluster_sim.load import _unit
from services.local.stack import LocalStack
from services.placement.model import Broker, ClusterView, PlacementSpec
from services.placement.multi_level import MultiLevelPlacer
from spark.session import SMALL_JOB_JVM
from tests.integration.conftest import TEST_ENV
from tests.patience import WAIT_S

# Three data centres, one broker per rack, two racks each: RF 3 puts one replica per DC, on either rack.
BROKERS = ["1:/dc1/r1", "2:/dc1/r2", "3:/dc2/r1", "4:/dc2/r2", "5:/dc3/r1", "6:/dc3/r2"]
ENV = {**TEST_ENV, "BALLAST_SIMULATOR__BROKERS": json.dumps(BROKERS), "BALLAST_LOAD_COLLECTOR__INTERVAL_S": "0.5",
       "BALLAST_SPARK__WINDOW_S": "4", "BALLAST_SPARK__SLIDE_S": "2", "BALLAST_SPARK__WATERMARK_S": "2",
       "BALLAST_SPARK__TRIGGER_S": "1", "BALLAST_PLACEMENT__PLACER": "multi-level"}


DIRS = ("/var/kafka/data-0", "/var/kafka/data-1")
PLACED_ENTITIES = ["broker:2", "broker:4", "broker:6", "domain:/dc1", "domain:/dc2/r2", *(
    f"log-dir:{b}:{DIRS[1]}" for b in (2, 4, 6))]


def heat(topic: str) -> float:
    return _unit(topic) ** 3  # the simulator's skew between topics (services.cluster_sim.load)


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalStack]:
    run_dir: Path = tmp_path_factory.mktemp("load-stack")
    with LocalStack(run_dir, env=ENV, services=("topic-reconciler", "load-collector")) as local:
        local.start()
        local.start_spark_job()
        yield local


def first_batch_written(stack: LocalStack, timeout_s: float = 420) -> None:
    """Until the Spark job has written its first batch. Starting Spark is the slow part, and slower still while the
    other worker runs its own Spark job or Kafka cluster (seen: 78 s to start, 63 s for the first batch)."""
    log = stack.logs / "spark-aggregates.log"
    deadline = time.monotonic() + timeout_s
    while '"event": "batch written"' not in (text := log.read_text(errors="replace")):
        assert stack.processes["spark-aggregates"].poll() is None, text[-3000:]
        assert time.monotonic() < deadline, f"no batch written within {timeout_s:.0f} s:\n{text[-3000:]}"
        time.sleep(1)


@pytest.mark.timeout(900)
def test_placement_follows_the_aggregates_to_the_lighter_brokers(stack: LocalStack) -> None:
    names = sorted((f"load-{i}" for i in range(200)), key=heat)
    cold, hot = names[0], names[-1]
    sim = httpx.Client(base_url=stack.sim_url, timeout=10)
    # The same replica counts everywhere, but the hot topic's replicas all sit on brokers 1, 3 and 5.
    for name, brokers in ((hot, [1, 3, 5]), (cold, [2, 4, 6])):
        sim.post("/admin/topics", json={"name": name, "partitions": 6, "replicationFactor": 3,
                                        "assignment": [brokers] * 6}).raise_for_status()
    # On the light brokers every replica sits in data-0: data-1 is the least-used directory there.
    sim.post(f"/admin/topics/{cold}/log-dirs", json={"replicas": [
        {"partition": p, "broker": b, "logDir": DIRS[0]} for p in range(6) for b in (2, 4, 6)]}).raise_for_status()
    bus = stack.settings().bus

    def broker_loads() -> dict[int, float]:
        aggregates = list(busio.latest(bus, TOPICS.load_aggregates).values())
        window = [a for a in latest_windows(aggregates) if a.entity_kind == "broker"]  # type: ignore[arg-type]
        return {int(a.entity): a.bytes_in_kb_s for a in window}

    first_batch_written(stack)
    deadline, loads = time.monotonic() + WAIT_S, {}
    while time.monotonic() < deadline:
        loads = broker_loads()
        if len(loads) == 6:
            break
        time.sleep(2)
    assert len(loads) == 6, f"no ended window with every broker in time: {loads}"
    assert all(loads[heavy] > loads[light] for heavy, light in ((1, 2), (3, 4), (5, 6))), loads

    # A topic whose placement by counts alone would not be the light brokers: the load is what makes the difference.
    # ... and one that the brokers themselves would put in data-0 somewhere (the simulator's stable choice).
    name = next(n for n in (f"placed-{i}" for i in range(100)) if sorted(counts_only(n, hot, cold)) != [2, 4, 6]
                and any(_unit(n, 0, b) < 0.5 for b in (2, 4, 6)))
    spec = TopicSpec(name=name, partitions=1, replicas=3)
    busio.publish(bus, TOPICS.specs, [spec])
    # The topic is created first, and its new replicas moved to the directories Ballast chose just after (a loaded
    # run looked in between): wait for the move.
    wanted, partition = {str(b): DIRS[1] for b in (2, 4, 6)}, None
    until = time.monotonic() + WAIT_S
    while time.monotonic() < until and not (partition is not None and partition["logDirs"] == wanted):
        found = sim.post("/admin/topics/describe", json={"names": [spec.name]}).json()["topics"]
        partition = found[0]["partitions"][0] if found else None
        time.sleep(0.3)
    assert partition is not None and sorted(partition["replicas"]) == [2, 4, 6], (partition, loads)
    assert partition["logDirs"] == wanted, partition["logDirs"]
    sim.close()

    # The placement reaches the aggregates: the window's placements on each broker and the domains above them.
    placed: dict[str, int] = {}
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline and not all(placed.get(e, 0) >= 1 for e in PLACED_ENTITIES):
        aggregates = busio.latest(bus, TOPICS.load_aggregates).values()
        placed = {}
        for a in aggregates:
            entity = f"{a.entity_kind}:{a.entity}"
            placed[entity] = max(placed.get(entity, 0), a.placements)  # type: ignore[attr-defined]
        time.sleep(1)
    assert all(placed.get(e, 0) == 1 for e in PLACED_ENTITIES), {e: placed.get(e) for e in PLACED_ENTITIES}


def counts_only(topic: str, hot: str, cold: str) -> list[int]:
    """Where the reconciler's placer (seed 0) would put one RF 3 partition of ``topic`` without load."""
    view = ClusterView.of([Broker(int(i), rack) for i, rack in (b.split(":") for b in BROKERS)],
                          {hot: [[1, 3, 5]] * 6, cold: [[2, 4, 6]] * 6})
    return MultiLevelPlacer(seed=0).place(PlacementSpec(1, 3, topic=topic), view)[0]


def _is_json_object(line: str) -> bool:
    try:
        return isinstance(json.loads(line), dict)
    except ValueError:
        return False


def _session_commands(session: int) -> list[list[str]]:
    """The command lines of the processes in a session (one that ends while they are read is left out). By session,
    not by walking /proc/<pid>/task/*/children, which the kernel documents as missing children of running processes
    (it once missed the job's JVM)."""
    commands = []
    for process in Path("/proc").glob("[0-9]*"):
        try:
            # The fields after the command name, which may hold spaces and parentheses: state, ppid, pgrp, session.
            if int((process / "stat").read_text().rsplit(")", 1)[1].split()[3]) == session:
                commands.append((process / "cmdline").read_text().split("\0"))
        except (FileNotFoundError, ProcessLookupError):
            continue
    return commands


def test_ctrl_c_stops_the_spark_job_cleanly(stack: LocalStack) -> None:
    """Issue 18, defect 7: SIGINT to the job's process group, as Ctrl-C in a terminal sends it, used to end in a few
    hundred lines of py4j traces; now the job stops its query between two waits, says so, and exits 0."""
    log = stack.logs / "spark-aggregates.log"
    deadline = time.monotonic() + WAIT_S
    while '"event": "running"' not in log.read_text():
        assert time.monotonic() < deadline, log.read_text()[-3000:]
        time.sleep(0.5)
    process = stack.processes["spark-aggregates"]
    # The local stack runs the job's JVM small (BALLAST_SPARK__JAVA_OPTIONS, spark.session.SMALL_JOB_JVM).
    # The job runs in a session of its own (services.local.broker.popen), which its JVM and Spark's Python workers join.
    (jvm,) = [command for command in _session_commands(process.pid) if command and command[0].endswith("java")]
    assert set(SMALL_JOB_JVM.split()) <= set(jvm), jvm
    os.killpg(process.pid, signal.SIGINT)
    assert process.wait(timeout=WAIT_S) == 0, log.read_text()[-3000:]
    after = log.read_text().split('"event": "running"', 1)[1]
    # The driver: no KeyboardInterrupt inside a py4j call. PySpark's own runner of the Python data source still
    # reports its socket closing when the query stops (python_streaming_source_runner has no clean end), a trace of
    # some 25 lines left alone.
    assert "KeyboardInterrupt" not in after and "py4j" not in after, after[-3000:]
    assert len(after.splitlines()) < 40, after
    # The whole log is the job's JSON lines: no console progress bar, and the JVM's own output (its warnings, Spark's
    # log4j lines, a Python worker's trace) as events of the job.
    not_json = [line for line in log.read_text().splitlines() if not _is_json_object(line)]
    assert not not_json, not_json
    events = [json.loads(line)["event"] for line in after.strip().splitlines()[1:]]
    assert "stopped" in events, after


def test_a_failed_disk_is_sampled_offline_and_sampling_goes_on(stack: LocalStack) -> None:
    """Issue 28: Cruise Control reports an offline log directory as "DEAD" instead of its figures; the collector
    kept failing on it and published nothing. Now the directory is sampled as offline, and the rest as before."""
    bus = stack.settings().bus
    with httpx.Client(base_url=stack.sim_url, timeout=10) as sim:
        sim.post("/faults/brokers/6/log-dirs/fail", json={"path": DIRS[1]}).raise_for_status()
    failed_key = f"log-dir:6:{DIRS[1]}"
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        samples = busio.latest(bus, TOPICS.load_samples)
        failed = samples.get(failed_key)
        if failed is not None and not failed.online:  # type: ignore[attr-defined]
            break
        time.sleep(1)
    else:
        raise AssertionError(f"no offline sample of {failed_key}")
    assert failed.disk_mb == 0.0 and failed.disk_pct is None  # type: ignore[attr-defined]
    later = time.monotonic() + 30
    while time.monotonic() < later:
        fresh = busio.latest(bus, TOPICS.load_samples)
        if fresh[f"log-dir:6:{DIRS[0]}"].sampled_at > failed.sampled_at:  # type: ignore[attr-defined]
            break
        time.sleep(1)
    assert fresh[f"log-dir:6:{DIRS[0]}"].online and fresh[f"log-dir:6:{DIRS[0]}"].sampled_at > failed.sampled_at, \
        "sampling goes on after the failure"
