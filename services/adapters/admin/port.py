"""The port every service uses to read and change the managed cluster (adapters: ``kafka``, ``simulator``; the
one the settings ask for: ``factory``).

Its failures, sorted into temporary and permanent ones, once, here; the adapters only say which class a failure is.
Every class says which it is (``temporary``), once; ``AdminError`` itself is never raised. Temporary
(``ClusterUnavailable``): the cluster could not be reached or did not answer in time, answered with an error Kafka
itself calls retriable (NotController, LeaderNotAvailable, RequestTimedOut, NotEnoughReplicas, ...), or with one
that only says it is changing under the request (a broker down or not known yet, another reassignment of the
partition running): the same request may succeed in a moment. Permanent (``OperationRefused`` and its kinds): the
cluster refused the operation itself (InvalidReplicationFactor, InvalidPartitions, PolicyViolation,
InvalidConfiguration, an authorization failure, a topic that does not exist or already does, an operation the
adapter cannot do on its cluster), or answered something the adapter cannot read (``UnreadableAnswer``): asking the
same again gets the same answer.

What follows from each kind: the topic reconciler tries a temporary failure again at its next resync; a permanent
one keeps the refusal's message in the topic's status and is asked again only after the one backoff
(``services.common.retry.backoff``, as Cruise Control's permanent refusals are), in case the cluster changed (ACLs
granted, a policy relaxed), or at once when the topic's spec changes (``services/topic_reconciler/refusals.py``). A
read the services could not make is made again at their next look, whatever the kind: reading changes nothing.
"""

from __future__ import annotations

import functools

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from events.topic_configs import DEFAULT_PARTITIONS, DEFAULT_REPLICATION_FACTOR, KAFKA_TOPIC_DEFAULTS

Assignment = Sequence[Sequence[int]]


# The intra-broker throttle: bytes per second a broker copies between its log directories (KIP-113).
INTRA_BROKER_THROTTLE = "replica.alter.log.dirs.io.max.bytes.per.second"
# A broker's cordoned log directories (KIP-1066, Kafka 4.3): a comma-separated list of its log.dirs, or ``*`` for all.
CORDONED_LOG_DIRS = "cordoned.log.dirs"


class AdminError(Exception):
    """The managed cluster refused or failed an admin operation (the module's policy says what follows)."""

    # Decided by each subclass (tests/unit/test_admin_errors.py checks that every one does).
    temporary: bool


class ClusterUnavailable(AdminError):
    """The cluster could not be reached, did not answer in time, or answered with an error Kafka calls retriable."""

    temporary = True


class OperationRefused(AdminError):
    """The cluster refused the operation itself (invalid replication factor or partitions, a policy, a config,
    authorization), or the client could not make it: the same request gets the same answer."""

    temporary = False


class UnknownTopic(OperationRefused):
    temporary = False


class TopicAlreadyExists(OperationRefused):
    temporary = False


class Unsupported(OperationRefused):
    """This adapter cannot do this operation on its cluster."""

    temporary = False


class UnreadableAnswer(OperationRefused):
    """The cluster answered, but not in a shape the adapter reads (not JSON, an error it cannot name): asking again
    gets the same answer (a version the adapter does not know, a proxy in between)."""

    temporary = False


@dataclass(frozen=True, slots=True)
class BrokerInfo:
    id: int
    rack: str | None = None
    alive: bool = True


@dataclass(frozen=True, slots=True)
class ReplicaInfo:
    """Where one replica of a partition lives, as far as the adapter can tell."""

    broker: int
    rack: str | None = None
    log_dir: str | None = None
    size_bytes: int | None = None
    future_log_dir: str | None = None  # the directory it is being moved to (AlterReplicaLogDirs in progress)


@functools.cache
def replica_on(broker: int, rack: str | None) -> ReplicaInfo:
    """A replica whose directory and size are unknown (not asked for): one shared instance per broker and rack. The
    topic reconciler keeps a description of every topic it manages, one of these per replica."""
    return ReplicaInfo(broker=broker, rack=rack)


@dataclass(frozen=True, slots=True)
class PartitionInfo:
    id: int
    replicas: tuple[int, ...]
    leader: int | None = None
    isr: tuple[int, ...] = ()
    replica_info: tuple[ReplicaInfo, ...] = ()  # per replica, in ``replicas`` order, where the adapter can tell
    offline: tuple[int, ...] = ()  # replicas on a dead broker or a failed log directory (KIP-112), where known

    @property
    def log_dirs(self) -> tuple[tuple[int, str], ...]:
        """(broker, log directory) of every replica whose directory is known."""
        return tuple(sorted((r.broker, r.log_dir) for r in self.replica_info if r.log_dir is not None))


@dataclass(frozen=True)
class Reassignment:
    """A partition reassignment in progress (ListPartitionReassignments)."""

    topic: str
    partition: int
    replicas: tuple[int, ...]
    adding: tuple[int, ...] = ()
    removing: tuple[int, ...] = ()


@dataclass(frozen=True)
class LogDirReplica:
    topic: str
    partition: int
    size_bytes: int
    offset_lag: int = 0
    is_future: bool = False  # the copy a move between directories is writing


@dataclass(frozen=True)
class LogDirInfo:
    """One log directory of one broker (DescribeLogDirs)."""

    broker: int
    path: str
    error: str | None = None  # e.g. KAFKA_STORAGE_ERROR for a failed disk; None when online
    total_bytes: int | None = None  # where Kafka gives them (4.3+)
    usable_bytes: int | None = None
    replicas: tuple[LogDirReplica, ...] = ()
    # Cordoned (KIP-1066, Kafka 4.3: the broker config ``cordoned.log.dirs``): it takes no new replica.
    cordoned: bool = False

    @property
    def online(self) -> bool:
        return self.error is None

    @property
    def size_bytes(self) -> int:
        return sum(r.size_bytes for r in self.replicas if not r.is_future)


@dataclass(frozen=True, slots=True)
class TopicDescription:
    name: str
    partitions: tuple[PartitionInfo, ...]
    # Every config that differs from Kafka's built-in default: the topic's own and what it inherits from the brokers.
    config: dict[str, str] = field(default_factory=dict)
    # Which of them are set on the topic itself (None: all of them, as the simulator keeps only those).
    overrides: frozenset[str] | None = None

    @property
    def own_config(self) -> dict[str, str]:
        """The configs set on the topic itself (kafka-configs.sh --describe --entity-type topics)."""
        return {k: v for k, v in self.config.items() if self.overrides is None or k in self.overrides}

    @property
    def replication_factor(self) -> int:
        # During a change partitions may briefly differ; the topic's RF is what most partitions have.
        if not self.partitions:
            return 0
        counts = [len(p.replicas) for p in self.partitions]
        return max(set(counts), key=counts.count)

    @property
    def partition_count(self) -> int:
        return len(self.partitions)


@dataclass(frozen=True)
class NewTopic:
    """A topic to create with exactly these replicas (partition -> brokers, leader first) and, where chosen, these
    log directories for them ((partition, broker) -> directory)."""

    name: str
    assignment: tuple[tuple[int, ...], ...]
    config: Mapping[str, str] = field(default_factory=dict)
    log_dirs: Mapping[tuple[int, int], str] = field(default_factory=dict)


# Metadata records per CreateTopics request: Kafka's controller refuses a request that would write more
# ("Unable to perform excessively large batch operation": QuorumController.MAX_RECORDS_PER_USER_OP).
RECORDS_PER_REQUEST = 10_000


def records(topic: NewTopic) -> int:
    """The metadata records creating ``topic`` writes: the topic's, one per partition, one per config."""
    return 1 + len(topic.assignment) + len(topic.config)


def in_requests(topics: Sequence[NewTopic], limit: int = RECORDS_PER_REQUEST) -> list[list[NewTopic]]:
    """The topics in consecutive requests of at most ``limit`` metadata records each (a topic larger than that alone,
    for the cluster to refuse or take)."""
    requests: list[list[NewTopic]] = []
    size = 0
    for topic in topics:
        if not requests or size + records(topic) > limit:
            requests.append([])
            size = 0
        requests[-1].append(topic)
        size += records(topic)
    return requests


@dataclass(frozen=True)
class TopicDefaults:
    """What the cluster gives a topic created without partitions or a replication factor (the brokers'
    ``num.partitions`` and ``default.replication.factor``)."""

    partitions: int
    replication_factor: int


def topic_defaults(configs: Mapping[str, str]) -> TopicDefaults:
    """From a broker's configs (Kafka's own values where it has none)."""
    merged = {**KAFKA_TOPIC_DEFAULTS, **configs}
    try:
        return TopicDefaults(int(merged[DEFAULT_PARTITIONS]), int(merged[DEFAULT_REPLICATION_FACTOR]))
    except ValueError:
        raise UnreadableAnswer(f"the brokers' topic defaults are not numbers: {DEFAULT_PARTITIONS}="
                               f"{merged[DEFAULT_PARTITIONS]!r}, {DEFAULT_REPLICATION_FACTOR}="
                               f"{merged[DEFAULT_REPLICATION_FACTOR]!r}") from None


class ClusterAdmin(Protocol):
    async def brokers(self) -> list[BrokerInfo]: ...

    async def topic_defaults(self) -> TopicDefaults:
        """What a topic created without partitions or a replication factor gets (Strimzi's KafkaTopic may leave them
        to the cluster)."""
        ...

    async def list_topics(self, include_internal: bool = False) -> dict[str, TopicDescription]:
        """Every topic, described; internal ones (``__consumer_offsets``, ...) only with ``include_internal``."""
        ...

    async def describe_topics(self, names: list[str], *, replica_dirs: bool = True
                              ) -> dict[str, TopicDescription | None]:
        """``None`` for a topic that does not exist. ``replica_dirs``: with each replica's log directory and size
        (on a real Kafka, DescribeLogDirs of every broker); without, those are None."""
        ...

    async def assignments(self) -> dict[str, list[list[int]]]:
        """Every topic that is not internal: its partitions' replicas, in partition order. What placement counts, read
        from the metadata alone (``list_topics`` also reads every topic's configs and every broker's directories)."""
        ...

    async def partition_states(self) -> dict[str, tuple[PartitionInfo, ...]]:
        """Every topic, internal ones included: its partitions' replicas, leader, ISR and offline replicas, from the
        metadata alone (no configs, no log directories; ``replica_info`` is empty)."""
        ...

    async def topic_configs(self, names: Sequence[str]) -> dict[str, dict[str, str]]:
        """The configs set on each of these topics itself (a topic that does not exist is left out)."""
        ...

    async def create_topic(
        self, name: str, partitions: int, replication_factor: int, config: dict[str, str] | None = None,
        assignment: Assignment | None = None,
    ) -> None:
        """With ``assignment`` (partition -> replicas, leader first) the replicas go exactly there; without it the
        cluster chooses."""
        ...

    async def create_topics(self, topics: Sequence[NewTopic], *,
                            first: Callable[[], Awaitable[None]] | None = None) -> dict[str, AdminError | None]:
        """Create these topics as the cluster's batched CreateTopics does, each replica in its chosen log directory
        from the start where the cluster allows it (no move after). Each topic's outcome: None when created, else its
        own error (the port's kinds); a failure of the whole request raises. ``first``: what must be done before the
        request goes, run beside the adapter's own preparation (the directories sent ahead); when it raises, nothing
        is created and its error is raised."""
        ...

    async def delete_topic(self, name: str) -> None: ...

    async def create_partitions(self, name: str, total: int, assignment: Assignment | None = None,
                                log_dirs: Mapping[tuple[int, int], str] | None = None) -> None:
        """``assignment`` names the replicas of the new partitions only, as Kafka's CreatePartitions does;
        ``log_dirs``: (partition, broker) -> the directory each new replica is created in (as ``NewTopic.log_dirs``)."""
        ...

    async def alter_configs(self, name: str, config: Mapping[str, str | None]) -> None:
        """Set these keys (``None`` deletes one, back to its default); keys not named keep their value."""
        ...

    async def alter_list_config(self, name: str, key: str, *, add: Sequence[str] = (),
                                remove: Sequence[str] = ()) -> None:
        """Add items to, then take items out of, one LIST config of the topic (Kafka's incremental APPEND and SUBTRACT:
        items others put there meanwhile stay). A list left empty is deleted."""
        ...

    async def reassign_partitions(self, name: str, replicas: Mapping[int, Sequence[int]]) -> None:
        """Give these partitions exactly these replicas (Kafka's AlterPartitionReassignments)."""
        ...

    async def alter_replica_log_dirs(self, name: str, dirs: Mapping[tuple[int, int], str]) -> None:
        """Put these replicas, (partition, broker) -> log directory, in these directories (Kafka's
        AlterReplicaLogDirs, KIP-113)."""
        ...

    async def list_reassignments(self, names: Sequence[str] | None = None) -> list[Reassignment]:
        """Reassignments in progress, of these topics or of all (Kafka's ListPartitionReassignments)."""
        ...

    async def cancel_reassignments(self, name: str, partitions: Sequence[int]) -> None:
        """Cancel these partitions' reassignments in progress: they keep the replicas they had before it."""
        ...

    async def describe_log_dirs(self, brokers: Sequence[int] | None = None, *, replicas: bool = True
                                ) -> list[LogDirInfo]:
        """Every log directory of these brokers (of all when ``None``), with the replicas in it (``replicas``; without
        them, a small answer: whether each is online and cordoned)."""
        ...

    async def broker_configs(self, broker: int) -> dict[str, str]:
        """The broker's dynamic configs set on it (not defaults or static ones)."""
        ...

    async def alter_broker_configs(self, broker: int, config: Mapping[str, str | None]) -> None:
        """Set these dynamic broker configs; ``None`` deletes one (back to its default). Returns once the broker
        shows them (for a few seconds at most), so that a read right after sees the change."""
        ...

    async def elect_preferred_leaders(self, name: str, partitions: Sequence[int] | None = None) -> None:
        """Make each partition's first replica its leader where it is in sync (preferred leader election)."""
        ...

    async def aclose(self) -> None: ...


async def answering_log_dirs(admin: ClusterAdmin, brokers: Sequence[int], *, replicas: bool = True
                             ) -> list[LogDirInfo]:
    """The directories of those of ``brokers`` that answer: one that does not (it died since it was listed alive: it
    stays listed until its session lapses) is left out rather than failing the whole answer."""
    try:
        return await admin.describe_log_dirs(brokers, replicas=replicas)
    except AdminError:
        found: list[LogDirInfo] = []
        for broker in brokers:
            try:
                found.extend(await admin.describe_log_dirs([broker], replicas=replicas))
            except AdminError:
                continue
        return found
