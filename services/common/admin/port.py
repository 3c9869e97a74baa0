"""The port every service uses to read and change the managed cluster (adapters: ``kafka``, ``simulator``; the
one the settings ask for: ``factory``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

Assignment = Sequence[Sequence[int]]


class AdminError(Exception):
    """The managed cluster refused or failed an admin operation."""


class UnknownTopic(AdminError):
    pass


class TopicAlreadyExists(AdminError):
    pass


class ReassignmentUnsupported(AdminError):
    """This adapter cannot move replicas itself; Cruise Control has to."""


class LogDirsUnsupported(AdminError):
    """This adapter cannot choose log directories; each broker puts a new replica where it likes."""


@dataclass(frozen=True)
class BrokerInfo:
    id: int
    rack: str | None = None
    alive: bool = True


@dataclass(frozen=True)
class PartitionInfo:
    id: int
    replicas: tuple[int, ...]
    leader: int | None = None
    isr: tuple[int, ...] = ()
    log_dirs: tuple[tuple[int, str], ...] = ()  # (broker, log directory), where the adapter can tell


@dataclass(frozen=True)
class TopicDescription:
    name: str
    partitions: tuple[PartitionInfo, ...]
    config: dict[str, str] = field(default_factory=dict)

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


class ClusterAdmin(Protocol):
    async def brokers(self) -> list[BrokerInfo]: ...

    async def list_topics(self) -> dict[str, TopicDescription]:
        """Every non-internal topic, described."""
        ...

    async def describe_topics(self, names: list[str]) -> dict[str, TopicDescription | None]:
        """``None`` for a topic that does not exist."""
        ...

    async def create_topic(
        self, name: str, partitions: int, replication_factor: int, config: dict[str, str] | None = None,
        assignment: Assignment | None = None,
    ) -> None:
        """With ``assignment`` (partition -> replicas, leader first) the replicas go exactly there; without it the
        cluster chooses."""
        ...

    async def delete_topic(self, name: str) -> None: ...

    async def create_partitions(self, name: str, total: int, assignment: Assignment | None = None) -> None:
        """``assignment`` names the replicas of the new partitions only, as Kafka's CreatePartitions does."""
        ...

    async def alter_configs(self, name: str, config: dict[str, str]) -> None:
        """Set these keys; keys not named keep their value."""
        ...

    async def reassign_partitions(self, name: str, replicas: Mapping[int, Sequence[int]]) -> None:
        """Give these partitions exactly these replicas (Kafka's AlterPartitionReassignments). Raises
        ReassignmentUnsupported where the client library lacks it."""
        ...

    async def alter_replica_log_dirs(self, name: str, dirs: Mapping[tuple[int, int], str]) -> None:
        """Put these replicas, (partition, broker) -> log directory, in these directories (Kafka's
        AlterReplicaLogDirs, KIP-113). Raises LogDirsUnsupported where the client library lacks it."""
        ...

    async def aclose(self) -> None: ...
