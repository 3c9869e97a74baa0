"""All settings, in one place. Environment variables use the prefix ``BALLAST_`` and ``__`` for nesting,
e.g. ``BALLAST_CRUISE_CONTROL__HOST=cc.internal`` or ``BALLAST_BUS__BOOTSTRAP_SERVERS=kafka:9092``."""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ByteSize, Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from events import topics
from events.topics import READER_GROUPS, tenant_reader_groups
from events.names import ClusterName, PlacerName, TenantName
from events.topic_specs import DriftMode
from services.domain.throttle_limits import Capacities, Limits


class KafkaSecurity(BaseModel):
    """How Ballast's clients of one Kafka cluster authenticate and check its certificates; every client library gets
    the same (``librdkafka``, ``kafka_python``; faust's through ``services.common.bus``)."""

    security_protocol: Literal["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"] = "PLAINTEXT"
    sasl_mechanism: Literal["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"] | None = None
    sasl_username: str | None = None
    sasl_password: SecretStr | None = None
    # The password in a file instead (a mounted Kubernetes Secret, the local stack's): read as each client is made,
    # so a rotated password is taken at the next connection and never sits in the environment.
    sasl_password_file: Path | None = None
    ssl_cafile: Path | None = None

    @field_validator("sasl_mechanism", "sasl_username", "sasl_password", "sasl_password_file", "ssl_cafile",
                     mode="before")
    @classmethod
    def _empty_is_unset(cls, value: Any) -> Any:
        return None if value == "" else value

    @model_validator(mode="after")
    def _one_password(self) -> KafkaSecurity:
        if self.sasl_password is not None and self.sasl_password_file is not None:
            raise ValueError("give the SASL password or its file (SASL_PASSWORD_FILE), not both")
        if self.security_protocol.startswith("SASL") and (self.sasl_mechanism is None or self.sasl_username is None):
            raise ValueError(f"{self.security_protocol} needs SASL_MECHANISM and SASL_USERNAME")
        return self

    def password(self) -> str | None:
        """The SASL password, from its file where one is given (a missing or unreadable file: ``OSError``)."""
        if self.sasl_password_file is not None:
            return self.sasl_password_file.read_text().rstrip("\r\n")
        return self.sasl_password.get_secret_value() if self.sasl_password is not None else None

    def librdkafka(self) -> dict[str, str]:
        """librdkafka's properties (confluent-kafka)."""
        config = {"security.protocol": self.security_protocol}
        if self.sasl_mechanism:
            config["sasl.mechanism"] = self.sasl_mechanism
        if self.sasl_username:
            config["sasl.username"] = self.sasl_username
        if (password := self.password()) is not None:
            config["sasl.password"] = password
        if self.ssl_cafile:
            config["ssl.ca.location"] = str(self.ssl_cafile)
        return config

    def java(self) -> dict[str, str]:
        """A Java client's properties (Spark's JVM Kafka source): the login in a JAAS line, the CA as a PEM trust
        store."""
        config = {"security.protocol": self.security_protocol}
        if self.sasl_mechanism:
            module = ("plain.PlainLoginModule" if self.sasl_mechanism == "PLAIN" else "scram.ScramLoginModule")
            config["sasl.mechanism"] = self.sasl_mechanism
            config["sasl.jaas.config"] = (f"org.apache.kafka.common.security.{module} required "
                                          f"username={_jaas_quoted(self.sasl_username or '')} "
                                          f"password={_jaas_quoted(self.password() or '')};")
        if self.ssl_cafile:
            config["ssl.truststore.type"] = "PEM"
            config["ssl.truststore.location"] = str(self.ssl_cafile)
        return config

    def kafka_python(self) -> dict[str, Any]:
        """kafka-python's client settings."""
        config: dict[str, Any] = {"security_protocol": self.security_protocol}
        if self.sasl_mechanism:
            config["sasl_mechanism"] = self.sasl_mechanism
        if self.sasl_username:
            config["sasl_plain_username"] = self.sasl_username
        if (password := self.password()) is not None:
            config["sasl_plain_password"] = password
        if self.ssl_cafile:
            config["ssl_cafile"] = str(self.ssl_cafile)
        return config


def _jaas_quoted(value: str) -> str:
    # JAAS's quoted string: a backslash escapes the next character.
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


class BusSettings(KafkaSecurity):
    """The Kafka cluster that carries Ballast's events. Passed unchanged to every client."""

    bootstrap_servers: str = "127.0.0.1:9092"
    topic_partitions: int = Field(default=1, ge=1)
    # Longest a consumer fetch waits for data; short because the local broker holds waiting fetches to the limit.
    fetch_max_wait_ms: int = Field(default=100, ge=1, le=10_000)
    # Replication of Ballast's own topics; 1 suits the single local broker, use 3 on a real bus.
    topic_replication_factor: int = Field(default=1, ge=1)
    # The service lease's group session: a crashed owner is replaced about this long after it dies. Kafka refuses
    # sessions shorter than the brokers' group.min.session.timeout.ms (6 s by default); the local stacks, whose
    # brokers allow 1 s, use 3 s.
    lease_session_timeout_ms: int = Field(default=6000, ge=1000, le=60_000)
    # The same for the services' own consumer groups (faust). A joining member waits on the group as well: the local
    # broker answers a JoinGroup after half this session, so the local stacks use 3 s (a worker is up 1.5 s sooner).
    group_session_timeout_ms: int = Field(default=6000, ge=1000, le=60_000)
    # The CLI's clients: how long they wait for a broker's answer before saying the bus is unavailable, and how
    # often a follower (status --watch) asks a quiet bus whether it is still there.
    answer_timeout_s: float = Field(default=10.0, gt=0)
    liveness_check_s: float = Field(default=5.0, gt=0)
    # The consumer groups of the one-off readers (the CLI's, the services' reads to a topic's end) begin with this;
    # Kafka checks that the client may DESCRIBE the group. A CLI acting as a tenant (BALLAST_TENANT) uses the
    # tenant's own prefix unless this is set (events.topics, services/domain/acls.py).
    reader_groups: str = READER_GROUPS

    def confluent_config(self) -> dict[str, str]:
        """librdkafka properties for confluent-kafka clients."""
        return {"bootstrap.servers": self.bootstrap_servers, **self.librdkafka(),
                # A fresh client connects to one bootstrap broker at a time. A broker that accepts connections but
                # does not answer yet (restarting) held it for librdkafka's default 30 s, past the whole answer
                # timeout, though the other brokers were up: give up on it after a third, and try the next.
                "socket.connection.setup.timeout.ms": str(max(1000, int(self.answer_timeout_s * 1000 / 3)))}


class CruiseControlSettings(BaseModel):
    """Equivalent to Strimzi's STRIMZI_CRUISE_CONTROL_* variables (seed 000), plus timeouts."""

    enabled: bool = True
    # Rack awareness in the managed cluster; when off, requests carry skip_rack_awareness_check=true.
    rack_enabled: bool = False
    host: str = "127.0.0.1"
    port: int = 9090
    url_prefix: str = "kafkacruisecontrol"
    ssl_enabled: bool = False
    ca_file: Path | None = None
    auth_enabled: bool = False
    username: str | None = None
    password: SecretStr | None = None
    # Strimzi mounts the credentials as files; either form works.
    username_file: Path | None = None
    password_file: Path | None = None
    timeout_s: float = Field(default=60.0, gt=0)
    # Cruise Control makes every request a user task and refuses one more while max.active.user.tasks (its setting,
    # 5 by default) are active; a task stays active until its scanner, every 5 s, finds it finished. Each service
    # holds at most its share of tasks at once, counted the same way (client.py, budget.py); the shares together stay
    # below Cruise Control's limit, which leaves room for people and other clients.
    max_active_user_tasks: int = Field(default=5, ge=1)
    task_scanner_period_s: float = Field(default=5.0, gt=0)
    user_task_shares: dict[str, int] = Field(
        default_factory=lambda: {"rebalancer": 2, "replicas-change": 1, "load-collector": 1})

    @field_validator("user_task_shares")
    @classmethod
    def _positive_shares(cls, shares: dict[str, int]) -> dict[str, int]:
        if bad := sorted(name for name, share in shares.items() if share < 1):
            raise ValueError(f"user_task_shares of {', '.join(bad)} must be 1 or more")
        return shares

    @model_validator(mode="after")
    def _shares_fit(self) -> CruiseControlSettings:
        if sum(self.user_task_shares.values()) >= self.max_active_user_tasks:
            raise ValueError(
                f"cruise_control.user_task_shares add up to {sum(self.user_task_shares.values())}, which leaves no "
                f"room under Cruise Control's max.active.user.tasks ({self.max_active_user_tasks}): lower a share, "
                "or raise max_active_user_tasks to match Cruise Control's setting")
        return self

    @model_validator(mode="after")
    def _read_credential_files(self) -> CruiseControlSettings:
        if self.username_file and not self.username:
            self.username = self.username_file.read_text().strip()
        if self.password_file and not self.password:
            self.password = SecretStr(self.password_file.read_text().strip())
        if self.auth_enabled and not (self.username and self.password):
            raise ValueError("cruise_control.auth_enabled needs username and password (or their files)")
        return self

    @property
    def base_url(self) -> str:
        scheme = "https" if self.ssl_enabled else "http"
        return f"{scheme}://{self.host}:{self.port}/{self.url_prefix.strip('/')}/"


class ClusterAdminSettings(KafkaSecurity):
    """How Ballast reaches the managed cluster's admin API: a real Kafka or the embedded simulator."""

    kind: Literal["simulator", "kafka"] = "simulator"
    simulator_url: str = "http://127.0.0.1:9095"
    # For kind=kafka: the managed cluster (may differ from the bus; its security settings are this section's own),
    # and further KafkaAdminClient settings of kafka-python as JSON in BALLAST_CLUSTER_ADMIN__EXTRA.
    bootstrap_servers: str = "127.0.0.1:9092"
    extra: dict[str, Any] = Field(default_factory=dict)
    timeout_s: float = Field(default=30.0, gt=0)

    def client_config(self) -> dict[str, Any]:
        """kafka-python's settings for a client of the managed cluster."""
        return {"bootstrap_servers": self.bootstrap_servers, **self.kafka_python(), **self.extra}


class ReplicasChangeSettings(BaseModel):
    # Pending changes go to Cruise Control in one topic_configuration request once no new change has arrived for
    # batch_quiet_s, or once the oldest has waited batch_window_s (so a steady trickle cannot hold a batch forever).
    # Short: while Ballast's task executes, changes pile up behind it anyway and go together when it ends.
    batch_quiet_s: float = Field(default=0.1, gt=0)
    batch_window_s: float = Field(default=0.3, gt=0)
    poll_interval_s: float = Field(default=1.0, gt=0)
    # While changes wait for Ballast's own executing task (Cruise Control runs one execution at a time), ask about
    # that task this often, so they go as soon as it ends; the rest of the poll waits for poll_interval_s.
    busy_poll_interval_s: float = Field(default=0.05, gt=0)
    retry_initial_s: float = Field(default=2.0, gt=0)
    retry_max_s: float = Field(default=120.0, gt=0)
    # What Cruise Control may move for a replication-factor change. batch: only the request's own topics (every
    # other topic is excluded from the optimization it runs after adding or dropping replicas), with batch_goals and
    # skip_hard_goal_check; cluster: its full optimization with its default goals, as Strimzi sends it (measured on
    # the real one: raising one 3-partition topic from RF 2 to 3 moved 35 partitions, __consumer_offsets included,
    # and 33 leaders).
    optimization_scope: Literal["batch", "cluster"] = "batch"
    # The goals of a batch-scoped change; none: RackAwareGoal where the cluster is rack-aware
    # (cruise_control.rack_enabled), else ReplicaCapacityGoal.
    batch_goals: list[str] = Field(default_factory=list)
    # A batch-scoped request names every topic of its batch in its URL (excluded_topics), which Cruise Control's web
    # server bounds (webserver.http.header.size, 8 KB by default): a batch takes at most this many bytes of it, a
    # bigger burst goes in several requests. Raise it with that setting.
    max_request_url_bytes: int = Field(default=6000, ge=500)


class ReconcilerSettings(BaseModel):
    # Full comparison of desired and actual state; catches topics deleted or changed outside Ballast.
    resync_interval_s: float = Field(default=10.0, gt=0)
    # A topic whose action the cluster refused (a config or RF it does not take, no authorization: the cluster-admin
    # port's permanent errors) is acted on again only after this backoff, doubling up to the max, or at once when its
    # spec changes; every resync would only be refused again. Temporary failures are retried at the next resync.
    retry_initial_s: float = Field(default=30.0, gt=0)
    retry_max_s: float = Field(default=300.0, gt=0)
    drift: DriftMode = "correct"
    # Which of a topic's own configs are the spec's: only those it names (named: others set on the topic stay), or all
    # of them (all: one the spec does not name is removed, back to the cluster's default, as Strimzi's Topic Operator
    # does). The replication throttles' lists are never the spec's: Cruise Control and the throttle controller set them.
    config_ownership: Literal["named", "all"] = "named"
    # Spec events are handled in batches (a burst's new topics in one CreateTopics): a batch goes once no spec event
    # has come for spec_batch_quiet_s, or once its first has waited spec_batch_window_s (a steady stream of specs is
    # then handled at least this often, and a lone spec waits only the quiet period). A second at 1,000 specs/s was
    # most of a spec's time to its status (p99 1.3 s; 0.56 s with 0.2); a burst from one apply arrives well within
    # half a second (3,000 specs in 0.06-0.4 s here) and its quiet period ends it.
    spec_batch_quiet_s: float = Field(default=0.1, gt=0, le=5)
    spec_batch_window_s: float = Field(default=0.5, gt=0, le=30)
    # A burst of specs marked by its publisher (``ballast apply``; ``events.bursts``) goes as one batch as soon as its
    # last spec is in, without the quiet period, and is held past the window while its rest comes: at most this long
    # from its first spec (a publisher that stopped half-way, or a restart in the middle of a burst).
    spec_burst_wait_s: float = Field(default=5.0, gt=0, le=60)


class AutoRebalanceSettings(BaseModel):
    """Seed 001's phase 2: rebalance automatically when brokers join or are announced for removal."""

    enabled: bool = False
    # Templates: options of a RebalanceRequest (goals, replicationThrottle, excludedTopics, ...) per mode, as JSON in
    # BALLAST_REBALANCER__AUTO__ADD_BROKERS / __REMOVE_BROKERS.
    add_brokers: dict[str, Any] = Field(default_factory=dict)
    remove_brokers: dict[str, Any] = Field(default_factory=dict)
    fix_offline_replicas: dict[str, Any] = Field(default_factory=dict)  # the remediation of failed disks
    # Automatic disk rebalance: when a broker's directories drift apart by more than this share of their mean usage
    # (max - min, from the Spark log-dir aggregates) and by at least disk_drift_min_mb, a rebalanceDisk request from
    # the rebalance_disk template (options, autoApprove allowed) goes out; never while another rebalance runs, and
    # not again within disk_cooldown_s of the last one. None: off.
    disk_drift: float | None = Field(default=None, gt=0)
    disk_drift_min_mb: float = Field(default=1024.0, ge=0)
    disk_cooldown_s: float = Field(default=600.0, ge=0)
    rebalance_disk: dict[str, Any] = Field(default_factory=dict)

    @field_validator("rebalance_disk")
    @classmethod
    def _check_disk_template(cls, template: dict[str, Any]) -> dict[str, Any]:
        reserved = {"name", "mode", "brokers", "rebalanceDisk", "rebalance_disk", "goals", "scaling"} & set(template)
        if reserved:
            raise ValueError(f"the disk rebalance template sets only options; Ballast fills in {sorted(reserved)}")
        from events.rebalance import RebalanceRequest

        RebalanceRequest.model_validate({**template, "name": "template", "rebalanceDisk": True})
        return template

    @field_validator("add_brokers", "remove_brokers", "fix_offline_replicas")
    @classmethod
    def _check_template(cls, template: dict[str, Any]) -> dict[str, Any]:
        reserved = {"name", "mode", "brokers", "autoApprove", "auto_approve", "scaling"} & set(template)
        if reserved:
            raise ValueError(f"a template sets only options; Ballast fills in {sorted(reserved)}")
        from events.rebalance import RebalanceRequest

        RebalanceRequest.model_validate({**template, "name": "template", "mode": "add-brokers", "brokers": [0]})
        return template


class RebalancerSettings(BaseModel):
    # How often executing rebalances are polled (user_tasks and /state): the status's progress is this fresh.
    poll_interval_s: float = Field(default=1.0, gt=0)
    retry_initial_s: float = Field(default=2.0, gt=0)
    retry_max_s: float = Field(default=60.0, gt=0)
    # How often brokers are looked at: brokers that joined (automatic rebalancing) and whether brokers of a
    # finished remove-brokers rebalance are still empty (safe scale-down).
    observe_interval_s: float = Field(default=5.0, gt=0)
    auto: AutoRebalanceSettings = AutoRebalanceSettings()
    # A failed disk (an offline log directory) is reported at once in the broker's status; with this on, its
    # offline replicas are also moved to healthy brokers (a fix-offline-replicas rebalance, auto-approved).
    remediate_failed_disks: bool = False
    # Cruise Control computes a proposal again when it executes one. An approval first asks for that proposal and
    # stands only if its data to move and replica movements are within this many percent of the approved figures;
    # otherwise the rebalance goes back to ProposalReady with the new proposal. None: execute at once, as Strimzi
    # does. Auto-approved rebalances are not checked.
    approval_max_drift_percent: float | None = Field(default=20.0, ge=0)


class LoadCollectorSettings(BaseModel):
    # How often Cruise Control's load is sampled: the resolution of the aggregates' windows. Each sample is two
    # requests (load, partition_load), which the collector's one user task of Cruise Control's makes 5 s apart.
    interval_s: float = Field(default=10.0, gt=0)
    # Also sample every partition (partition_load); off for very large clusters where broker figures suffice.
    partitions: bool = True


class ByteRates(BaseModel):
    """Bytes per second a broker or log directory can carry (``100MB`` is 100 MB/s; ``100MiB`` works too): the most
    specific entry wins, a directory's own (``"broker:path"``), a broker's, its rack's (the longest rack path that
    is its rack or contains it), then ``default``. None anywhere: no throttle is computed for it."""

    default: ByteSize | None = None
    racks: dict[str, ByteSize] = Field(default_factory=dict)
    brokers: dict[int, ByteSize] = Field(default_factory=dict)
    log_dirs: dict[str, ByteSize] = Field(default_factory=dict)

    def capacities(self) -> Capacities:
        return Capacities(default=int(self.default) if self.default is not None else None,
                          racks={k: int(v) for k, v in self.racks.items()},
                          brokers={k: int(v) for k, v in self.brokers.items()},
                          log_dirs={k: int(v) for k, v in self.log_dirs.items()})


class ThrottleSettings(BaseModel):
    """The throttle controller (``ballast run throttle``): while replicas move, each broker taking part gets its
    headroom as its rate, between the brokers and between its log directories (docs/throttles.md)."""

    # How often it looks. A move someone else starts copies unthrottled until the next look.
    interval_s: float = Field(default=2.0, gt=0)
    # What each broker's network carries (bytes in per second), and each log directory's disk writes.
    network_capacity: ByteRates = ByteRates()
    disk_capacity: ByteRates = ByteRates()
    # The share of the headroom a move may take; the rest absorbs a rise of traffic until the next look.
    safety_share: float = Field(default=0.8, gt=0, le=1)
    floor: ByteSize = Field(default=ByteSize(1_000_000), gt=0)
    ceiling: ByteSize | None = None
    # Up by at most this factor a look (down at once); changes smaller than min_change of the rate are not made.
    ramp_up: float = Field(default=2.0, gt=1)
    min_change: float = Field(default=0.1, ge=0, lt=1)
    # After the last partition outside the moves is back in its ISR, the rates stay at the floor this long.
    back_off_hold_s: float = Field(default=30.0, ge=0)
    # The produce-latency probe: records to this topic of the managed cluster (made if missing; unset: no probe, no
    # latency back-off), every latency_probe_every_s; its p99 over latency_window_s past latency_limit_ms backs off.
    latency_probe_topic: str | None = None
    latency_probe_every_s: float = Field(default=0.5, gt=0)
    latency_window_s: float = Field(default=30.0, gt=0)
    latency_limit_ms: float = Field(default=500.0, gt=0)
    # auto: Cruise Control's load (the load collector's samples) while fresh, else the brokers' log growth.
    traffic_source: Literal["auto", "cruise-control", "log-growth"] = "auto"
    traffic_max_age_s: float = Field(default=120.0, gt=0)

    def limits(self) -> Limits:
        return Limits(share=self.safety_share, floor=int(self.floor),
                      ceiling=int(self.ceiling) if self.ceiling is not None else None, ramp_up=self.ramp_up,
                      min_change=self.min_change)


class SparkSettings(BaseModel):
    """The load-aggregates job (``ballast run spark-aggregates``, or spark-submit: ``spark.session``)."""

    # None: spark-submit's --master under spark-submit, otherwise local[2] (this process runs the whole job). Given,
    # it wins over spark-submit's, as properties set in code do in Spark.
    master: str | None = None
    # ballast_bus: Ballast's own source on confluent-kafka; kafka: Spark's JVM source (needs its jar).
    source: Literal["ballast_bus", "kafka"] = "ballast_bus"
    # A path or a URI (file:, hdfs:, s3a:). Executors write the window state here: on a cluster of several hosts it
    # must be storage that every host sees.
    checkpoint_location: str = ".ballast/spark/checkpoint"
    window_s: int = Field(default=60, ge=1)
    slide_s: int = Field(default=10, ge=1)
    # How late a sample may arrive and still count in its window.
    watermark_s: int = Field(default=30, ge=0)
    trigger_s: float = Field(default=2.0, gt=0)
    # At most this many samples per micro-batch: a backlog is worked off in steps, within the driver's memory.
    max_records_per_batch: int = Field(default=100_000, ge=1)
    # More options for the driver's JVM (which runs the work too under a local master), as spark-submit's
    # --driver-java-options: the local stack gives spark.session.SMALL_JOB_JVM. Not used under spark-submit.
    java_options: str = ""
    # Under a cluster master only (a local master keeps the driver on 127.0.0.1): the address executors reach the
    # driver at (spark.driver.host) and the one it listens on (spark.driver.bindAddress). None: Spark's choice.
    driver_host: str | None = None
    driver_bind_address: str | None = None
    # The Python that executors run (spark.pyspark.python): it must have what
    # deploy/spark-worker-requirements.txt lists. None: a local master runs this interpreter; on a cluster, Spark's
    # default (PYSPARK_PYTHON, else python3 on the workers' PATH).
    worker_python: str | None = None
    # More Spark properties, e.g. BALLAST_SPARK__CONF='{"spark.executor.memory": "2g"}'. They win over spark-submit's
    # and over Ballast's own defaults.
    conf: dict[str, str] = Field(default_factory=dict)

    @field_validator("master", "driver_host", "driver_bind_address", "worker_python", mode="before")
    @classmethod
    def _empty_is_unset(cls, value: Any) -> Any:
        return None if value == "" else value


class SimulatorSettings(BaseModel):
    """The embedded cluster simulator (``ballast run cluster-sim``)."""

    # What Cruise Control executes on: its own in-memory cluster (``brokers`` below), or the real Kafka cluster the
    # cluster-admin settings name (``kafka``; ``brokers`` and the time settings are then not used).
    backend: Literal["memory", "kafka"] = "memory"
    sync_interval_s: float = Field(default=2.0, gt=0)  # how often the kafka backend reads the cluster and its sizes

    host: str = "127.0.0.1"
    cruise_control_port: int = 9090
    admin_port: int = 9095
    # The admin API (stop a broker, fail a disk) has no authentication: where ``host`` opens Cruise Control's API to a
    # network, this keeps the admin API on another address (a container's loopback). None: ``host``.
    admin_host: str | None = None
    # Brokers as "id:rack" items; racks are hierarchical paths.
    brokers: list[str] = Field(
        default_factory=lambda: ["1:/dc1/r1", "2:/dc1/r2", "3:/dc2/r1", "4:/dc2/r2", "5:/dc3/r1", "6:/dc3/r2"]
    )
    time_scale: float = Field(default=60.0, gt=0)
    replica_bandwidth_mb_s: float = Field(default=100.0, gt=0)
    min_execution_s: float = Field(default=0.5, ge=0)
    proposal_s: float = Field(default=0.1, ge=0)
    # Cruise Control warms up after a start (cluster_sim.warm_up.WarmUp): bootstrap-only metadata (no topic
    # matches, no broker exists), then no valid window (NotEnoughValidWindows), then a state that does not say it is
    # ready yet. warmup_s at the first start (none: the embedded stack is ready at once), restart_warmup_s after a
    # restart that names no length (the real one's, measured: its state says ready about 30 s after it listens).
    warmup_s: float = Field(default=0.0, ge=0)
    restart_warmup_s: float = Field(default=30.0, ge=0)
    partition_size_mb: float = Field(default=100.0, ge=0)
    # Cruise Control's max.active.user.tasks, its task scanner's period and webserver.session.maxExpiryTimeMs.
    max_active_user_tasks: int = Field(default=5, ge=1)
    task_scanner_period_s: float = Field(default=5.0, gt=0)
    session_expiry_s: float = Field(default=60.0, gt=0)
    auth_username: str | None = None
    auth_password: SecretStr | None = None
    tls_certfile: Path | None = None
    tls_keyfile: Path | None = None


class PlacementSettings(BaseModel):
    """Which placer decides where new replicas go (a topic spec may name another), and its seed."""

    placer: PlacerName = "striped"
    # Fixed seed: the same cluster and request always give the same placement. None: a fresh choice each time.
    seed: int | None = 0
    # The topic reconciler's placements read every topic's assignment and every log directory's replicas, and add each
    # placement Ballast makes to what they read. A read older than view_max_age_s is used as it is and read again
    # soon after, off the placements' path; one older than view_stale_max_s is read before placing
    # (services.topic_reconciler.freshness). Brokers, cordons and failed directories are read for every batch.
    view_max_age_s: float = Field(default=30.0, gt=0)
    view_stale_max_s: float = Field(default=600.0, gt=0)
    # Creating topics while brokers are down (seed 002): disabled (Kafka's behaviour), enabled (placeholders for
    # what does not fit on alive brokers), enabled_prefer_observed (place over every observed broker, keeping the
    # rack spread; replicas on offline ones become placeholders).
    under_replicated: Literal["disabled", "enabled", "enabled_prefer_observed"] = "disabled"
    # How often the topic reconciler asks the cluster for its brokers: the observed-broker registry, and filling
    # placeholders when one joins or returns.
    observe_interval_s: float = Field(default=5.0, gt=0)
    # Break placement ties towards the brokers carrying less (the Spark aggregates' bytes in); a spec may opt out
    # (loadAware: false). Aggregates older than load_max_age_s are not used.
    load_aware: bool = True
    load_max_age_s: float = Field(default=300.0, gt=0)


class ServicePorts(BaseModel):
    """Health / web ports of each service (faust's web server), bound to ``web_host``."""

    topic_reconciler: int = 6066
    replicas_change: int = 6067
    rebalancer: int = 6068
    load_collector: int = 6069
    throttle: int = 6070


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="BALLAST_", env_nested_delimiter="__", extra="ignore",
                                      env_parse_none_str="null")

    # The Kafka cluster this deployment manages, by the name KafkaTopics give it (strimzi.io/cluster). Named, the
    # deployment has bus topics and consumer groups of its own (ballast.<cluster>.*, ballast-<cluster>-*), so that one
    # bus serves several clusters, and specs and rebalances naming another cluster are not its to act on (the CLI
    # skips them, the services dead-letter them). None: the bus is this deployment's alone, and it acts on every spec.
    cluster: ClusterName | None = Field(default=None, validate_default=True)
    bus: BusSettings = BusSettings()
    cruise_control: CruiseControlSettings = CruiseControlSettings()
    cluster_admin: ClusterAdminSettings = ClusterAdminSettings()
    replicas_change: ReplicasChangeSettings = ReplicasChangeSettings()
    reconciler: ReconcilerSettings = ReconcilerSettings()
    rebalancer: RebalancerSettings = RebalancerSettings()
    load_collector: LoadCollectorSettings = LoadCollectorSettings()
    throttle: ThrottleSettings = ThrottleSettings()
    spark: SparkSettings = SparkSettings()
    simulator: SimulatorSettings = SimulatorSettings()
    placement: PlacementSettings = PlacementSettings()
    ports: ServicePorts = ServicePorts()
    # Where each service's health and metrics server listens (and nothing else of faust's web pages is exposed
    # beyond it): loopback unless an operator opens it, as the container image does for its probes.
    web_host: str = "127.0.0.1"
    # Guardrails on topic specs (services/domain/policy.py), read by the CLI and the topic reconciler; None: only the
    # min.insync.replicas margin warning.
    policy_file: Path | None = None
    # The teams and what each owns (services/domain/tenants.py): each tenant sends its specs on a spec topic of its
    # own (events.topics.tenant_topics), which Kafka's ACLs let only it write. None: no tenants, one spec topic for all.
    tenants_file: Path | None = None
    # The tenant this process acts as (a CLI handed a tenant's client settings): it writes the tenant's spec topic and
    # reads the tenant's status topic. None: the deployment's own topics, as an admin.
    tenant: TenantName | None = None
    # The Kafka principal Ballast's services authenticate as: `ballast acls` grants it what the services need.
    service_principal: str = "User:ballast"
    log_level: Literal["debug", "info", "warning", "error"] = "info"
    log_format: Literal["json", "console", "auto"] = "auto"
    # Where faust keeps its local data (table state, not used for correctness).
    data_dir: Path = Path(".ballast/data")
    # Where `ballast up` keeps the running local stack (stack.json, logs), and `ballast spark package` its archives
    # (spark/): one per user, found from any directory.
    state_dir: Path = Field(default_factory=lambda: _user_state_home() / "ballast")


    @field_validator("cluster", "tenant", mode="before")
    @classmethod
    def _empty_is_unset(cls, value: Any) -> Any:
        return None if value == "" else value

    @model_validator(mode="after")
    def _tenants_reader_groups(self) -> Settings:
        if self.tenant is not None and "reader_groups" not in self.bus.model_fields_set:
            self.bus.reader_groups = tenant_reader_groups(self.tenant, self.cluster)
        return self

    @field_validator("cluster")
    @classmethod
    def _cluster_as_the_process_started(cls, cluster: str | None) -> str | None:
        # The bus topics' names were fixed as the process started (events.topics); a cluster given any other way, or
        # changed since (a stack `ballast up` started for a cluster, say), would have the settings name one
        # deployment while the process talks to another's topics.
        if cluster != topics.CLUSTER:
            started = f"cluster {topics.CLUSTER!r}" if topics.CLUSTER else "no cluster"
            raise ValueError(f"{cluster!r} is not what this process started with ({started}): set BALLAST_CLUSTER="
                             f"{cluster or ''} in the environment before starting it")
        return cluster


def _user_state_home() -> Path:
    # The XDG base directory for state that outlives a process but is no one's document.
    xdg = os.environ.get("XDG_STATE_HOME")
    return Path(xdg) if xdg and Path(xdg).is_absolute() else Path.home() / ".local" / "state"


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    return Settings()
