"""The real cluster as a user meets it: `ballast up --kafka` on the user's own Cruise Control (a simulator started
here stands in for it) with broker settings and a jar of the user's on the brokers' classpath, any Kafka client
pointed at it, a spec applied with the CLI, a broker added, `ballast down`; and a killed starter leaves no JVM
behind."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
import zipfile
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
from confluent_kafka.admin import AdminClient

from services.local.broker import free_port
from services.local.kafka_cluster import DEFAULT_RACKS
from services.local.kafka_probe import admin_client
from tests.integration.test_stack_lifecycle import alive
from tests.unit.best_placement import uneven_spread

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
    cruise_control = OwnCruiseControl(tmp_path)
    reporter = MarkerReporter(tmp_path)
    started = ballast(tmp_path, "up", "--kafka", "--no-spark", *cruise_control.options(), *reporter.options(),
                      env={**state, **cruise_control.caller_env(),
                           # The caller's own setting, which the stack passes on: seed 001's automatic rebalance.
                           "BALLAST_REBALANCER__AUTO__ENABLED": "true"})
    record = tmp_path / "state" / "stack.json"
    stack = json.loads(record.read_text())
    try:
        env = {**stack["env"], "BALLAST_POLICY_FILE": str(policy)}
        assert env["BALLAST_CLUSTER_ADMIN__KIND"] == "kafka"
        bootstrap = env["BALLAST_CLUSTER_ADMIN__BOOTSTRAP_SERVERS"]
        assert bootstrap == env["BALLAST_BUS__BOOTSTRAP_SERVERS"]
        cruise_control.start(bootstrap)
        on_your_own_cruise_control(started, stack, cruise_control)
        reporter.loaded_by(stack, bootstrap, [1, 2, 3, 4])
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
        # Ballast's own topics already lead on some brokers; the topic's own spread comes first all the same (issue
        # 55): its replicas and leaders within one per broker.
        assert uneven_spread(placed, {b: rack[:4] for b, rack in racks.items()}) == [], everything
        day_two_on_real_kafka(tmp_path, env, bootstrap, cruise_control.admin_url)
        stack = a_broker_added(tmp_path, state, stack, cruise_control, reporter)
    finally:
        try:
            cruise_control.stop()
            if record.exists():
                stack = json.loads(record.read_text())  # with any broker added
            out = ballast(tmp_path, "down", env=state)
            # Every part the record names, the added broker too.
            assert {f"stopping {name}" for name in stack["pids"]} <= set(out.splitlines()), out
            assert not any(alive(pid) for pid in stack["pids"].values())
        finally:
            # What a failed or timed-out `down` left (seen on an overloaded machine: a whole cluster, idle but busy,
            # for the rest of the run).
            for pid in stack["pids"].values():
                if alive(pid):
                    with contextlib.suppress(ProcessLookupError):
                        os.killpg(pid, signal.SIGKILL)


class OwnCruiseControl:
    """The user's own Cruise Control, with Basic auth, which `ballast up --cruise-control` points the services at:
    here the simulator, started by the test once the cluster it manages is up (as a real one is: its
    bootstrap.servers are the stack's)."""

    USERNAME = "ballast"

    def __init__(self, tmp_path: Path) -> None:
        self.port = free_port()
        self.admin_url = f"http://127.0.0.1:{free_port()}"
        self.password = f"pw-{os.urandom(6).hex()}"
        self.password_file = tmp_path / "cruise-control-password"
        self.password_file.write_text(self.password)
        self.log = tmp_path / "own-cruise-control.log"
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def options(self) -> list[str]:
        return ["--cruise-control", self.url]

    def caller_env(self) -> dict[str, str]:
        """The user's own Cruise Control settings, which the stack must pass on to its services as they are."""
        return {"BALLAST_CRUISE_CONTROL__AUTH_ENABLED": "true", "BALLAST_CRUISE_CONTROL__USERNAME": self.USERNAME,
                "BALLAST_CRUISE_CONTROL__PASSWORD_FILE": str(self.password_file),
                "BALLAST_CRUISE_CONTROL__TASK_SCANNER_PERIOD_S": "0.5"}

    def start(self, bootstrap: str) -> None:
        from services.local.broker import popen

        env = {**os.environ, "PYTHONPATH": str(REPO), "BALLAST_LOG_FORMAT": "json",
               "BALLAST_SIMULATOR__BACKEND": "kafka", "BALLAST_CLUSTER_ADMIN__KIND": "kafka",
               "BALLAST_CLUSTER_ADMIN__BOOTSTRAP_SERVERS": bootstrap,
               "BALLAST_SIMULATOR__CRUISE_CONTROL_PORT": str(self.port),
               "BALLAST_SIMULATOR__ADMIN_PORT": self.admin_url.rsplit(":", 1)[1],
               "BALLAST_SIMULATOR__TASK_SCANNER_PERIOD_S": "0.5", "BALLAST_SIMULATOR__RESTART_WARMUP_S": "5",
               "BALLAST_SIMULATOR__AUTH_USERNAME": self.USERNAME, "BALLAST_SIMULATOR__AUTH_PASSWORD": self.password}
        with self.log.open("ab") as log:
            self.process = popen([*BALLAST, "run", "cluster-sim"], env=env, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 120
        while True:
            assert self.process.poll() is None, self.log.read_text()[-3000:]
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{self.admin_url}/health", timeout=2).status_code == 200:
                    return
            assert time.monotonic() < deadline, "the stand-in Cruise Control did not start"
            time.sleep(0.3)

    def endpoints_asked(self) -> set[str]:
        tasks = httpx.get(f"{self.admin_url}/faults/tasks", timeout=10).raise_for_status().json()["tasks"]
        return {task["endpoint"] for task in tasks}

    def stop(self) -> None:
        """Before the cluster stops: the simulator's Kafka backend, closing, waits on a cluster that is gone."""
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)


def on_your_own_cruise_control(printed: str, stack: dict, cruise_control: OwnCruiseControl) -> None:
    """Issue 56, defect 11: the stack's environment set the simulator's Cruise Control over the caller's; now no
    simulator runs, the services get the URL's address and the caller's credentials, and the record keeps what
    another shell's `ballast` needs (the password's file, never the password)."""
    assert "cluster-sim" not in stack["pids"] and stack["ports"]["cruise_control"] == 0
    assert stack["cruise_control_url"] == f"{cruise_control.url}/kafkacruisecontrol/"
    assert f"{cruise_control.url}/kafkacruisecontrol/state (yours)" in printed, printed
    assert cruise_control.password not in json.dumps(stack)
    rebalancer = Path(f"/proc/{stack['pids']['rebalancer']}/environ").read_bytes().decode().split("\0")
    given = dict(line.split("=", 1) for line in rebalancer if "=" in line)
    expected = {**cruise_control.caller_env(), "BALLAST_CRUISE_CONTROL__HOST": "127.0.0.1",
                "BALLAST_CRUISE_CONTROL__PORT": str(cruise_control.port),
                "BALLAST_CRUISE_CONTROL__SSL_ENABLED": "false", "BALLAST_CRUISE_CONTROL__URL_PREFIX": "kafkacruisecontrol"}
    assert {key: given.get(key) for key in expected} == expected
    assert not any(k.startswith("BALLAST_SIMULATOR__") for k in given)
    # It asks for credentials (so the services' requests below are made with the caller's).
    assert httpx.get(f"{cruise_control.url}/kafkacruisecontrol/state", timeout=10).status_code == 401
    # The services use it: the load collector samples its load.
    deadline = time.monotonic() + 300
    while "load" not in cruise_control.endpoints_asked():
        assert time.monotonic() < deadline, "the services never asked the user's Cruise Control"
        time.sleep(1)


class MarkerReporter:
    """A metrics reporter of the test's own (tests/kafka/java/MarkerReporter.java), loaded as Cruise Control's is:
    its jar in a directory given with --broker-classpath (beside a resource it reads), named and configured with
    --broker-config. Each broker's reporter writes what it got to a file."""

    CLASS = "io.ballast.test.MarkerReporter"
    # As written, read back by Java from the broker's properties file: separators, a backslash, non-ASCII.
    MARKER = "set with --broker-config: a=b, C:\\dir, Zoë"

    def __init__(self, tmp_path: Path) -> None:
        from services.local.kafka_cluster import kafka_lib_dir

        self.classpath = tmp_path / "reporter"
        self.classpath.mkdir()
        self.written = tmp_path / "reporter-output"
        self.written.mkdir()
        classes = tmp_path / "reporter-classes"
        # Against kafka-clients alone, with a JVM tuned to start fast: half the CPU of javac's defaults.
        subprocess.run(["javac", "-J-XX:TieredStopAtLevel=1", "-J-XX:+UseSerialGC", "-proc:none",
                        "-cp", str(next(kafka_lib_dir().glob("kafka-clients-*.jar"))), "-d", str(classes),
                        str(Path(__file__).parent / "java" / "MarkerReporter.java")], check=True, timeout=120)
        with zipfile.ZipFile(self.classpath / "marker-reporter.jar", "w") as jar:
            for compiled in classes.rglob("*.class"):
                jar.write(compiled, compiled.relative_to(classes).as_posix())
        (self.classpath / "ballast-marker.txt").write_text("a resource in the --broker-classpath directory\n")

    def options(self) -> list[str]:
        return ["--broker-config", f"metric.reporters={self.CLASS}",
                "--broker-config", f"ballast.test.marker.dir={self.written}",
                "--broker-config", f"ballast.test.marker={self.MARKER}",
                "--broker-classpath", str(self.classpath)]

    def loaded_by(self, stack: dict, bootstrap: str, brokers: list[int]) -> None:
        """Each broker runs with the directory on its classpath (its command line), has the setting (the admin
        API), and its reporter was configured with both (its file); the controller has neither."""
        from confluent_kafka.admin import ConfigResource

        admin = AdminClient({"bootstrap.servers": bootstrap})
        for broker in brokers:
            command = Path(f"/proc/{stack['pids'][f'kafka-broker-{broker}']}/cmdline").read_bytes().split(b"\0")
            classpath = command[command.index(b"-cp") + 1].decode().split(":")
            assert classpath[-2:] == [str(self.classpath), f"{self.classpath}/*"], classpath
            resource = ConfigResource(ConfigResource.Type.BROKER, str(broker))
            configs = admin.describe_configs([resource])[resource].result(timeout=30)
            assert configs["metric.reporters"].value == self.CLASS, broker
            assert (self.written / f"broker-{broker}").read_text(encoding="utf-8").splitlines() == [
                self.MARKER, "a resource in the --broker-classpath directory"], broker
        controller = Path(f"/proc/{stack['pids']['kafka-controller']}/cmdline").read_bytes()
        assert str(self.classpath).encode() not in controller


def a_broker_added(cwd: Path, state: dict[str, str], stack: dict, cruise_control: OwnCruiseControl,
                   reporter: MarkerReporter) -> dict:
    """Issue 56, defect 11 (seed 001): `ballast up --add-broker` adds broker 5 to the running cluster, with the
    others' settings and classpath, and records it; the rebalancer sees it join and asks the user's Cruise Control
    for an add-brokers rebalance. Returns the stack's record."""
    health = f"http://127.0.0.1:{stack['ports']['rebalancer']}/health"
    _wait(lambda: httpx.get(health, timeout=5).json().get("knownBrokers") == [1, 2, 3, 4], "the rebalancer's look")
    added = ballast(cwd, "up", "--add-broker", "--rack", "/dc1/r3", env=state)
    assert "broker 5 (/dc1/r3) joined the cluster" in added, added
    stack = json.loads((cwd / "state" / "stack.json").read_text())
    assert alive(stack["pids"]["kafka-broker-5"]) and [b["id"] for b in stack["kafka"]["brokers"]] == [1, 2, 3, 4, 5]
    bootstrap = stack["env"]["BALLAST_BUS__BOOTSTRAP_SERVERS"]
    librdkafka = AdminClient({"bootstrap.servers": bootstrap})  # kept: a client collected mid-request fails it
    nodes = librdkafka.describe_cluster(request_timeout=10).result().nodes
    assert (5, "/dc1/r3") in {(n.id, n.rack) for n in nodes}
    reporter.loaded_by(stack, bootstrap, [5])
    _wait(lambda: 5 in (httpx.get(health, timeout=5).json().get("knownBrokers") or []), "the rebalancer's KnownBrokers")
    _wait(lambda: "add_broker" in cruise_control.endpoints_asked(), "the automatic add-brokers rebalance")
    return stack


def _wait(check: Callable[[], bool], what: str, timeout_s: float = 300) -> None:
    deadline = time.monotonic() + timeout_s  # generous: a loaded machine is slow, not wrong
    while True:
        with contextlib.suppress(httpx.HTTPError, ValueError):
            if check():
                return
        assert time.monotonic() < deadline, f"no {what} within {timeout_s:.0f} s"
        time.sleep(0.5)


def day_two_on_real_kafka(cwd: Path, env: dict[str, str], bootstrap: str, sim: str) -> None:
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

    # Each part given 30 s: a fresh clone's run saw the cluster's answer take longer than the default 10 s while the
    # machine was loaded, and doctor rightly said it down (a loaded machine is slow, not wrong).
    healthy = run(cwd, "doctor", "-o", "json", "--timeout", "30", env=env)
    assert healthy.returncode == 0, healthy.stdout + healthy.stderr
    httpx.post(f"{sim}/faults/cruise-control/stop", timeout=10).raise_for_status()
    try:
        stopped = run(cwd, "doctor", "-o", "json", "--timeout", "30", env=env)
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
