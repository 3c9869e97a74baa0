"""Cluster-admin adapter for a real Kafka cluster, on confluent-kafka's AdminClient."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from concurrent.futures import Future
from typing import Any

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewPartitions,
    NewTopic,
    ResourceType,
)

from services.common.admin.port import (
    AdminError,
    Assignment,
    BrokerInfo,
    LogDirsUnsupported,
    PartitionInfo,
    ReassignmentUnsupported,
    TopicAlreadyExists,
    TopicDescription,
    UnknownTopic,
)


async def _wait(future: Future[Any]) -> Any:
    try:
        return await asyncio.wrap_future(future)
    except KafkaException as exc:
        error: KafkaError = exc.args[0]
        if error.code() == KafkaError.TOPIC_ALREADY_EXISTS:
            raise TopicAlreadyExists(error.str()) from None
        if error.code() == KafkaError.UNKNOWN_TOPIC_OR_PART:
            raise UnknownTopic(error.str()) from None
        raise AdminError(error.str()) from None


class KafkaClusterAdmin:
    def __init__(self, config: dict[str, str], timeout_s: float = 30.0) -> None:
        self._admin = AdminClient(config)
        self._timeout = timeout_s

    async def brokers(self) -> list[BrokerInfo]:
        metadata = await asyncio.to_thread(self._admin.list_topics, timeout=self._timeout)
        # Metadata lists only live brokers; racks come from describe_cluster.
        cluster = await _wait(self._admin.describe_cluster(request_timeout=self._timeout))
        racks = {node.id: node.rack for node in cluster.nodes}
        return [BrokerInfo(id=b, rack=racks.get(b) or None, alive=True) for b in sorted(metadata.brokers)]

    async def list_topics(self) -> dict[str, TopicDescription]:
        metadata = await asyncio.to_thread(self._admin.list_topics, timeout=self._timeout)
        names = [name for name in metadata.topics if not name.startswith("__")]
        described = await self.describe_topics(names)
        return {name: d for name, d in described.items() if d is not None}

    async def describe_topics(self, names: list[str]) -> dict[str, TopicDescription | None]:
        if not names:
            return {}
        metadata = await asyncio.to_thread(self._admin.list_topics, timeout=self._timeout)
        result: dict[str, TopicDescription | None] = {}
        for name in names:
            topic = metadata.topics.get(name)
            if topic is None or topic.error is not None:
                result[name] = None
                continue
            partitions = tuple(
                PartitionInfo(id=p.id, replicas=tuple(p.replicas), leader=p.leader, isr=tuple(p.isrs))
                for p in sorted(topic.partitions.values(), key=lambda p: p.id)
            )
            result[name] = TopicDescription(name=name, partitions=partitions, config=await self._configs(name))
        return result

    async def _configs(self, name: str) -> dict[str, str]:
        resource = ConfigResource(ResourceType.TOPIC, name)
        futures = self._admin.describe_configs([resource], request_timeout=self._timeout)
        try:
            entries = await _wait(futures[resource])
        except AdminError:
            return {}
        return {key: entry.value for key, entry in entries.items() if entry.value is not None and not entry.is_default}

    async def create_topic(
        self, name: str, partitions: int, replication_factor: int, config: dict[str, str] | None = None,
        assignment: Assignment | None = None,
    ) -> None:
        if assignment is not None:
            # With an assignment librdkafka wants the partition count and no replication factor.
            new = NewTopic(name, num_partitions=len(assignment), replica_assignment=[list(r) for r in assignment],
                           config=config or {})
        else:
            new = NewTopic(name, num_partitions=partitions, replication_factor=replication_factor, config=config or {})
        futures = self._admin.create_topics([new], request_timeout=self._timeout)
        await _wait(futures[name])

    async def delete_topic(self, name: str) -> None:
        futures = self._admin.delete_topics([name], request_timeout=self._timeout)
        await _wait(futures[name])

    async def create_partitions(self, name: str, total: int, assignment: Assignment | None = None) -> None:
        new = NewPartitions(name, total, replica_assignment=[list(r) for r in assignment] if assignment else None)
        futures = self._admin.create_partitions([new], request_timeout=self._timeout)
        await _wait(futures[name])

    async def alter_configs(self, name: str, config: dict[str, str]) -> None:
        if not config:
            return
        entries = [
            ConfigEntry(key, value, incremental_operation=AlterConfigOpType.SET) for key, value in config.items()
        ]
        resource = ConfigResource(ResourceType.TOPIC, name, incremental_configs=entries)
        futures = self._admin.incremental_alter_configs([resource], request_timeout=self._timeout)
        await _wait(futures[resource])

    async def reassign_partitions(self, name: str, replicas: Mapping[int, Sequence[int]]) -> None:
        raise ReassignmentUnsupported(
            "confluent-kafka has no AlterPartitionReassignments; replicas are added through Cruise Control instead")

    async def alter_replica_log_dirs(self, name: str, dirs: Mapping[tuple[int, int], str]) -> None:
        raise LogDirsUnsupported(
            "confluent-kafka has no AlterReplicaLogDirs; each broker puts a new replica in its directory with the "
            "fewest partitions")

    async def aclose(self) -> None:
        return None
