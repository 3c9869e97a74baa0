"""Ballast's nearest-replica selector loaded by the real brokers (replica.selector.class): a consumer with
``client.rack`` is served by its nearest in-sync replica, and by the leader once that replica is gone. Where it
fetches from is what the consumer itself reports (librdkafka's statistics: the broker each partition is being
fetched from), not an assumption."""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, ConfigResource

from services.adapters.admin.kafka import KafkaClusterAdmin
from services.local.kafka_cluster import SELECTOR_CLASS, LocalKafka
from tests.kafka.conftest import eventually

# The local cluster: 1 /dc1/r1, 2 /dc1/r2, 3 /dc2/r1, 4 /dc2/r2.


class FetchWatcher:
    """A consumer that keeps reading ``topic`` and remembers, from its statistics, which broker partition 0 is being
    fetched from."""

    def __init__(self, bootstrap: str, topic: str, rack: str) -> None:
        self.fetching_from: int | None = None
        self.leader: int | None = None
        self.records = 0
        self._stop = threading.Event()
        self._consumer = Consumer({
            "bootstrap.servers": bootstrap, "group.id": f"follower-fetching-{uuid.uuid4().hex[:8]}",
            "client.rack": rack, "auto.offset.reset": "earliest", "enable.auto.commit": False,
            "statistics.interval.ms": 250, "stats_cb": self._stats, "fetch.wait.max.ms": 100,
            "topic.metadata.refresh.interval.ms": 1000})
        self._consumer.subscribe([topic])
        self._topic = topic
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _stats(self, raw: str) -> None:
        partition = json.loads(raw).get("topics", {}).get(self._topic, {}).get("partitions", {}).get("0")
        if partition:
            self.fetching_from, self.leader = partition.get("broker"), partition.get("leader")

    def _run(self) -> None:
        while not self._stop.is_set():
            message = self._consumer.poll(0.1)
            if message is not None and not message.error():
                self.records += 1

    def close(self) -> None:
        self._stop.set()
        self._thread.join(10)
        self._consumer.close()


@contextmanager
def watching(kafka: LocalKafka, topic: str, rack: str) -> Iterator[FetchWatcher]:
    watcher = FetchWatcher(kafka.bootstrap_servers, topic, rack)
    try:
        yield watcher
    finally:
        watcher.close()


def _produce(kafka: LocalKafka, topic: str, count: int) -> None:
    producer = Producer({"bootstrap.servers": kafka.bootstrap_servers, "acks": "all"})
    for i in range(count):
        producer.produce(topic, f"record {i}".encode(), partition=0)
    assert producer.flush(30) == 0


async def _fetching_from(watcher: FetchWatcher, broker: int) -> bool:
    return watcher.fetching_from == broker and watcher.records > 0


async def test_a_rack_aware_consumer_reads_from_its_nearest_replica_and_falls_back_to_the_leader(
        kafka: LocalKafka, admin: KafkaClusterAdmin, name: str) -> None:
    client = AdminClient({"bootstrap.servers": kafka.bootstrap_servers})
    described = client.describe_configs([ConfigResource(ConfigResource.Type.BROKER, "3")])
    entries = next(iter(described.values())).result(30)
    assert entries["replica.selector.class"].value == SELECTOR_CLASS, "the brokers run Ballast's selector"
    # Kafka's own RackAwareReplicaSelector would serve /dc2/r1/h7 from the leader: no replica's rack equals it.
    # Leader 1 in /dc1/r1, followers 3 in /dc2/r1 and 4 in /dc2/r2.
    await admin.create_topic(name, 0, 0, assignment=[[1, 3, 4]])

    async def in_sync() -> bool:
        described = (await admin.describe_topics([name]))[name]
        return described is not None and set(described.partitions[0].isr) == {1, 3, 4}

    await eventually(in_sync, "all three replicas in sync")
    _produce(kafka, name, 200)

    with watching(kafka, name, "/dc2/r1/h7") as near_3, watching(kafka, name, "/dc2/r2/h1") as near_4, \
            watching(kafka, name, "/dc1/r2/h1") as near_leader_dc:
        await eventually(lambda: _fetching_from(near_3, 3), "the /dc2/r1 consumer fetching from broker 3", 60)
        await eventually(lambda: _fetching_from(near_4, 4), "the /dc2/r2 consumer fetching from broker 4", 60)
        # /dc1/r2: no replica in its rack; the leader's data centre is the nearest, so the leader serves.
        await eventually(lambda: _fetching_from(near_leader_dc, 1), "the /dc1/r2 consumer fetching from the leader")
        assert near_3.leader == near_4.leader == 1

        # Broker 3 stops: the consumer near it is served by the next nearest, broker 4 (same data centre).
        kafka.stop_broker(3)
        before = near_3.records
        _produce(kafka, name, 50)
        await eventually(lambda: _fetching_from(near_3, 4), "the /dc2/r1 consumer moved to broker 4", 90)
        await eventually(_grew(near_3, before), "records still arriving")
        # And with broker 4 stopped too, only the leader is left.
        kafka.stop_broker(4)
        before = near_3.records
        _produce(kafka, name, 50)
        await eventually(lambda: _fetching_from(near_3, 1), "the /dc2/r1 consumer back on the leader", 90)
        await eventually(_grew(near_3, before), "records still arriving from the leader")


def _grew(watcher: FetchWatcher, before: int):  # noqa: ANN202 - a check for eventually
    async def check() -> bool:
        return watcher.records > before
    return check
