"""A real Apache Kafka cluster on this machine: KRaft, one controller and N brokers, each its own JVM on 127.0.0.1.

The jars come from Maven Central through ``jvm/kafka-runtime/pom.xml`` (``make kafka`` copies them into
``.kafka/lib``); nothing is downloaded here. Every broker has a hierarchical ``broker.rack`` and two log
directories (JBOD, KIP-858) beside a metadata directory of its own, so that failing a data directory never takes
the metadata log with it. The operations tests and demos need are here: stop, start, kill -9 and restart a broker,
add one, decommission one, and fail one log directory the way Kafka's own tests do.
"""

from __future__ import annotations

import base64
import os
import shutil
import signal
import subprocess
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from services.local.broker import free_port, group_alive, popen
from services.local.kafka_security import ADMIN, LISTENER, LocalSecurity
from services.local.stack_options import check_broker_config, java_classpath

DEFAULT_RACKS = ("/dc1/r1", "/dc1/r2", "/dc2/r1", "/dc2/r2")
CONTROLLER_ID = 9000
LOG_DIRS_PER_BROKER = 2
# How long one node may take to start, be fenced or report a failed directory. Seconds when the machine is idle;
# minutes when it is crowded (seen beside another test suite, the nodes at a lower priority: over a minute to add a
# broker), which is slow, not wrong.
PATIENCE_S = 180.0
REPO_ROOT = Path(__file__).resolve().parents[2]
LOG4J_CONFIG = Path(__file__).with_name("kafka") / "log4j2.properties"

# Settings that make a small cluster on two cores start fast and notice failures within seconds. Production keeps
# Kafka's defaults; none of these changes what Ballast sees through the admin API.
NODE_DEFAULTS = {
    "num.network.threads": "2",
    "num.io.threads": "2",
    "num.replica.fetchers": "1",
    "background.threads": "2",
    "log.cleaner.threads": "1",
    "log.cleaner.dedupe.buffer.size": str(8 * 1024 * 1024),  # the default 128 MB would not fit the small heap
    "log.cleaner.backoff.ms": "1000",
    "group.initial.rebalance.delay.ms": "0",
    # Ballast's lease groups use 3 s sessions here; Kafka's default floor is 6 s.
    "group.min.session.timeout.ms": "1000",
    # A killed broker is fenced (and its replicas leave the ISR) about 3 s after its last heartbeat, not 9 s.
    "broker.heartbeat.interval.ms": "500",
    "broker.session.timeout.ms": "3000",
    # A failed log directory is noticed at the next checkpoint, within a second.
    "replica.high.watermark.checkpoint.interval.ms": "1000",
    "log.flush.offset.checkpoint.interval.ms": "1000",
}


def kafka_lib_dir() -> Path:
    """The folder of Kafka's jars: ``BALLAST_KAFKA_LIB`` (another Kafka's ``libs``, say), or ``.kafka/lib`` in the
    repository, where ``make kafka`` puts them."""
    lib = Path(os.environ.get("BALLAST_KAFKA_LIB") or REPO_ROOT / ".kafka" / "lib")
    if not any(lib.glob("kafka_2.13-*.jar")):
        raise FileNotFoundError(f"no Kafka jars in {lib}: run `make kafka` (Maven copies them from Maven Central "
                                "as jvm/kafka-runtime/pom.xml pins them)")
    return lib


SELECTOR_CLASS = "io.ballast.kafka.NearestReplicaSelector"


def selector_jar() -> Path:
    """Ballast's nearest-replica selector (jvm/replica-selector), which every broker of the local cluster loads:
    ``BALLAST_KAFKA_PLUGINS``, or ``.kafka/plugins`` in the repository."""
    jar = Path(os.environ.get("BALLAST_KAFKA_PLUGINS") or REPO_ROOT / ".kafka" / "plugins") \
        / "ballast-replica-selector.jar"
    if not jar.is_file():
        raise FileNotFoundError(f"no {jar}: run `make selector` (Maven builds and tests jvm/replica-selector)")
    return jar


def kafka_version(lib: Path | None = None) -> str:
    jar = next((lib or kafka_lib_dir()).glob("kafka_2.13-*.jar"))
    return jar.name.removeprefix("kafka_2.13-").removesuffix(".jar")


@dataclass
class KafkaNode:
    id: int
    port: int
    home: Path
    rack: str | None = None  # None for the controller
    log_dirs: tuple[Path, ...] = ()
    process: subprocess.Popen[bytes] | None = field(default=None, repr=False)
    # A node another process started (``LocalKafka.attach``): its process id, since there is no Popen to ask.
    pid: int | None = None

    @property
    def is_controller(self) -> bool:
        return self.rack is None and not self.log_dirs

    @property
    def log_file(self) -> Path:
        return self.home / "server.log"

    @property
    def running(self) -> bool:
        if self.process is not None:
            return self.process.poll() is None
        return self.pid is not None and group_alive(self.pid)


class LocalKafka:
    """Start with ``start()`` (or ``with``); ``stop()`` stops everything it started, and unless ``detached`` every
    JVM also dies with the process that started it (kill -9 included)."""

    def __init__(self, run_dir: Path, *, racks: Sequence[str] = DEFAULT_RACKS, heap_mb: int = 256,
                 overrides: Mapping[str, str] | None = None, detached: bool = False,
                 first_broker_id: int = 1, replica_selector: str | None = SELECTOR_CLASS,
                 share_classes: bool = True, broker_config: Mapping[str, str] | None = None,
                 classpath: Sequence[Path] = (), lib: Path | None = None, selector: Path | None = None,
                 security: LocalSecurity | None = None) -> None:
        """``overrides``: settings of every node, the controller's too. ``broker_config``: settings of the brokers
        only, over everything else (not the ones the cluster sets per node, ``stack_options``), e.g. a metrics
        reporter's. ``classpath``: jars and directories the brokers load beside Kafka's (the reporter's jar).
        ``replica_selector``: the brokers' ``replica.selector.class`` (Ballast's by default; None: Kafka's
        default, no follower fetching). ``share_classes``: the JVMs map the archive of Kafka's classes when there is
        one (the benchmark starts a cluster without it beside one with it). ``lib``, ``selector``: Kafka's jars and
        Ballast's selector plugin (``kafka_lib_dir()``, ``selector_jar()`` unless given). ``security``: the
        cluster on SASL_SSL with ACLs (services.local.kafka_security); None: PLAINTEXT, no authorizer."""
        self.run_dir = run_dir / "kafka"
        self.heap_mb = heap_mb
        self.overrides = dict(overrides or {})
        self.broker_config = dict(broker_config or {})
        check_broker_config(self.broker_config)
        self.classpath = tuple(classpath)
        self.detached = detached
        self.lib = lib or kafka_lib_dir()
        self.selector = selector or selector_jar()
        self.replica_selector = replica_selector
        self.share_classes = share_classes
        self.security = security
        self.cluster_id = ""
        self.controller = KafkaNode(id=CONTROLLER_ID, port=free_port(), home=self.run_dir / "controller")
        self.brokers: dict[int, KafkaNode] = {}
        # Ids of decommissioned brokers, never given again: their dynamic configs (a cordon) stay in the metadata under
        # their id, and a new broker with that id would start with them.
        self.departed: set[int] = set()
        for offset, rack in enumerate(racks):
            self._new_broker_node(first_broker_id + offset, rack)

    # -- a cluster another process started -------------------------------------------------------------------------

    def record(self) -> dict[str, Any]:
        """What another process needs to add a broker to this cluster once the one that started it has gone
        (``ballast up --add-broker``): JSON, kept in the stack's record."""
        return {
            "cluster_id": self.cluster_id, "lib": str(self.lib), "selector": str(self.selector),
            "replica_selector": self.replica_selector, "share_classes": self.share_classes, "heap_mb": self.heap_mb,
            "overrides": self.overrides, "broker_config": self.broker_config,
            "classpath": [str(path) for path in self.classpath],
            "security": str(self.security.directory) if self.security else None,
            "controller": {"port": self.controller.port, "pid": _pid(self.controller)},
            "brokers": [{"id": b.id, "port": b.port, "rack": b.rack, "pid": _pid(b)} for b in self.brokers.values()],
            "departed": sorted(self.departed),
        }

    @classmethod
    def attach(cls, run_dir: Path, record: Mapping[str, Any]) -> LocalKafka:
        """The cluster ``record`` describes, started by another process under ``run_dir``, its nodes left running:
        brokers added here join it with the same jars and settings, and outlive this process as the others do."""
        kafka = cls(run_dir, racks=(), heap_mb=record["heap_mb"], overrides=record["overrides"], detached=True,
                    replica_selector=record["replica_selector"], share_classes=record["share_classes"],
                    broker_config=record["broker_config"], classpath=[Path(p) for p in record["classpath"]],
                    lib=Path(record["lib"]), selector=Path(record["selector"]),
                    security=LocalSecurity.at(Path(record["security"])) if record.get("security") else None)
        kafka.cluster_id = record["cluster_id"]
        kafka.controller = KafkaNode(id=CONTROLLER_ID, port=record["controller"]["port"],
                                     home=kafka.run_dir / "controller", pid=record["controller"]["pid"])
        for broker in record["brokers"]:
            kafka._new_broker_node(broker["id"], broker["rack"], port=broker["port"]).pid = broker["pid"]
        kafka.departed = set(record.get("departed", ()))
        return kafka

    # -- what clients need ---------------------------------------------------------------------------------------

    @property
    def bootstrap_servers(self) -> str:
        running = [b for b in self.brokers.values() if b.running] or list(self.brokers.values())
        return ",".join(f"127.0.0.1:{b.port}" for b in running)

    @property
    def admin_config(self) -> dict[str, Any]:
        """kafka-python's settings for the cluster's own looks at itself (as its admin user where it is secured)."""
        return self.security.kafka_python(ADMIN) if self.security else {}

    def racks(self) -> dict[int, str]:
        return {b.id: b.rack or "" for b in self.brokers.values()}

    def log_dirs(self, broker: int) -> tuple[Path, ...]:
        return self.brokers[broker].log_dirs

    # -- lifecycle -----------------------------------------------------------------------------------------------

    def start(self, progress: Callable[[str], None] | None = None, timeout_s: float = 2 * PATIENCE_S) -> LocalKafka:
        say = progress or (lambda _msg: None)
        self.run_dir.mkdir(parents=True, exist_ok=True)
        say(f"formatting KRaft storage (Kafka {kafka_version(self.lib)}, {len(self.brokers)} brokers, "
            f"{LOG_DIRS_PER_BROKER} log dirs each)")
        self.cluster_id = random_cluster_id()
        self._format([self.controller, *self.brokers.values()])
        say(f"starting the controller and {len(self.brokers)} brokers on 127.0.0.1 "
            f"(bootstrap {','.join(f'127.0.0.1:{b.port}' for b in self.brokers.values())})")
        self._launch(self.controller)
        for broker in self.brokers.values():
            self._launch(broker)
        self.wait_ready(self.brokers, timeout_s=timeout_s)
        say("Kafka ready: " + ", ".join(f"{b.id} {b.rack}" for b in self.brokers.values()))
        return self

    def stop(self, timeout_s: float = 20.0) -> None:
        """Brokers first (a controlled shutdown needs the controller), then the controller."""
        brokers = [b for b in self.brokers.values() if b.running]
        for broker in brokers:
            _signal(broker, signal.SIGTERM)
        for broker in brokers:
            _wait_or_kill(broker, timeout_s)
        if self.controller.running:
            _signal(self.controller, signal.SIGTERM)
            _wait_or_kill(self.controller, timeout_s)

    def __enter__(self) -> LocalKafka:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- operations on one broker --------------------------------------------------------------------------------

    def stop_broker(self, broker: int, timeout_s: float = 30.0) -> None:
        """A clean shutdown (SIGTERM): the broker hands its leaderships over first. Returns once the cluster
        describes it as fenced."""
        node = self.brokers[broker]
        if node.running:
            _signal(node, signal.SIGTERM)
            _wait_or_kill(node, timeout_s)
        self.wait_fenced(broker)

    def kill_broker(self, broker: int) -> None:
        """kill -9: no controlled shutdown; the controller fences it when its session (3 s here) runs out, and
        this returns then."""
        node = self.brokers[broker]
        if node.running:
            _signal(node, signal.SIGKILL)
            assert node.process is not None
            node.process.wait(timeout=30)
        self.wait_fenced(broker)

    def wait_fenced(self, broker: int, timeout_s: float = PATIENCE_S) -> None:
        from services.local.kafka_probe import unfenced_brokers

        deadline = time.monotonic() + timeout_s
        while (seen := unfenced_brokers(self.bootstrap_servers, self.admin_config)) is None or broker in seen:
            if time.monotonic() > deadline:
                raise TimeoutError(f"the controller did not fence broker {broker} within {timeout_s:.0f} s")
            time.sleep(0.2)

    def start_broker(self, broker: int, timeout_s: float = PATIENCE_S) -> None:
        node = self.brokers[broker]
        if not node.running:
            self._launch(node)
        self.wait_ready([broker], timeout_s=timeout_s)

    def restart_broker(self, broker: int, *, kill: bool = False, timeout_s: float = PATIENCE_S) -> None:
        self.kill_broker(broker) if kill else self.stop_broker(broker)
        self.start_broker(broker, timeout_s=timeout_s)

    def add_broker(self, rack: str, broker: int | None = None, timeout_s: float = PATIENCE_S) -> int:
        """A new broker (the next id never used unless given) joins the running cluster; returns its id."""
        new_id = broker if broker is not None else max(self.brokers.keys() | self.departed, default=0) + 1
        if new_id in self.brokers or new_id in self.departed or new_id == CONTROLLER_ID:
            raise ValueError(f"broker id {new_id} is taken")
        node = self._new_broker_node(new_id, rack)
        try:
            self._format([node])
            self._launch(node)
            self.wait_ready([new_id], timeout_s=timeout_s)
        except BaseException:
            # A broker that did not join is not added: nothing would stop it (its home stays, with its logs).
            if node.running:
                _signal(node, signal.SIGKILL)
                _wait_or_kill(node, 30)
            self.brokers.pop(new_id)
            raise
        return new_id

    def decommission_broker(self, broker: int) -> None:
        """Stop the broker and unregister it (``kafka-cluster.sh unregister``), as an operator does once it holds
        no replicas: it leaves the cluster's metadata; replicas still naming it stay offline."""
        self.stop_broker(broker)
        self._java_output("org.apache.kafka.tools.ClusterTool", "unregister",
                          "--bootstrap-server", self.bootstrap_servers, "--id", str(broker), *self._command_config())
        node = self.brokers.pop(broker)
        self.departed.add(broker)
        shutil.rmtree(node.home, ignore_errors=True)

    def fail_log_dir(self, broker: int, index: int = 0, timeout_s: float = PATIENCE_S) -> Path:
        """Fail one data directory of a running broker as Kafka's LogDirFailureTest does: the directory is replaced
        by a file, and the broker's next checkpoint into it fails, which takes the directory offline (KIP-112). The
        broker keeps serving from its other directories. Returns the failed directory once the broker reports it
        offline."""
        path = self.brokers[broker].log_dirs[index]
        # Renamed away in one step, not deleted in place: the running broker renames and deletes partition
        # directories in it at any moment (a finished move's old copy), which made an rmtree walking it fail.
        gone = path.with_name(f"{path.name}.failed")
        path.rename(gone)
        path.write_bytes(b"")
        shutil.rmtree(gone, ignore_errors=True)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if str(path) in self.offline_log_dirs(broker):
                return path
            time.sleep(0.25)
        raise TimeoutError(f"broker {broker} did not report {path} offline within {timeout_s:.0f} s")

    def offline_log_dirs(self, broker: int) -> set[str]:
        from services.local.kafka_probe import offline_log_dirs

        return offline_log_dirs(self.bootstrap_servers, broker, self.admin_config)

    def wait_ready(self, brokers: Iterable[int], timeout_s: float = PATIENCE_S) -> None:
        """Until the cluster describes every one of ``brokers`` as registered and not fenced."""
        from services.local.kafka_probe import unfenced_brokers

        wanted = set(brokers)
        deadline = time.monotonic() + timeout_s
        seen: set[int] = set()
        while time.monotonic() < deadline:
            for node in [self.controller, *(self.brokers[b] for b in wanted)]:
                if node.process is not None and node.process.poll() is not None:
                    raise RuntimeError(f"Kafka node {node.id} exited with code {node.process.returncode}; see "
                                       f"{node.log_file}:\n{_tail(node)}")
            seen = unfenced_brokers(self.bootstrap_servers, self.admin_config) or set()
            if wanted <= seen and all(self._listening(self.brokers[b]) for b in wanted):
                return
            time.sleep(0.2)
        raise TimeoutError(f"brokers {sorted(wanted - seen)} were not ready within {timeout_s:.0f} s; logs in "
                           f"{self.run_dir}")

    @staticmethod
    def _listening(node: KafkaNode) -> bool:
        """The node's own process accepts connections on its port (not a registration left by one killed)."""
        import socket

        if not node.running:
            return False
        with socket.socket() as probe:
            probe.settimeout(0.5)
            return probe.connect_ex(("127.0.0.1", node.port)) == 0

    # -- internals -----------------------------------------------------------------------------------------------

    def _new_broker_node(self, broker: int, rack: str, port: int | None = None) -> KafkaNode:
        home = self.run_dir / f"broker-{broker}"
        node = KafkaNode(id=broker, port=port or free_port(), home=home, rack=rack,
                         log_dirs=tuple(home / f"data-{i}" for i in range(LOG_DIRS_PER_BROKER)))
        self.brokers[broker] = node
        return node

    def _properties(self, node: KafkaNode) -> dict[str, str]:
        voters = f"{CONTROLLER_ID}@127.0.0.1:{self.controller.port}"
        common = {
            "node.id": str(node.id),
            "controller.quorum.voters": voters,
            "controller.listener.names": "CONTROLLER",
            "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
            "metadata.log.dir": str(node.home / "metadata"),
            **(self.security.node_properties(broker=not node.is_controller) if self.security else {}),
        }
        listener = LISTENER if self.security else "PLAINTEXT"
        if node.is_controller:
            # The controller is the one that fences a broker whose session ran out.
            return {**common, "process.roles": "controller", "listeners": f"CONTROLLER://127.0.0.1:{node.port}",
                    "log.dirs": str(node.home / "metadata"),
                    "broker.session.timeout.ms": NODE_DEFAULTS["broker.session.timeout.ms"], **self.overrides}
        replication = str(min(3, len(self.brokers)))
        return {
            **common,
            "process.roles": "broker",
            "listeners": f"{listener}://127.0.0.1:{node.port}",
            "advertised.listeners": f"{listener}://127.0.0.1:{node.port}",
            "inter.broker.listener.name": listener,
            "broker.rack": node.rack or "",
            # Follower fetching on the rack tree: a consumer with client.rack reads from its nearest replica.
            **({"replica.selector.class": self.replica_selector} if self.replica_selector else {}),
            "log.dirs": ",".join(str(d) for d in node.log_dirs),
            "offsets.topic.replication.factor": replication,
            "offsets.topic.num.partitions": "10",
            "transaction.state.log.replication.factor": replication,
            "transaction.state.log.min.isr": "1",
            "share.coordinator.state.topic.replication.factor": replication,
            "share.coordinator.state.topic.min.isr": "1",
            **NODE_DEFAULTS,
            **self.overrides,
            **self.broker_config,
        }

    def _write_properties(self, node: KafkaNode) -> Path:
        node.home.mkdir(parents=True, exist_ok=True)
        path = node.home / "node.properties"
        path.touch(mode=0o600)  # a secured cluster's passwords are in it
        path.write_text(properties_text(self._properties(node)), encoding="ascii")
        return path

    def _command_config(self) -> list[str]:
        """Kafka's tools' client settings: the admin user's where the cluster is secured (a file only its owner
        reads, written when first asked for)."""
        if self.security is None:
            return []
        path = self.security.directory / "admin.properties"
        if not path.exists():
            path.touch(mode=0o600)
            path.write_text(properties_text(self.security.java_client(ADMIN)), encoding="ascii")
        return ["--command-config", str(path)]

    def _format(self, nodes: Sequence[KafkaNode]) -> None:
        # One JVM per node, all at once: formatting is mostly JVM start-up.
        running = [(node, subprocess.Popen(
            self._java("kafka.tools.StorageTool", "format", "-t", self.cluster_id, "-c",
                       str(self._write_properties(node)),
                       *(self.security.format_arguments() if self.security else []), heap_mb=128),
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)) for node in nodes]
        for node, process in running:
            output, _ = process.communicate(timeout=120)
            if process.returncode != 0:
                raise RuntimeError(f"formatting the storage of Kafka node {node.id} failed:\n"
                                   f"{output.decode(errors='replace')[-2000:]}")

    def _launch(self, node: KafkaNode) -> None:
        properties = self._write_properties(node)
        with (node.home / "stdout.log").open("ab") as out:
            node.process = popen(
                self._java("kafka.Kafka", str(properties), heap_mb=self.heap_mb if node.rack else 192,
                           log_file=node.log_file, classpath=self.classpath if node.rack else ()),
                # An orphaned cluster is thrown away: SIGKILL, since a broker's controlled shutdown would wait for a
                # controller that is going away too.
                detached=self.detached, death_signal=signal.SIGKILL, stdout=out, stderr=subprocess.STDOUT)

    def _java(self, main: str, *args: str, heap_mb: int, log_file: Path | None = None,
              classpath: Sequence[Path] = ()) -> list[str]:
        """``classpath``: more entries after Kafka's own jars (which they cannot shadow) and the selector."""
        logging = ([f"-Dlog4j2.configurationFile={LOG4J_CONFIG}", f"-Dballast.log.file={log_file}"] if log_file
                   else ["-Dlog4j2.level=WARN"])
        sharing = class_sharing(self.lib) if self.share_classes else []
        return ["java", *jvm_options(heap_mb), *sharing, *logging,
                "-cp", ":".join([f"{self.lib}/*", str(self.selector), *java_classpath(classpath)]), main, *args]

    def tool_output(self, main: str, *args: str) -> str:
        """The standard output of one of Kafka's command-line tools (``org.apache.kafka.tools.LogDirsCommand``, ...)
        run against this cluster: the reference output Ballast's own commands are compared with."""
        return self._java_output(main, *args)

    def _java_output(self, main: str, *args: str) -> str:
        result = subprocess.run(self._java(main, *args, heap_mb=128), capture_output=True, text=True, timeout=120)
        if result.returncode != 0:
            raise RuntimeError(f"{main} {' '.join(args)} failed ({result.returncode}): "
                               f"{(result.stderr or result.stdout)[-2000:]}")
        return result.stdout


def jvm_options(heap_mb: int) -> list[str]:
    """A small node's JVM: a small heap, the serial collector, the first JIT tier only (quicker to start, and enough
    for a test's traffic)."""
    return [f"-Xmx{heap_mb}m", "-Xms32m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-XX:-UsePerfData",
            "-Djava.awt.headless=true", "-Djava.net.preferIPv4Stack=true"]


def class_archive(lib: Path) -> Path:
    """Where ``make kafka`` keeps the archive of Kafka's classes (``services.local.kafka_classes``)."""
    return lib.parent / "kafka-classes.jsa"


def class_sharing(lib: Path) -> list[str]:
    """The JVM options that map the archive of Kafka's classes, when there is one. The JVM checks it against the jars
    and the JDK it was made from and ignores one that does not match; its warning is turned off, since it would land
    in the output of Kafka's tools, which tests compare with Ballast's."""
    archive = class_archive(lib)
    return [f"-XX:SharedArchiveFile={archive}", "-Xlog:cds=off,cds+dynamic=off"] if archive.is_file() else []


def random_cluster_id() -> str:
    """What ``kafka-storage.sh random-uuid`` prints (a random UUID, base64url without padding, never starting with a
    dash), without starting a JVM for it."""
    while (cluster_id := base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")).startswith("-"):
        pass
    return cluster_id


def properties_text(properties: Mapping[str, str]) -> str:
    """A properties file that Java's ``Properties.load`` (how Kafka reads its configuration) reads back exactly:
    backslashes, a key's separators and a value's leading space escaped, line breaks as ``\\n``, anything beyond
    ASCII as ``\\uXXXX`` (the file is read as ISO-8859-1)."""
    def escape(text: str, special: str) -> str:
        out = []
        for index, char in enumerate(text):
            if char == "\\" or char in special or (index == 0 and char in " #!"):
                out.append("\\" + char)
            elif char in "\t\n\r\f":
                out.append({"\t": "\\t", "\n": "\\n", "\r": "\\r", "\f": "\\f"}[char])
            elif " " <= char <= "~":
                out.append(char)
            else:
                units = char.encode("utf-16-be")
                out.extend(f"\\u{units[i]:02x}{units[i + 1]:02x}" for i in range(0, len(units), 2))
        return "".join(out)

    return "".join(f"{escape(key, '=: ')}={escape(value, '')}\n" for key, value in properties.items())


def _pid(node: KafkaNode) -> int | None:
    return node.process.pid if node.process is not None else node.pid


def _signal(node: KafkaNode, sig: int) -> None:
    pid = _pid(node)
    assert pid is not None
    try:
        os.killpg(pid, sig)
    except ProcessLookupError:
        pass


def _wait_or_kill(node: KafkaNode, timeout_s: float) -> None:
    assert node.process is not None
    try:
        node.process.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        _signal(node, signal.SIGKILL)
        node.process.wait(timeout=30)


def _tail(node: KafkaNode, chars: int = 3000) -> str:
    for path in (node.log_file, node.home / "stdout.log"):
        if path.exists() and path.stat().st_size:
            return path.read_text(errors="replace")[-chars:]
    return ""
