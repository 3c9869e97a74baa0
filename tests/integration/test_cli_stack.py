"""The stack `ballast up` starts, as the CLI finds it (issue 18, defect 8): from any directory, with nothing
exported, the demo's services and the Spark job running; `ballast env` for other tools (which
setting wins: tests/unit/test_cli_globals.py).
And its services' logs (defect 7): JSON lines only. (Ctrl-C on the Spark job: tests/integration/test_load_flow.py.)"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx

from services.local.broker import free_port
from tests.integration.test_stack_lifecycle import alive

REPO = Path(__file__).resolve().parents[2]


def ballast(cwd: Path, state: Path, *args: str, timeout_s: float = 240) -> subprocess.CompletedProcess[str]:
    cwd.mkdir(parents=True, exist_ok=True)
    # Nothing of any stack in the environment: only where `ballast up` keeps its state.
    env = {k: v for k, v in os.environ.items() if not k.startswith("BALLAST_")}
    env.update({"BALLAST_STATE_DIR": str(state), "PYTHONPATH": str(REPO)})
    return subprocess.run([sys.executable, "-m", "services.cli", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=timeout_s)


def test_a_stack_started_in_one_directory_is_used_from_any_other(tmp_path: Path) -> None:
    state = tmp_path / "state"
    # Without the Spark job: its JVM is half this test's CPU, and the job in a stack is test_load_flow's (its log,
    # JSON only, test_load_flow's Ctrl-C test).
    started = ballast(tmp_path / "here", state, "up", "--no-spark")
    assert started.returncode == 0, started.stdout + started.stderr
    info = json.loads((state / "stack.json").read_text())
    try:
        assert set(info["pids"]) == {"broker", "cluster-sim", "topic-reconciler", "replicas-change", "rebalancer",
                                     "load-collector"}
        assert all(alive(pid) for pid in info["pids"].values())

        exported = ballast(tmp_path / "elsewhere", state, "env")
        assert exported.returncode == 0, exported.stderr
        lines = exported.stdout.splitlines()
        exports = dict(line.removeprefix("export ").split("=", 1) for line in lines if line.startswith("export "))
        # Issue 30, defect 11: where each service's health and metrics are, as comments eval skips.
        comments = [line for line in lines if not line.startswith("export ")]
        assert all(line.startswith("# ") for line in comments), comments
        assert f"# topic-reconciler: http://127.0.0.1:{info['ports']['topic_reconciler']}/health, /metrics" in comments
        assert "Endpoints:" in started.stdout and f"127.0.0.1:{info['ports']['rebalancer']}/health" in started.stdout
        assert exports["BALLAST_BUS__BOOTSTRAP_SERVERS"] == info["env"]["BALLAST_BUS__BOOTSTRAP_SERVERS"]
        assert exports["BALLAST_CLUSTER_ADMIN__SIMULATOR_URL"] == info["env"]["BALLAST_CLUSTER_ADMIN__SIMULATOR_URL"]

        spec = tmp_path / "elsewhere" / "orders.yaml"
        spec.write_text("name: orders\npartitions: 2\nreplicas: 2\n")
        applied = ballast(tmp_path / "elsewhere", state, "apply", "-f", str(spec))
        assert applied.returncode == 0, applied.stderr
        assert _ready(tmp_path / "third", state, "orders")["replicas"] == 2
        _doctor_on_the_stack(tmp_path / "fifth", state, info)
        _a_broker_added(tmp_path / "sixth", state, info)

        # Every line of a service's log is one JSON object (defect 7): nothing of faust's terminal spinner (what
        # the libraries log is in tests/unit/test_logging.py).
        logs = Path(info["run_dir"]) / "logs"
        for service in ("topic-reconciler", "replicas-change", "rebalancer", "load-collector", "cluster-sim"):
            lines = _json_lines(logs / f"{service}.log")
            assert all(line["service"] == service and line["level"] and line["timestamp"] for line in lines), service
            # The faust services say at least that they started.
            assert lines or service == "cluster-sim", service
    finally:
        stopped = ballast(tmp_path / "fourth", state, "down")
    assert stopped.returncode == 0, stopped.stderr
    assert not (state / "stack.json").exists()
    assert not any(alive(pid) for pid in info["pids"].values())
    assert ballast(tmp_path / "fourth", state, "env").returncode == 1


def _doctor_on_the_stack(cwd: Path, state: Path, info: dict) -> None:
    """Issue 56, defect 1: `ballast doctor` on a `ballast up` stack used the default ports (every service down, exit
    1), never checked the throttle controller or the Spark job, hung past three minutes on a frozen Cruise Control,
    and flooded stderr with librdkafka's lines while the bus was unreachable. The stack's record named a throttle
    port where nothing listened."""
    assert info["ports"]["throttle"] == 0 and "BALLAST_PORTS__THROTTLE" not in info["env"]
    exports = ballast(cwd, state, "env").stdout
    for service in ("TOPIC_RECONCILER", "REPLICAS_CHANGE", "REBALANCER", "LOAD_COLLECTOR"):
        assert f"export BALLAST_PORTS__{service}={info['env'][f'BALLAST_PORTS__{service}']}" in exports, exports
    healthy = ballast(cwd, state, "doctor", "-o", "json")
    checks = {c["name"]: c for c in map(json.loads, healthy.stdout.splitlines())}
    assert healthy.returncode == 0, healthy.stdout + healthy.stderr
    assert {n: c["health"] for n, c in checks.items()} == {
        "bus": "ok", "cluster": "ok", "cruise-control": "ok", "topic-reconciler": "ok", "replicas-change": "ok",
        "rebalancer": "ok", "load-collector": "ok", "throttle": "off", "spark-aggregates": "off"}
    assert checks["rebalancer"]["address"] == f"http://127.0.0.1:{info['ports']['rebalancer']}"

    simulator = info["pids"]["cluster-sim"]
    os.kill(simulator, signal.SIGSTOP)  # Cruise Control (and the simulated cluster's admin API) frozen
    try:
        frozen = ballast(cwd, state, "doctor", "-o", "json", "--timeout", "3", timeout_s=60)
    finally:
        os.kill(simulator, signal.SIGCONT)
    checks = {c["name"]: c for c in map(json.loads, frozen.stdout.splitlines())}
    assert frozen.returncode == 1 and checks["cruise-control"]["health"] == "down", checks
    assert checks["cruise-control"]["detail"] == "no answer in 3 s", checks
    assert checks["topic-reconciler"]["health"] == "ok", checks

    gone = ballast(cwd, state, "--bootstrap-server", f"127.0.0.1:{free_port()}", "doctor", "-o", "json",
                   "--timeout", "3")
    checks = {c["name"]: c for c in map(json.loads, gone.stdout.splitlines())}
    assert gone.returncode == 1 and checks["bus"]["health"] == "down", checks
    assert gone.stderr == "", "librdkafka's own lines"


def _a_broker_added(cwd: Path, state: Path, info: dict) -> None:
    """Issue 56, defect 11: `ballast up --add-broker` on the embedded stack adds a broker to the simulated cluster
    (the next id, the least used rack unless told), which the rebalancer sees join."""
    health = f"http://127.0.0.1:{info['ports']['rebalancer']}/health"
    deadline = time.monotonic() + 120
    while httpx.get(health, timeout=5).json().get("knownBrokers") != [1, 2, 3, 4, 5, 6]:
        assert time.monotonic() < deadline, "the rebalancer never looked at the brokers"
        time.sleep(0.5)
    added = ballast(cwd, state, "up", "--add-broker")
    assert added.returncode == 0, added.stdout + added.stderr
    assert "broker 7 (/dc1/r1) joined the cluster (the simulated cluster)" in added.stdout, added.stdout
    wrong = ballast(cwd, state, "up", "--add-broker", "--rack", "/dc4")
    assert wrong.returncode == 2 and "--rack /dc4: rack paths mix depths" in wrong.stderr, wrong.stderr
    simulator = info["env"]["BALLAST_CLUSTER_ADMIN__SIMULATOR_URL"]
    brokers = httpx.get(f"{simulator}/admin/brokers", timeout=10).json()["brokers"]
    assert [(b["id"], b["rack"]) for b in brokers][-1] == (7, "/dc1/r1")
    while 7 not in (httpx.get(health, timeout=5).json().get("knownBrokers") or []):
        assert time.monotonic() < deadline, "the rebalancer did not see broker 7 join"
        time.sleep(0.5)


def _ready(cwd: Path, state: Path, topic: str) -> dict:
    deadline = time.monotonic() + 120
    last = None
    while time.monotonic() < deadline:
        shown = ballast(cwd, state, "status", topic, "-o", "json")
        if shown.returncode == 0:
            last = json.loads(shown.stdout)
            if last["ready"] and last.get("replicas") == 2:
                return last
        time.sleep(1)
    raise AssertionError(f"{topic} not ready within 120 s: {last}")


def _json_lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]  # raises on any line that is not JSON
