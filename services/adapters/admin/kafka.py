"""Cluster-admin adapter for a real Kafka cluster, on kafka-python's KafkaAdminClient.

kafka-python 3.x speaks every Kafka API the port needs (confluent-kafka lacks AlterPartitionReassignments,
ListPartitionReassignments, DescribeLogDirs and AlterReplicaLogDirs). Its client is blocking and does its I/O on a
thread of its own; each call here runs in a worker thread so that the services' event loop never waits on it.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import re
import threading
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from operator import itemgetter
from typing import Any, TypeVar

from kafka import TopicPartition
from kafka import errors as kafka_errors
from kafka.admin import AlterConfigOp, ConfigResource, ConfigResourceType, ConfigSourceType, KafkaAdminClient
from kafka.structs import TopicPartitionReplica

from events.topic_configs import KAFKA_TOPIC_DEFAULTS
from services.common.logging import get_logger
from services.adapters.admin.port import (
    AdminError,
    Assignment,
    BrokerInfo,
    ClusterUnavailable,
    LogDirInfo,
    LogDirReplica,
    NewTopic,
    OperationRefused,
    PartitionInfo,
    Reassignment,
    ReplicaInfo,
    replica_on,
    TopicAlreadyExists,
    TopicDefaults,
    TopicDescription,
    UnknownTopic,
    UnreadableAnswer,
    in_requests,
    topic_defaults,
)

log = get_logger(__name__)
T = TypeVar("T")
_ERROR_MESSAGE = re.compile(r"error_message=(['\"])(.*?)\1[,)]")
PREFERRED_ELECTION = 0
READ_ATTEMPTS = 4
RETRY_BACKOFF_S = 0.3
# A call still unanswered after this many of its request timeouts is taken as hung: kafka-python's blocking call
# waits on its I/O thread with no deadline of its own, and a fresh clone's run saw a DescribeLogDirs (its metadata
# request) wait for ever, until the test's 300 s ran out. Its client is closed, which fails the waiting call when
# the client's I/O thread stops. Never sooner than kafka-python's own fixed waits (bootstrap, finding the
# controller: 30 s each) after the request timeout.
HUNG_AFTER_TIMEOUTS = 3
CLIENT_OWN_WAIT_S = 30.0
# How long a changed config is read back for until the broker answering shows the change: a broker applies it
# from the metadata log a moment after the controller accepted it.
SETTLE_S = 5.0
# How often a broker is asked for new replicas' log directories while its answer times out (each wait is the client's
# request timeout): it answers once it has created the logs of the topics created before.
LOG_DIRS_ATTEMPTS = 5
# How long the configs a CreateTopics answered with stand for a DescribeConfigs of the topic: only the read right
# after its creation takes them (a later one asks the cluster, where someone may have changed them since).
CREATED_CONFIGS_FRESH_S = 5.0
# kafka-python logs each refused connection and retried request at WARNING, and a broker going away at ERROR, in
# plain text; the adapter raises what fails to whoever called it, who logs it (as JSON).
logging.getLogger("kafka").setLevel(logging.CRITICAL)


def _internal(topic: Mapping[str, Any]) -> bool:
    """Kafka's own topics (``__consumer_offsets``, ...): flagged internal, or named so."""
    return bool(topic.get("is_internal")) or topic["name"].startswith("__")


def _reason(exc: Exception) -> str:
    """The broker's own words where the answer has them (kafka-python's text repeats the whole request)."""
    found = _ERROR_MESSAGE.search(str(exc))
    if found and found.group(2) not in ("None", ""):
        return f"{type(exc).__name__}: {found.group(2)}"
    description = getattr(exc, "description", None)
    if description and "Request '" in str(exc):
        return f"{type(exc).__name__}: {description}"
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


# Kafka does not call these retriable, but each only says the cluster is changing under the request: a broker this
# client's metadata does not know yet (it joined or moved) or one that is down, another reassignment of the partition
# still running (Cruise Control executing). The same request succeeds once that is over.
_MOMENTARY = (kafka_errors.UnknownBrokerIdError, kafka_errors.BrokerNotAvailableError,
              kafka_errors.ReassignmentInProgressError)


# What the client refuses before it sends the request (see KafkaClusterAdmin._run).
_NOT_SENT = (kafka_errors.UnknownBrokerIdError, kafka_errors.NodeNotReadyError)


def _temporary(kind: type[BaseException]) -> bool:
    """Kafka's own word (``retriable``) decides, with connections and timeouts, which never reached the cluster."""
    return bool(getattr(kind, "retriable", False)) or issubclass(kind, (*_MOMENTARY, OSError, TimeoutError))


def _admin_error(exc: Exception) -> AdminError:
    """The port's kind of a failure of the client (see the port's policy)."""
    if isinstance(exc, AdminError):
        return exc
    if isinstance(exc, kafka_errors.TopicAlreadyExistsError):
        return TopicAlreadyExists(_reason(exc))
    if isinstance(exc, kafka_errors.UnknownTopicOrPartitionError):
        return UnknownTopic(_reason(exc))
    if _temporary(type(exc)):
        return ClusterUnavailable(_reason(exc))
    # A refusal of Kafka's; or the client failed on the request itself, which it would do again.
    return OperationRefused(_reason(exc))


def _answered(error: str, message: str) -> AdminError:
    """An ``error`` kafka-python hands back as text ("InvalidConfigurationError: ..."): the kind its name says."""
    kind = getattr(kafka_errors, error.split(":", 1)[0].strip(), None)
    if not (isinstance(kind, type) and issubclass(kind, kafka_errors.KafkaError)):
        return UnreadableAnswer(message)
    return ClusterUnavailable(message) if _temporary(kind) else OperationRefused(message)


def _check(errors: Mapping[Any, Any], what: str) -> None:
    """kafka-python answers some calls with an error class per item instead of raising; raise the first."""
    failed = {key: error for key, error in errors.items()
              if error is not None and error is not kafka_errors.NoError}
    if failed:
        key, error = next(iter(failed.items()))
        name = error.__name__ if isinstance(error, type) else type(error).__name__
        exc = error() if isinstance(error, type) else error
        raise _admin_error(exc) if isinstance(exc, Exception) else UnreadableAnswer(f"{what} {key}: {name}")


@functools.cache
def _modified(source: str) -> bool:
    """Whether a config of this source differs from Kafka's default. Asked of every entry of every topic created (a
    CreateTopics answer holds all of a topic's configs), so each source is read once."""
    return ConfigSourceType.build_from(source).is_modified()


def _configs_of(entries: Mapping[str, Mapping[str, Any]]) -> tuple[dict[str, str], frozenset[str]]:
    """A topic's configs that differ from Kafka's defaults, and which of them are set on the topic, from kafka-python's
    entries (a DescribeConfigs or a CreateTopics answer: the same entries, the latter unfiltered)."""
    modified = {key: entry for key, entry in entries.items() if _modified(entry.get("config_source", "UNKNOWN"))}
    return ({key: entry["value"] for key, entry in modified.items() if entry.get("value") is not None},
            frozenset(key for key, entry in modified.items() if entry.get("config_source") == "DYNAMIC_TOPIC_CONFIG"))


def _log_dirs(answer: list[dict[str, Any]]) -> list[LogDirInfo]:
    """kafka-python's DescribeLogDirs answers (one per broker), read."""
    described = []
    for entry in answer:
        for d in entry["log_dirs"]:
            error = None if d["error_code"] == 0 else kafka_errors.for_code(d["error_code"]).__name__
            described.append(LogDirInfo(
                broker=entry["broker"], path=d["log_dir"], error=error,
                total_bytes=d.get("total_bytes") if (d.get("total_bytes") or -1) >= 0 else None,
                usable_bytes=d.get("usable_bytes") if (d.get("usable_bytes") or -1) >= 0 else None,
                cordoned=bool(d.get("is_cordoned", False)),
                replicas=tuple(LogDirReplica(topic=t["name"], partition=p["partition_index"],
                                             size_bytes=p["partition_size"], offset_lag=p["offset_lag"],
                                             is_future=p["is_future_key"])
                               for t in d["topics"] for p in t["partitions"])))
    return described


def _close(client: KafkaAdminClient) -> None:
    try:
        client.close()
    except Exception:  # noqa: BLE001 -- closing a broken client
        pass


class KafkaClusterAdmin:
    def __init__(self, config: Mapping[str, Any], timeout_s: float = 30.0) -> None:
        """``config``: KafkaAdminClient settings (``bootstrap_servers``, security ...)."""
        self._config = {"client_id": "ballast-admin", **config, "request_timeout_ms": int(timeout_s * 1000)}
        self._timeout_s = timeout_s
        self._client: KafkaAdminClient | None = None
        self._lock = threading.Lock()
        # Topics this client just created: the configs Kafka answered CreateTopics with (v5+, as DescribeConfigs would
        # say them), and when; the describe right after the creation takes them instead of asking again (thousands of
        # topics' DescribeConfigs took as long as creating them).
        self._created_configs: dict[str, tuple[float, tuple[dict[str, str], frozenset[str]]]] = {}

    # -- plumbing ------------------------------------------------------------------------------------------------

    def _admin(self) -> KafkaAdminClient:
        with self._lock:
            if self._client is None:
                # Connecting blocks until a broker answers (or bootstrap times out): done in the worker thread.
                self._client = KafkaAdminClient(**self._config)
            return self._client

    async def _run(self, call: Callable[[KafkaAdminClient], T], *, read: bool = True) -> T:
        """Run one client call in a worker thread. A read that fails for a reason Kafka calls retriable (the node it
        asked has just died, a leader moved) is asked again, of a fresh client, up to READ_ATTEMPTS times; a change
        is not, since it may have been applied before the connection broke. A call the client did not send (its
        metadata does not know the broker yet, or its connection to it is paused) is asked again, read or change,
        until the call's timeout."""
        def attempt(used: list[KafkaAdminClient]) -> T:
            client = self._admin()
            used.append(client)
            try:
                return call(client)
            except (kafka_errors.KafkaConnectionError, kafka_errors.KafkaTimeoutError, kafka_errors.UnknownBrokerIdError):
                # Connections and metadata are rebuilt from the bootstrap servers next time (brokers may have moved,
                # or joined since this client last read the cluster's metadata).
                self._discard(client)
                raise
            except RuntimeError as exc:
                if self._client is client:
                    raise
                # The client was closed under this call (given up as hung by another): "NetworkSelector closed!".
                raise kafka_errors.KafkaConnectionError(str(exc)) from exc

        deadline = asyncio.get_running_loop().time() + self._timeout_s
        tries = 0
        while True:
            tries += 1
            try:
                return await self._watched(attempt)
            except _NOT_SENT as exc:
                # Raised by the client before it sends anything, so a change is asked again too, until the call's own
                # timeout, as Kafka's AdminClient waits for the node: its metadata does not know the broker yet (the
                # broker joined after the client read the cluster, or the broker that answered it had not yet learnt
                # of the new one; asked again of a fresh client with fresh metadata), or the connection is paused
                # with as many requests in flight as it takes (other calls of this client at the same moment). Seen
                # under load: a test's AlterReplicaLogDirs to a broker just added refused with "UnknownBrokerIdError:
                # 5"; eight threads' calls on one client refused with "Node paused: {'max_in_flight'}".
                if asyncio.get_running_loop().time() + RETRY_BACKOFF_S * tries > deadline:
                    raise _admin_error(exc) from exc
                await asyncio.sleep(RETRY_BACKOFF_S * tries)
            except Exception as exc:  # noqa: BLE001 -- every client failure becomes one of the port's kinds
                if read and tries < READ_ATTEMPTS and getattr(exc, "retriable", False):
                    await asyncio.sleep(RETRY_BACKOFF_S * tries)
                    continue
                raise _admin_error(exc) from exc

    async def _watched(self, attempt: Callable[[list[KafkaAdminClient]], T]) -> T:
        """``attempt`` in a worker thread (it notes the client it uses), given up as hung (a retriable timeout) once it
        outlives HUNG_AFTER_TIMEOUTS of the client's request timeouts, or the client's own fixed waits."""
        used: list[KafkaAdminClient] = []
        call = asyncio.ensure_future(asyncio.to_thread(attempt, used))
        call.add_done_callback(lambda done: done.cancelled() or done.exception())  # the outcome of one given up
        limit_s = max(self._timeout_s * HUNG_AFTER_TIMEOUTS, CLIENT_OWN_WAIT_S + self._timeout_s)
        try:
            return await asyncio.wait_for(asyncio.shield(call), limit_s)
        except TimeoutError:
            log.warning("a Kafka admin call hung; closing its client", after_s=limit_s)
            # In a thread of its own: the lock may be held by a client still connecting, and closing joins the
            # client's I/O thread, which may be the one stuck.
            for client in used:
                threading.Thread(target=self._discard, args=(client,), name="admin-close", daemon=True).start()
            raise kafka_errors.KafkaTimeoutError(f"no answer within {limit_s:.0f} s") from None

    def _discard(self, client: KafkaAdminClient) -> None:
        """Close ``client``; the next call gets a fresh one, unless another call has already replaced it (a failed
        call closes the client it used, never one made since)."""
        with self._lock:
            if self._client is client:
                self._client = None
        _close(client)

    # -- brokers and topics --------------------------------------------------------------------------------------

    async def brokers(self) -> list[BrokerInfo]:
        # DescribeCluster with fenced brokers: a stopped broker stays registered (alive=False) until unregistered.
        cluster = await self._run(lambda a: a.describe_cluster())
        return sorted((BrokerInfo(id=b["broker_id"], rack=b.get("rack") or None, alive=not b.get("is_fenced"))
                       for b in cluster["brokers"]), key=lambda b: b.id)

    async def topic_defaults(self) -> TopicDefaults:
        # Any alive broker's: a cluster whose brokers disagree creates a topic with the controller's, which is one of
        # them; the brokers of one cluster share these settings in practice.
        alive = [b.id for b in await self.brokers() if b.alive]
        if not alive:
            raise ClusterUnavailable("no broker is alive to read the topic defaults from")
        # Only these two, whatever their source: kafka-python's default filter leaves out static and default values.
        resource = ConfigResource(ConfigResourceType.BROKER, str(alive[0]), configs=dict.fromkeys(KAFKA_TOPIC_DEFAULTS))
        answer = await self._run(lambda a: a.describe_configs([resource], config_filter="all"))
        entries = answer.get("broker", {}).get(str(alive[0]), {})
        return topic_defaults({key: e["value"] for key, e in entries.items()
                               if key in KAFKA_TOPIC_DEFAULTS and e.get("value") is not None})

    async def list_topics(self, include_internal: bool = False) -> dict[str, TopicDescription]:
        metadata = await self._run(lambda a: a.describe_topics())
        names = [t["name"] for t in metadata if include_internal or not _internal(t)]
        described = await self._describe(names, metadata)
        return {name: d for name, d in described.items() if d is not None}

    async def assignments(self) -> dict[str, list[list[int]]]:
        metadata = await self._run(lambda a: a.describe_topics())
        by_index = itemgetter("partition_index")
        return {t["name"]: [list(p["replica_nodes"]) for p in sorted(t["partitions"], key=by_index)]
                for t in metadata if t.get("error_code", 0) == 0 and not _internal(t)}

    async def partition_states(self) -> dict[str, tuple[PartitionInfo, ...]]:
        metadata = await self._run(lambda a: a.describe_topics())
        return {t["name"]: tuple(
                    PartitionInfo(id=p["partition_index"], replicas=tuple(p["replica_nodes"]),
                                  leader=p["leader_id"] if p["leader_id"] >= 0 else None, isr=tuple(p["isr_nodes"]),
                                  offline=tuple(p.get("offline_replicas") or ()))
                    for p in sorted(t["partitions"], key=lambda p: p["partition_index"]))
                for t in metadata if t.get("error_code", 0) == 0}

    async def topic_configs(self, names: Sequence[str]) -> dict[str, dict[str, str]]:
        configs = await self._topic_configs(names)
        return {name: {k: v for k, v in config.items() if k in own} for name, (config, own) in configs.items()}

    async def describe_topics(self, names: list[str], *, replica_dirs: bool = True
                              ) -> dict[str, TopicDescription | None]:
        if not names:
            return {}
        metadata = await self._run(lambda a: a.describe_topics(list(names)))
        return await self._describe(names, metadata, replica_dirs=replica_dirs)

    async def _describe(self, names: list[str], metadata: list[dict[str, Any]], *, replica_dirs: bool = True
                        ) -> dict[str, TopicDescription | None]:
        found = {t["name"]: t for t in metadata if t.get("error_code", 0) == 0}
        if hidden := sorted(t["name"] for t in metadata
                            if t.get("error_code", 0) == kafka_errors.TopicAuthorizationFailedError.errno):
            # Kafka answers so whether the topic exists or not: read as absent, it was "create" to a tenant's diff.
            raise OperationRefused(f"not authorized to describe the topic(s) {', '.join(hidden)} (Kafka's ACLs)")
        present = [name for name in names if name in found]
        configs, brokers = await asyncio.gather(self._topic_configs(present), self.brokers()) if present else ({}, [])
        racks = {b.id: b.rack for b in brokers}
        disks = await self._replica_disks({name: [p["partition_index"] for p in found[name]["partitions"]]
                                           for name in present if replica_dirs}, [b.id for b in brokers if b.alive])
        result: dict[str, TopicDescription | None] = {}
        for name in names:
            topic = found.get(name)
            if topic is None:
                result[name] = None
                continue
            partitions = []
            for p in sorted(topic["partitions"], key=lambda p: p["partition_index"]):
                replicas = tuple(p["replica_nodes"])
                info = tuple(ReplicaInfo(broker=b, rack=racks.get(b), **disk)
                             if (disk := disks.get((name, p["partition_index"], b))) else replica_on(b, racks.get(b))
                             for b in replicas)
                leader = p["leader_id"] if p["leader_id"] >= 0 else None
                partitions.append(PartitionInfo(id=p["partition_index"], replicas=replicas, leader=leader,
                                                isr=tuple(p["isr_nodes"]), replica_info=info,
                                                offline=tuple(p.get("offline_replicas") or ())))
            config, overrides = configs.get(name, ({}, frozenset()))
            result[name] = TopicDescription(name=name, partitions=tuple(partitions), config=config,
                                            overrides=overrides)
        return result

    async def _topic_configs(self, names: Sequence[str]) -> dict[str, tuple[dict[str, str], frozenset[str]]]:
        """Per topic: its configs that differ from Kafka's defaults, and which of them are set on the topic."""
        now = time.monotonic()
        result = {}
        for name in names:
            answered = self._created_configs.pop(name, None)
            if answered is not None and now - answered[0] < CREATED_CONFIGS_FRESH_S:
                result[name] = answered[1]
        if asked := [name for name in names if name not in result]:
            resources = [ConfigResource(ConfigResourceType.TOPIC, name) for name in asked]
            answer = await self._run(lambda a: a.describe_configs(resources))
            result.update({name: _configs_of(entries) for name, entries in answer.get("topic", {}).items()})
        return result

    async def _replica_disks(self, partitions: Mapping[str, Sequence[int]], alive: Sequence[int]
                             ) -> dict[tuple[str, int, int], dict[str, Any]]:
        """(topic, partition, broker) -> log_dir, size_bytes and future_log_dir, from DescribeLogDirs of the alive
        brokers for these partitions only, each broker asked at once (kafka-python, asked for every partition, reads
        every topic's metadata to name them, and the answer grows with the cluster: for a look at a few topics). Best
        effort: a broker that does not answer (it may have died since) leaves its replicas' disks unknown rather than
        failing the description."""
        if not partitions or not alive:
            return {}
        wanted = {name: list(indexes) for name, indexes in partitions.items()}
        answers = await asyncio.gather(*(self._run(lambda a, b=broker: a.describe_log_dirs(wanted, brokers=[b]))
                                         for broker in alive), return_exceptions=True)
        disks: dict[tuple[str, int, int], dict[str, Any]] = {}
        for answer in answers:
            if isinstance(answer, AdminError):
                continue
            if isinstance(answer, BaseException):
                raise answer
            for log_dir in _log_dirs(answer):
                for replica in log_dir.replicas:
                    entry = disks.setdefault((replica.topic, replica.partition, log_dir.broker), {})
                    if replica.is_future:
                        entry["future_log_dir"] = log_dir.path
                    else:
                        entry.update(log_dir=log_dir.path, size_bytes=replica.size_bytes)
        return disks

    async def create_topic(
        self, name: str, partitions: int, replication_factor: int, config: dict[str, str] | None = None,
        assignment: Assignment | None = None,
    ) -> None:
        spec: dict[str, Any] = {"configs": dict(config or {})}
        if assignment is not None:
            spec["assignments"] = {p: list(replicas) for p, replicas in enumerate(assignment)}
        else:
            spec.update(num_partitions=partitions, replication_factor=replication_factor)
        await self._run(lambda a: a.create_topics({name: spec}), read=False)

    async def create_topics(self, topics: Sequence[NewTopic], *,
                            first: Callable[[], Awaitable[None]] | None = None) -> dict[str, AdminError | None]:
        outcome: dict[str, AdminError | None] = {}
        # Every request's directories first: a broker answers AlterReplicaLogDirs only once it has created the logs
        # of the topics created before (both under its replica-state lock), so directories sent between two
        # CreateTopics would wait for the first request's thousands of logs. The caller's ``first`` meanwhile: a
        # directory recorded for a topic never created is never used.
        await asyncio.gather(self._prefer_log_dirs({t.name: t.log_dirs for t in topics}),
                             first() if first is not None else asyncio.sleep(0))
        for batch in in_requests(topics):
            requests = {t.name: {"configs": dict(t.config),
                                 "assignments": {p: list(replicas) for p, replicas in enumerate(t.assignment)}}
                        for t in batch}
            answer = await self._run(lambda a, r=requests: a.create_topics(r, raise_errors=False), read=False)
            self._remember_configs(answer["topics"])
            for topic in answer["topics"]:
                error = kafka_errors.for_code(topic["error_code"])
                outcome[topic["name"]] = None if error is kafka_errors.NoError else _admin_error(
                    error(topic.get("error_message") or error.__name__))
        return outcome

    def _remember_configs(self, created: list[dict[str, Any]]) -> None:
        now = time.monotonic()
        self._created_configs = {name: known for name, known in self._created_configs.items()
                                 if now - known[0] < CREATED_CONFIGS_FRESH_S}
        self._created_configs.update({topic["name"]: (now, _configs_of(topic["configs"])) for topic in created
                                      if topic["error_code"] == 0 and topic.get("configs")})

    async def _prefer_log_dirs(self, dirs_by_topic: Mapping[str, Mapping[tuple[int, int], str]]) -> None:
        """AlterReplicaLogDirs before CreateTopics (or CreatePartitions): a broker records the directory for a replica
        it does not host yet and creates the replica there (LogManager's preferred log directories, which win over the
        controller's), so nothing moves between directories after (a move right after creation met a Kafka race on
        JBOD brokers: a future replica no thread copied; and a broker killed during such a move left the replica in
        both directories and would not start again). Each replica is answered NotLeaderOrFollower or
        ReplicaNotAvailable, meaning recorded; any failure leaves the choice to the broker, as a cluster without JBOD
        does."""
        by_broker: dict[int, dict[TopicPartitionReplica, str]] = {}
        for name, dirs in dirs_by_topic.items():
            for (p, b), path in dirs.items():
                by_broker.setdefault(b, {})[TopicPartitionReplica(name, p, b)] = path
        if not by_broker:
            return
        # One request per broker, all at once: a broker still creating the replicas of earlier topics answers only
        # once it is done (seconds), and one after the other those waits would add up.
        answers = await asyncio.gather(*(self._prefer_on(broker, wanted) for broker, wanted in by_broker.items()),
                                       return_exceptions=True)
        answer: dict[TopicPartitionReplica, Any] = {}
        for one in answers:
            if isinstance(one, BaseException):
                log.warning("could not send new replicas' log directories to a broker; it chooses", error=str(one))
            else:
                answer.update(one)
        recorded = (kafka_errors.NoError, kafka_errors.NotLeaderForPartitionError, kafka_errors.ReplicaNotAvailableError,
                    kafka_errors.UnknownTopicOrPartitionError)
        if refused := {r: e for r, e in answer.items() if e not in recorded and e is not None}:
            log.warning("log directories not recorded for some new replicas; their brokers choose",
                        replicas=len(refused), error=getattr(next(iter(refused.values())), "__name__", "?"))

    async def _prefer_on(self, broker: int, wanted: dict[TopicPartitionReplica, str]
                         ) -> dict[TopicPartitionReplica, Any]:
        """One broker's AlterReplicaLogDirs, asked again while its answer times out. A broker creating thousands of
        logs (another batch's) answers only once it is done, which took longer than a request's timeout on a busy
        machine; creating the topics without its answer would leave its replicas' directories to a race between the
        request it still holds and the creation."""
        for attempt in range(1, LOG_DIRS_ATTEMPTS + 1):
            try:
                return await self._run(lambda a: a.alter_replica_log_dirs(wanted), read=False)
            except AdminError as exc:
                timed_out = (kafka_errors.RequestTimedOutError, kafka_errors.KafkaTimeoutError)
                if not isinstance(exc.__cause__, timed_out) or attempt == LOG_DIRS_ATTEMPTS:
                    raise
                log.info("a broker has not answered for new replicas' log directories yet; asking again",
                         broker=broker, attempt=attempt, error=str(exc))
        raise AssertionError("unreachable")

    async def delete_topic(self, name: str) -> None:
        await self._run(lambda a: a.delete_topics([name]), read=False)

    async def create_partitions(self, name: str, total: int, assignment: Assignment | None = None,
                                log_dirs: Mapping[tuple[int, int], str] | None = None) -> None:
        if log_dirs:
            await self._prefer_log_dirs({name: log_dirs})
        spec: Any = total if assignment is None else {"count": total, "assignments": [list(r) for r in assignment]}
        await self._run(lambda a: a.create_partitions({name: spec}), read=False)

    async def alter_configs(self, name: str, config: Mapping[str, str | None]) -> None:
        await self._alter(ConfigResourceType.TOPIC, name, config)

    async def alter_list_config(self, name: str, key: str, *, add: Sequence[str] = (),
                                remove: Sequence[str] = ()) -> None:
        # Kafka refuses two operations on one key in one request: the APPEND, then the SUBTRACT.
        if add:
            await self._alter_ops(ConfigResourceType.TOPIC, name, {key: (AlterConfigOp.APPEND, ",".join(add))})
        if remove:
            await self._alter_ops(ConfigResourceType.TOPIC, name, {key: (AlterConfigOp.SUBTRACT, ",".join(remove))})
            # The broker that answers DescribeConfigs may not have applied the change yet (it may not even show the
            # list yet): read until the list shows without the items (absent for the whole settle, someone deleted
            # it, and there is nothing to delete).
            async def read() -> set[str] | None:
                value = (await self.topic_configs([name])).get(name, {}).get(key)
                return None if value is None else {i.strip() for i in value.split(",") if i.strip()}

            left = await self._settle(read, lambda items: items is not None and not items & set(remove))
            if left is not None and not left:
                await self._alter_ops(ConfigResourceType.TOPIC, name, {key: (AlterConfigOp.DELETE, None)})

    async def _alter(self, kind: ConfigResourceType, name: str, config: Mapping[str, str | None]) -> None:
        await self._alter_ops(kind, name, {
            key: (AlterConfigOp.DELETE, None) if value is None else (AlterConfigOp.SET, value)
            for key, value in config.items()})

    async def _alter_ops(self, kind: ConfigResourceType, name: str,
                         ops: Mapping[str, tuple[AlterConfigOp, str | None]]) -> None:
        if not ops:
            return
        resource = ConfigResource(kind, name, ops)
        # raise_on_unknown=False: the broker, not the client's list of dynamic configs, says what it refuses.
        answer = await self._run(lambda a: a.alter_configs([resource], raise_on_unknown=False, incremental=True), read=False)
        # kafka-python answers each resource with "OK" or the error's text.
        for per_kind in answer.values():
            for resource_name, result in per_kind.items():
                if result != "OK":
                    raise _answered(result, f"altering configs of {kind.name.lower()} {resource_name} failed: {result}")

    # -- moving replicas ---------------------------------------------------------------------------------------

    async def reassign_partitions(self, name: str, replicas: Mapping[int, Sequence[int]]) -> None:
        if not replicas:
            return
        moves = {TopicPartition(name, p): list(r) for p, r in replicas.items()}
        _check(await self._run(lambda a: a.alter_partition_reassignments(moves), read=False), "reassign")

    async def list_reassignments(self, names: Sequence[str] | None = None) -> list[Reassignment]:
        answer = await self._run(lambda a: a.list_partition_reassignments())
        wanted = set(names) if names is not None else None
        return sorted((Reassignment(topic=tp.topic, partition=tp.partition, replicas=tuple(r["replicas"]),
                                    adding=tuple(r["adding_replicas"]), removing=tuple(r["removing_replicas"]))
                       for tp, r in answer.items() if wanted is None or tp.topic in wanted),
                      key=lambda r: (r.topic, r.partition))

    async def cancel_reassignments(self, name: str, partitions: Sequence[int]) -> None:
        if not partitions:
            return
        cancels = {TopicPartition(name, p): None for p in partitions}
        answer = await self._run(lambda a: a.alter_partition_reassignments(cancels), read=False)
        # A reassignment that ended meanwhile has nothing left to cancel.
        _check({tp: e for tp, e in answer.items() if e is not kafka_errors.NoReassignmentInProgressError}, "cancel")

    async def alter_replica_log_dirs(self, name: str, dirs: Mapping[tuple[int, int], str]) -> None:
        if not dirs:
            return
        moves = {TopicPartitionReplica(name, p, b): path for (p, b), path in dirs.items()}
        # A replica its broker has not created yet (a topic or reassignment just made) answers ReplicaNotAvailable,
        # or UnknownTopicOrPartition while the broker has not yet learnt of a topic created a moment ago: the same
        # request again succeeds once it exists, as kafka-reassign-partitions.sh retries it. Asking again is safe:
        # it names the same destination.
        not_yet = (kafka_errors.ReplicaNotAvailableError, kafka_errors.UnknownTopicOrPartitionError)
        deadline = asyncio.get_running_loop().time() + self._timeout_s
        while True:
            answer = await self._run(lambda a, m=moves: a.alter_replica_log_dirs(m), read=False)
            pending = {r: moves[r] for r, e in answer.items() if e in not_yet}
            _check({r: e for r, e in answer.items() if r not in pending}, "alter log dir of")
            if not pending:
                return
            if asyncio.get_running_loop().time() > deadline:
                raise ClusterUnavailable(f"replicas not available on their brokers within {self._timeout_s:.0f} s: "
                                 + ", ".join(f"{r.topic}-{r.partition} on {r.broker_id}" for r in pending))
            moves = pending
            await asyncio.sleep(0.2)

    async def describe_log_dirs(self, brokers: Sequence[int] | None = None, *, replicas: bool = True
                                ) -> list[LogDirInfo]:
        if brokers is None:
            # Every broker that can answer: a fenced (stopped) one cannot.
            brokers = [b.id for b in await self.brokers() if b.alive]
        if not brokers:
            return []
        # No topic asked for is an empty list of topics (kafka-python's None lists every partition of the cluster).
        topics: dict[str, list[int]] | None = None if replicas else {}
        answer = await self._run(lambda a: a.describe_log_dirs(topic_partitions=topics, brokers=list(brokers)))
        return sorted(_log_dirs(answer), key=lambda d: (d.broker, d.path))

    # -- brokers' dynamic configs and leadership ---------------------------------------------------------------

    async def broker_configs(self, broker: int) -> dict[str, str]:
        resource = ConfigResource(ConfigResourceType.BROKER, str(broker))
        answer = await self._run(lambda a: a.describe_configs([resource]))
        entries = answer.get("broker", {}).get(str(broker), {})
        return {key: e["value"] for key, e in entries.items()
                if e.get("value") is not None and e.get("config_source") == "DYNAMIC_BROKER_CONFIG"}

    async def alter_broker_configs(self, broker: int, config: Mapping[str, str | None]) -> None:
        await self._alter(ConfigResourceType.BROKER, str(broker), config)

        # Read back from the broker itself (its answers follow its metadata log, so once it shows the change, later
        # reads do too): a caller reading right after this sees what it set, not the value before.
        async def read() -> dict[str, str]:
            return await self.broker_configs(broker)

        await self._settle(read, lambda now: all(now.get(k) == v for k, v in config.items()))

    async def _settle(self, read: Callable[[], Awaitable[T]], done: Callable[[T], bool]) -> T:
        """Read until ``done`` holds of what is read, for ``SETTLE_S`` at most; the last read either way."""
        deadline = asyncio.get_running_loop().time() + min(self._timeout_s, SETTLE_S)
        while True:
            value = await read()
            if done(value) or asyncio.get_running_loop().time() > deadline:
                return value
            await asyncio.sleep(0.1)

    async def elect_preferred_leaders(self, name: str, partitions: Sequence[int] | None = None) -> None:
        if partitions is None:
            described = (await self.describe_topics([name]))[name]
            if described is None:
                raise UnknownTopic(f"topic {name} does not exist")
            partitions = [p.id for p in described.partitions]
        wanted = {name: list(partitions)}
        await self._run(lambda a: a.elect_leaders(PREFERRED_ELECTION, wanted), read=False)

    async def aclose(self) -> None:
        if (client := self._client) is not None:
            await asyncio.to_thread(self._discard, client)
