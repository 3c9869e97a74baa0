"""Start and stop the whole local stack: a broker, the cluster simulator, and every service, on 127.0.0.1.

Two stacks: the embedded default (Tansu as the bus, the simulator as the managed cluster and its Cruise Control),
and ``kafka=True``: a real Apache Kafka cluster (``kafka_cluster.LocalKafka``) as both the bus and the managed
cluster, with the simulator serving Cruise Control's API beside it (or the caller's own Cruise Control instead).
Used by ``ballast demo``, ``ballast up`` / ``down`` and the tests. Each part is a real process; the services get
their settings through ``BALLAST_*`` environment variables, exactly as in production.
"""

from __future__ import annotations

import functools
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import httpx

import events.topics
from events.topics import Topics, tenants_topics
from services.common.bus_topics import ensure_topics
from services.common.settings import Settings
from services.local.broker import free_port, group_alive, popen, start_tansu
from services.local.kafka_cluster import LocalKafka
from services.adapters.admin import acls
from services.domain.tenants import load_tenants
from services.local import stack_tenants
from services.local.kafka_security import ADMIN as ADMIN_USER
from services.local.kafka_security import SERVICES as SERVICES_USER
from services.local.kafka_security import LocalSecurity
from services.local.stack_options import cruise_control_url, recorded_cruise_control
from services.local.stack_settings import OPTIONAL_SERVICES, SERVICES, client_settings, port_setting
from spark.session import SMALL_JOB_JVM


@dataclass
class Ports:
    broker: int
    cruise_control: int
    sim_admin: int
    topic_reconciler: int
    replicas_change: int
    rebalancer: int
    load_collector: int
    throttle: int = 0  # 0: not running in this stack (the embedded one, or one recorded before it existed)

    @classmethod
    def pick(cls) -> Ports:
        return cls(**{name: free_port() for name in cls.__dataclass_fields__})


@dataclass
class StackInfo:
    run_dir: str
    ports: Ports
    pids: dict[str, int] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)
    # The Cruise Control the services use when it is not the simulator's (`ballast up --cruise-control`).
    cruise_control_url: str | None = None
    # The real Kafka cluster's own record (``LocalKafka.record``): what adding a broker to it needs.
    kafka: dict[str, Any] | None = None

    def save(self, path: Path) -> None:
        # Written whole, then renamed: a command reading it never sees half a record.
        partial = path.with_name(f".{path.name}.{os.getpid()}")
        partial.write_text(json.dumps(asdict(self), indent=2))
        partial.replace(path)

    @classmethod
    def load(cls, path: Path) -> StackInfo:
        data = json.loads(path.read_text())
        return cls(run_dir=data["run_dir"], ports=Ports(**data["ports"]), pids=data["pids"], env=data["env"],
                   cruise_control_url=data.get("cruise_control_url"), kafka=data.get("kafka"))


class LocalStack:
    def __init__(self, run_dir: Path, *, env: dict[str, str] | None = None,
                 services: tuple[str, ...] = SERVICES, detached: bool = False, kafka: bool = False,
                 kafka_racks: tuple[str, ...] | None = None, kafka_overrides: dict[str, str] | None = None,
                 broker_config: dict[str, str] | None = None, broker_classpath: tuple[Path, ...] = (),
                 cruise_control: dict[str, str] | None = None, kafka_heap_mb: int | None = None,
                 bus: str | None = None, secure: bool = False, tenants: Path | None = None,
                 tenants_env_dir: Path | None = None) -> None:
        """``detached``: what starts here outlives this process (``ballast up``); otherwise it all dies with it.
        ``kafka``: a real Kafka cluster is the bus and the managed cluster (racks ``kafka_racks``, one broker
        each, node settings ``kafka_overrides`` over the local cluster's, then the brokers' own ``broker_config``
        and ``broker_classpath``; each node's heap ``kafka_heap_mb``, the local cluster's default when None) instead
        of Tansu and the simulator's cluster. ``cruise_control``: the settings of
        a Cruise Control of the caller's (``stack_options.cruise_control_env``), which the services use instead of
        the simulator's; no simulator runs then, and the caller's other Cruise Control settings (credentials, CA,
        task scanner) reach the services unchanged. It needs ``kafka``: a real Cruise Control manages a real
        Kafka, not the simulator's model. ``bus``: the bootstrap of a bus that runs already (another stack's, for
        a deployment named for another cluster beside it: BALLAST_CLUSTER in ``env``); no broker of its own.
        ``secure``: the real Kafka cluster on SASL_SSL with ACLs (services.local.kafka_security); the services and
        the stack's clients authenticate as its ``ballast`` user, their settings naming the password's file.
        ``tenants``: a tenants file (services/domain/tenants.py) for the services; each tenant's bus topics are made
        with Ballast's, and its client settings written to ``tenants_env_dir`` (``run_dir/tenants`` by default) as
        ``<name>.env``; secured, each tenant is a SCRAM user of its own (not a super user) and the ACL plan
        (services/domain/acls.py) is applied once the cluster is up (services/local/stack_tenants.py)."""
        if bus and kafka:
            raise ValueError("the real Kafka cluster is the bus: a bus of another's needs the embedded stack")
        if secure and not kafka:
            raise ValueError("--secure secures the real Kafka cluster: it needs --kafka")
        if cruise_control and not kafka:
            raise ValueError("your own Cruise Control needs the real Kafka cluster (--kafka): it cannot manage the "
                             "simulator's model")
        self.run_dir = run_dir
        self.detached = detached
        self.logs = run_dir / "logs"
        self.logs.mkdir(parents=True, exist_ok=True)
        self.ports = Ports.pick()
        self.cruise_control = dict(cruise_control or {})
        if self.cruise_control:
            self.ports = replace(self.ports, cruise_control=0, sim_admin=0)  # no simulator
        self.services = services
        self.bus = bus
        self.processes: dict[str, subprocess.Popen[bytes]] = {}
        # Settings of the extra instances started by ``start_instance``, by name.
        self.instance_env: dict[str, dict[str, str]] = {}
        self.env = {
            "BALLAST_BUS__BOOTSTRAP_SERVERS": f"127.0.0.1:{self.ports.broker}",
            "BALLAST_CRUISE_CONTROL__PORT": str(self.ports.cruise_control),
            "BALLAST_CLUSTER_ADMIN__KIND": "simulator",
            "BALLAST_CLUSTER_ADMIN__SIMULATOR_URL": f"http://127.0.0.1:{self.ports.sim_admin}",
            "BALLAST_SIMULATOR__CRUISE_CONTROL_PORT": str(self.ports.cruise_control),
            "BALLAST_SIMULATOR__ADMIN_PORT": str(self.ports.sim_admin),
            "BALLAST_PORTS__TOPIC_RECONCILER": str(self.ports.topic_reconciler),
            "BALLAST_PORTS__REPLICAS_CHANGE": str(self.ports.replicas_change),
            "BALLAST_PORTS__REBALANCER": str(self.ports.rebalancer),
            "BALLAST_PORTS__LOAD_COLLECTOR": str(self.ports.load_collector),
            "BALLAST_PORTS__THROTTLE": str(self.ports.throttle),
            "BALLAST_DATA_DIR": str(run_dir / "data"),
            "BALLAST_SPARK__CHECKPOINT_LOCATION": str(run_dir / "spark-checkpoint"),
            "BALLAST_SPARK__JAVA_OPTIONS": SMALL_JOB_JVM,
            "BALLAST_LOG_FORMAT": "json",
            # A killed owner's lease passes on within seconds, and a worker joins its group sooner (Tansu and the
            # local Kafka allow short sessions).
            "BALLAST_BUS__LEASE_SESSION_TIMEOUT_MS": "3000",
            "BALLAST_BUS__GROUP_SESSION_TIMEOUT_MS": "3000",
            # The simulated Cruise Control finds finished user tasks every 0.5 s, not every 5 s as the real one does,
            # and the services count their share of its tasks the same way: the local stacks' requests wait less.
            "BALLAST_SIMULATOR__TASK_SCANNER_PERIOD_S": "0.5",
            "BALLAST_CRUISE_CONTROL__TASK_SCANNER_PERIOD_S": "0.5",
            # A restarted Cruise Control warms up for 5 s here (the real one's state says ready after about 30 s).
            "BALLAST_SIMULATOR__RESTART_WARMUP_S": "5",
        }
        if self.cruise_control:
            # Nothing of the simulator's, and nothing of Cruise Control's but where it is: the caller's credentials,
            # CA, task scanner period and the rest come through from the caller's environment.
            for key in [k for k in self.env if k.startswith(("BALLAST_SIMULATOR__", "BALLAST_CRUISE_CONTROL__"))]:
                del self.env[key]
            del self.env["BALLAST_CLUSTER_ADMIN__SIMULATOR_URL"]
            self.env.update(self.cruise_control)
        self.kafka: LocalKafka | None = None
        self.tenants = load_tenants(tenants) if tenants is not None else None
        self.tenants_env_dir = tenants_env_dir or run_dir / "tenants"
        users = (ADMIN_USER, SERVICES_USER, *(stack_tenants.users(self.tenants) if self.tenants else ()))
        self.security = LocalSecurity.make(run_dir / "security", users=users) if secure else None
        if kafka:
            self.kafka = LocalKafka(run_dir, detached=detached, overrides=kafka_overrides, security=self.security,
                                    broker_config=broker_config, classpath=broker_classpath,
                                    **({"racks": kafka_racks} if kafka_racks else {}),
                                    **({"heap_mb": kafka_heap_mb} if kafka_heap_mb else {}))
            bootstrap = self.kafka.bootstrap_servers
            self.env.update({
                "BALLAST_BUS__BOOTSTRAP_SERVERS": bootstrap,
                "BALLAST_BUS__TOPIC_REPLICATION_FACTOR": str(min(3, len(self.kafka.brokers))),
                "BALLAST_CLUSTER_ADMIN__KIND": "kafka",
                "BALLAST_CLUSTER_ADMIN__BOOTSTRAP_SERVERS": bootstrap,
                # The simulated Cruise Control reads and executes on the real cluster.
                **({} if self.cruise_control else {"BALLAST_SIMULATOR__BACKEND": "kafka"}),
                # Kafka answers a waiting fetch as soon as a record arrives, so its own default wait costs no latency
                # and, idle, a fifth of the empty fetches the default for the local broker (Tansu) makes: measured on
                # the test suite's cluster, the stack's idle CPU went from 56 % to 47 % of a core.
                "BALLAST_BUS__FETCH_MAX_WAIT_MS": "500",
            })
            if self.security is not None:
                self.env.update({**self.security.settings_env("BUS", SERVICES_USER),
                                 **self.security.settings_env("CLUSTER_ADMIN", SERVICES_USER)})
        if bus:
            self.env["BALLAST_BUS__BOOTSTRAP_SERVERS"] = bus
        if tenants is not None:
            self.env["BALLAST_TENANTS_FILE"] = str(tenants.resolve())
        # The deployment's name (its bus topics and consumer groups): the caller's, for the stack's services and for
        # the clients of a stack `ballast up` started (stack_settings.CLIENT_KEYS).
        if cluster := os.environ.get("BALLAST_CLUSTER"):
            self.env["BALLAST_CLUSTER"] = cluster
        self.env.update(env or {})

    # -- settings for in-process clients (CLI, tests) ------------------------------------------------------------

    @property
    def cluster(self) -> str | None:
        return self.env.get("BALLAST_CLUSTER") or None

    @property
    def topics(self) -> Topics:
        """The bus topics of the stack's deployment."""
        return Topics.of(self.cluster)

    def settings(self) -> Settings:
        """The stack's settings for a client in this process, with this process's cluster name, which it took as it
        started (``ballast up`` run with BALLAST_CLUSTER: the stack's own; a test's: none, and such a client uses
        ``topics`` for a named stack's bus topics)."""
        env = {k: v for k, v in self.env.items() if k != "BALLAST_CLUSTER"}
        saved = {k: os.environ.get(k) for k in [*env, "BALLAST_CLUSTER"]}
        os.environ.update(env)
        os.environ.pop("BALLAST_CLUSTER", None)
        if events.topics.CLUSTER is not None:
            os.environ["BALLAST_CLUSTER"] = events.topics.CLUSTER
        try:
            return Settings()
        finally:
            for key, value in saved.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value

    @property
    def sim_url(self) -> str:
        return f"http://127.0.0.1:{self.ports.sim_admin}"

    def health_url(self, name: str) -> str:
        service = name.split("#")[0]
        port = (self.instance_env.get(name, {}).get(port_setting(service))
                or getattr(self.ports, service.replace("-", "_")))
        return f"http://127.0.0.1:{port}/health"

    # -- lifecycle ---------------------------------------------------------------------------------------------

    def start(self, progress: object = None) -> LocalStack:
        say = progress if callable(progress) else (lambda _msg: None)
        if self.kafka is not None:
            self.kafka.start(progress=say)
        elif self.bus:
            say(f"on the bus at {self.bus}")
        else:
            say(f"starting local broker (Tansu) on 127.0.0.1:{self.ports.broker}")
            self.processes["broker"] = start_tansu(self.ports.broker, self.logs / "broker.log",
                                                    detached=self.detached)
        if self.cruise_control:
            say(f"the services use your Cruise Control at {cruise_control_url(self.cruise_control)} (no simulator)")
        else:
            say(f"starting cluster simulator (Cruise Control API on 127.0.0.1:{self.ports.cruise_control})")
            self.start_process("cluster-sim")
            self.wait_http(f"{self.sim_url}/health", "cluster-sim")
        if self.tenants is not None:
            # Before the topics: a broker enforces ACLs once it has applied the metadata before them, and creating
            # the bus topics' logs first took it seconds; the topics, made after, are then never there unguarded.
            self._admit_tenants(say)
        ensure_topics(self.settings().bus, [*self.topics.all(), *(
            tenants_topics((t.name for t in self.tenants.tenants), self.cluster) if self.tenants else ())])
        for service in self.services:
            say(f"starting {service}")
            self.start_process(service)
        for service in self.services:
            self.wait_http(self.health_url(service), service)
        say("stack ready")
        return self

    def _admit_tenants(self, say: Callable[[str], None]) -> None:
        """The ACL plan on the secured cluster, and each tenant's client settings."""
        assert self.tenants is not None
        if self.security is not None:
            found, _ = acls.pending(self.settings(), self.tenants)
            acls.make(found)
            say(f"ACLs of {len(self.tenants.tenants)} tenant(s) applied "
                f"({sum(len(each.changes.add) for each in found)} added)")
        client = client_settings(self.env)
        written = stack_tenants.write_client_settings(self.tenants_env_dir, {
            t.name: stack_tenants.client_settings(client, self.security, t) for t in self.tenants.tenants})
        if written:
            say(f"tenants' client settings: {', '.join(str(p) for p in written)}")

    def start_process(self, name: str) -> subprocess.Popen[bytes]:
        """``name`` is a service, or ``service#N`` for another instance of it (see ``start_instance``)."""
        log = (self.logs / f"{name}.log").open("ab")
        process = popen(
            [sys.executable, "-m", "services.cli", "run", name.split("#")[0]], detached=self.detached,
            # Spark's job is not in the background: its Python source has Spark's ten seconds to start in.
            background=name != "spark-aggregates",
            env={**os.environ, **self.env, **self.instance_env.get(name, {})}, stdout=log, stderr=subprocess.STDOUT)
        self.processes[name] = process
        return process

    def start_instance(self, service: str, index: int) -> str:
        """One more instance of ``service`` (its own web port and data directory), named ``service#index``; it
        stands by unless it owns the service's work. Returns the name (for ``kill``, ``restart_service``, ...)."""
        name = f"{service}#{index}"
        port = free_port()
        self.instance_env[name] = {port_setting(service): str(port),
                                   "BALLAST_DATA_DIR": str(self.run_dir / f"data-{index}")}
        self.start_process(name)
        self.wait_http(self.health_url(name), name)
        return name

    @functools.cached_property
    def http(self) -> httpx.Client:
        """One HTTP client for the stack's health pages and the simulator. Every new httpx client loads the CA bundle
        (46 ms of CPU here): ``httpx.get`` every 0.2 s while a service started took a quarter of a core."""
        return httpx.Client(timeout=10.0)

    def wait_http(self, url: str, name: str, timeout_s: float = 90.0) -> None:
        """Until ``url`` answers 200 from a process that runs its service: a standby instance (waiting for the
        service's lease) only counts when another instance of the service runs it."""
        deadline = time.monotonic() + timeout_s
        process = self.processes.get(name)
        while time.monotonic() < deadline:
            if process is not None and process.poll() is not None:
                raise RuntimeError(f"{name} exited with code {process.returncode}; see {self.logs / (name + '.log')}:\n"
                                   + (self.logs / f"{name}.log").read_text()[-3000:])
            try:
                answer = self.http.get(url, timeout=1.0)
                if answer.status_code == 200 and (self._runs(answer) or self._run_elsewhere(name)):
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        raise TimeoutError(f"{name} was not healthy within {timeout_s:.0f} s; see {self.logs / (name + '.log')}")

    @staticmethod
    def _runs(answer: httpx.Response) -> bool:
        try:
            return answer.json().get("role") != "standby"
        except ValueError:
            return True

    def _run_elsewhere(self, name: str) -> bool:
        service = name.split("#")[0]
        for other, process in self.processes.items():
            if other != name and other.split("#")[0] == service and process.poll() is None:
                try:
                    answer = self.http.get(self.health_url(other), timeout=1.0)
                except httpx.HTTPError:
                    continue
                if answer.status_code == 200 and self._runs(answer):
                    return True
        return False

    def start_spark_job(self) -> subprocess.Popen[bytes]:
        """The load-aggregates job (local[2]); it has no health page: it is up once aggregates appear."""
        return self.start_process("spark-aggregates")

    def kill(self, name: str, sig: int = signal.SIGKILL) -> None:
        process = self.processes.get(name)
        if process is not None and process.poll() is None:
            os.killpg(process.pid, sig)
            process.wait(timeout=30)

    def restart_service(self, name: str) -> None:
        self.kill(name, signal.SIGKILL)
        self.start_process(name)
        self.wait_http(self.health_url(name), name)

    def stop(self) -> None:
        self._stop_processes()
        if self.kafka is not None:
            self.kafka.stop()
        if "http" in self.__dict__:
            self.__dict__.pop("http").close()

    def _stop_processes(self) -> None:
        # Services first (they flush), the broker last.
        order = [n for n in self.processes if n != "broker"] + (["broker"] if "broker" in self.processes else [])
        for name in order:
            process = self.processes[name]
            if process.poll() is None:
                try:
                    os.killpg(process.pid, signal.SIGTERM)
                except ProcessLookupError:
                    continue
        for name in order:
            process = self.processes[name]
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=10)

    def info(self) -> StackInfo:
        """The record of what runs: a port only for a service that was started (the throttle controller runs on a
        real Kafka only), so that nothing names a port where nothing listens."""
        pids = {n: p.pid for n, p in self.processes.items()}
        if self.kafka is not None:
            pids.update({f"kafka-broker-{b.id}": b.process.pid for b in self.kafka.brokers.values() if b.process})
            if self.kafka.controller.process is not None:
                pids["kafka-controller"] = self.kafka.controller.process.pid
        idle = [name for name in OPTIONAL_SERVICES if name not in self.processes]
        ports = replace(self.ports, **dict.fromkeys((name.replace("-", "_") for name in idle), 0))
        env = {k: v for k, v in self.env.items() if k not in {port_setting(name) for name in idle}}
        if self.cruise_control:
            env.update(recorded_cruise_control(os.environ))
        return StackInfo(run_dir=str(self.run_dir), ports=ports, pids=pids, env=env,
                         cruise_control_url=cruise_control_url(self.cruise_control) if self.cruise_control else None,
                         kafka=self.kafka.record() if self.kafka is not None else None)

    def __enter__(self) -> LocalStack:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def stop_detached(pids: dict[str, int], say: Callable[[str], None], timeout_s: float = 30.0) -> None:
    """Stop what ``ballast up`` left running, in order: the services, then the brokers (Tansu, or Kafka's brokers,
    whose controlled shutdown needs the controller), then Kafka's controller. Whatever does not stop in
    ``timeout_s`` is killed."""
    def rank(name: str) -> int:
        return 2 if name == "kafka-controller" else 1 if name == "broker" or name.startswith("kafka-broker") else 0

    for level in (0, 1, 2):
        group = {name: pid for name, pid in pids.items() if rank(name) == level}
        for name, pid in group.items():
            try:
                os.killpg(pid, signal.SIGTERM)
            except ProcessLookupError:
                continue
            say(f"stopping {name}")
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline and any(group_alive(pid) for pid in group.values()):
            time.sleep(0.1)
        for name, pid in group.items():
            if group_alive(pid):
                say(f"killing {name} (still running after {timeout_s:.0f} s)")
                os.killpg(pid, signal.SIGKILL)

