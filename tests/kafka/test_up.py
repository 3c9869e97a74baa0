"""The real cluster as a user meets it: `ballast up --kafka`, any Kafka client pointed at it, a spec applied with
the CLI, `ballast down`; and a killed starter leaves no JVM behind."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import httpx
import pytest
from confluent_kafka.admin import AdminClient

from services.local.kafka_cluster import DEFAULT_RACKS
from services.local.kafka_probe import admin_client
from tests.integration.test_stack_lifecycle import alive
from tests.unit.best_placement import improving_moves

BALLAST = [sys.executable, "-m", "services.cli"]
REPO = Path(__file__).resolve().parents[2]


def run(cwd: Path, *args: str, env: dict[str, str] | None = None, timeout: float = 600
        ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*BALLAST, *args], cwd=cwd, env={**os.environ, "PYTHONPATH": str(REPO), **(env or {})},
                          capture_output=True, text=True, timeout=timeout)


def ballast(cwd: Path, *args: str, env: dict[str, str] | None = None, timeout: float = 600) -> str:
    result = run(cwd, *args, env=env, timeout=timeout)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


@pytest.mark.timeout(900)  # a whole cluster started, used and stopped: minutes on a loaded machine
def test_up_kafka_a_spec_from_the_cli_and_down(tmp_path: Path) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_text("replicas: {min: 2}\n")
    state = {"BALLAST_STATE_DIR": str(tmp_path / "state"), "BALLAST_POLICY_FILE": str(policy)}
    ballast(tmp_path, "up", "--kafka", "--no-spark", env=state)
    stack = json.loads((tmp_path / "state" / "stack.json").read_text())
    try:
        env = {**stack["env"], "BALLAST_POLICY_FILE": str(policy)}
        assert env["BALLAST_CLUSTER_ADMIN__KIND"] == "kafka"
        bootstrap = env["BALLAST_CLUSTER_ADMIN__BOOTSTRAP_SERVERS"]
        assert bootstrap == env["BALLAST_BUS__BOOTSTRAP_SERVERS"]
        # Any Kafka client: librdkafka sees 4 brokers and their racks; kafka-python two log dirs on each.
        librdkafka = AdminClient({"bootstrap.servers": bootstrap})
        nodes = librdkafka.describe_cluster(request_timeout=10).result().nodes
        assert sorted((n.id, n.rack) for n in nodes) == list(enumerate(DEFAULT_RACKS, start=1))
        with admin_client(bootstrap, timeout_ms=10_000) as admin:
            dirs = Counter(entry["broker"] for entry in admin.describe_log_dirs() for _ in entry["log_dirs"])
        assert dirs == {1: 2, 2: 2, 3: 2, 4: 2}

        (tmp_path / "orders.yaml").write_text("name: orders\npartitions: 4\nreplicas: 2\nplacer: multi-level\n")
        ballast(tmp_path, "apply", "-f", "orders.yaml", env=env)
        with admin_client(bootstrap, timeout_ms=10_000) as admin:
            topic = _wait_topic(admin, "orders")
            # What the placer counts: every partition of the topics that are not internal.
            everything = [list(p["replica_nodes"]) for t in admin.describe_topics()
                          if not t.get("is_internal") and not t["name"].startswith("__") for p in t["partitions"]]
        racks = dict(enumerate(DEFAULT_RACKS, start=1))
        placed = [list(partition["replica_nodes"]) for partition in topic["partitions"]]
        for replicas in placed:
            # multi-level: one replica in each data centre.
            assert sorted(racks[b][:4] for b in replicas) == ["/dc1", "/dc2"], replicas
        # Ballast's own topics already lead on some brokers: the new leaders go to the others.
        assert improving_moves(placed, everything, {b: rack[:4] for b, rack in racks.items()}) == []
        day_two_on_real_kafka(tmp_path, env, bootstrap)
    finally:
        try:
            out = ballast(tmp_path, "down", env=state)
            assert "kafka-controller" in out
            assert not any(alive(pid) for pid in stack["pids"].values())
        finally:
            # What a failed or timed-out `down` left (seen on an overloaded machine: a whole cluster, idle but busy,
            # for the rest of the run).
            for pid in stack["pids"].values():
                if alive(pid):
                    with contextlib.suppress(ProcessLookupError):
                        os.killpg(pid, signal.SIGKILL)


def day_two_on_real_kafka(cwd: Path, env: dict[str, str], bootstrap: str) -> None:
    """Issue 30 on the stack `ballast up --kafka` started (its own cluster, so a prune touches no other test's
    topics): a directory applied then pruned, the policy refusing an RF 1 spec, `ballast doctor`."""
    from events import TOPICS, TopicSpec
    from services.common import busio
    from services.common.settings import BusSettings

    specs = cwd / "specs"
    specs.mkdir()
    (specs / "orders.yaml").write_text("name: orders\npartitions: 4\nreplicas: 2\nplacer: multi-level\n")
    (specs / "audit.yaml").write_text("name: audit\npartitions: 1\nreplicas: 2\n")
    ballast(cwd, "apply", "-f", "specs", "--wait", "--timeout", "300", env=env)
    (specs / "audit.yaml").unlink()
    assert "spec withdrawn: the topic is deleted with its data" in ballast(cwd, "apply", "-f", "specs", "--prune",
                                                                           "--yes", env=env)
    with admin_client(bootstrap, timeout_ms=10_000) as admin:
        deadline = time.monotonic() + 300  # generous deadlines: a loaded machine is slow, not wrong
        while any(t["error_code"] == 0 for t in admin.describe_topics(["audit"])):
            assert time.monotonic() < deadline, "audit was not deleted"
            time.sleep(0.5)

    (cwd / "rf1.yaml").write_text("name: single\npartitions: 1\nreplicas: 1\n")
    refused = run(cwd, "diff", "-f", "rf1.yaml", env=env)
    assert refused.returncode == 2 and "policy rule replicas.min" in refused.stdout, refused.stdout + refused.stderr
    bus = BusSettings(bootstrap_servers=bootstrap)
    busio.publish(bus, TOPICS.specs, [TopicSpec(name="single", partitions=1, replicas=1)])
    deadline = time.monotonic() + 300
    while (status := busio.latest(bus, TOPICS.status).get("single")) is None or not status.conditions:
        assert time.monotonic() < deadline, "no status for the refused spec"
        time.sleep(0.5)
    refusal = status.condition("PolicyViolation")
    assert not status.ready and refusal is not None and "policy rule replicas.min" in (refusal.message or "")

    healthy = run(cwd, "doctor", "-o", "json", env=env)
    assert healthy.returncode == 0, healthy.stdout + healthy.stderr
    sim = f"http://127.0.0.1:{env['BALLAST_SIMULATOR__ADMIN_PORT']}"
    httpx.post(f"{sim}/faults/cruise-control/stop", timeout=10).raise_for_status()
    try:
        stopped = run(cwd, "doctor", "-o", "json", env=env)
    finally:
        httpx.post(f"{sim}/faults/cruise-control/start", timeout=10).raise_for_status()
    checks = {c["name"]: c["health"] for c in map(json.loads, stopped.stdout.splitlines())}
    assert stopped.returncode == 1 and checks["cruise-control"] == "down" and checks["cluster"] == "ok", checks


def _wait_topic(admin, name: str) -> dict:  # noqa: ANN001
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        found = [t for t in admin.describe_topics([name]) if t["error_code"] == 0 and t["partitions"]]
        if found:
            return found[0]
        time.sleep(0.5)
    raise AssertionError(f"{name} was not created within 60 s")


STARTER = """
import json, sys, time
from pathlib import Path
from services.local.kafka_cluster import LocalKafka
kafka = LocalKafka(Path(sys.argv[1]), racks=["/dc1/r1"]).start()
nodes = [kafka.controller, *kafka.brokers.values()]
print("PIDS " + json.dumps([n.process.pid for n in nodes]), flush=True)
time.sleep(600)
"""


def test_a_killed_starter_takes_its_kafka_jvms_with_it(tmp_path: Path) -> None:
    starter = subprocess.Popen([sys.executable, "-c", STARTER, str(tmp_path)], stdout=subprocess.PIPE, text=True,
                               cwd=REPO)
    pids: list[int] = []
    try:
        assert starter.stdout is not None
        line = next(line for line in starter.stdout if line.startswith("PIDS "))
        pids = json.loads(line.removeprefix("PIDS "))
        assert len(pids) == 2 and all(alive(p) for p in pids)
    finally:
        starter.send_signal(signal.SIGKILL)
        starter.wait(timeout=30)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and any(alive(p) for p in pids):
        time.sleep(0.2)
    assert not any(alive(p) for p in pids), "a Kafka JVM outlived the process that started it"
