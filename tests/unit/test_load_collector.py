import asyncio
from datetime import UTC, datetime
from pathlib import Path

import pytest

from events import TOPICS, BrokerLoadSample, LogDirLoadSample, PartitionLoadSample
from services.adapters.cruise_control.models import BrokerLoads, PartitionLoads
from services.common.outbox import MemoryOutbox
from services.common.settings import Settings
from services.load_collector.logic import broker_samples, partition_samples

AT = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)


def test_samples_from_cruise_controls_answers() -> None:
    brokers = BrokerLoads.model_validate({"brokers": [
        {"Broker": 1, "Rack": "/dc1/r1", "BrokerState": "ALIVE", "Replicas": 4, "Leaders": 2, "DiskMB": 400.0,
         "LeaderNwInRate": 100.0, "FollowerNwInRate": 50.0, "NwOutRate": 200.0, "CpuPct": 3.0,
         "DiskState": {"/d1": {"DiskMB": 300.0, "DiskPct": 1.0, "NumLeaderReplicas": 2, "NumReplicas": 3},
                       "/d0": {"DiskMB": 100.0, "DiskPct": 0.5, "NumLeaderReplicas": 0, "NumReplicas": 1}}},
        {"Broker": 2, "Rack": "/dc1/r2", "BrokerState": "DEAD", "Replicas": 4}]})
    partitions = PartitionLoads.model_validate({"records": [
        {"topic": "t", "partition": 0, "leader": 1, "followers": [2], "cpu": 0, "networkInbound": 100,
         "networkOutbound": 200, "disk": 300, "msg_in": 100}]})
    out = broker_samples(brokers, AT) + partition_samples(partitions.records, AT)
    broker, *dirs, partition = out
    assert isinstance(broker, BrokerLoadSample) and broker.bytes_in_kb_s == 150.0 and broker.rack == "/dc1/r1"
    assert [d.log_dir for d in dirs] == ["/d0", "/d1"] and all(isinstance(d, LogDirLoadSample) for d in dirs)
    assert isinstance(partition, PartitionLoadSample) and partition.key == "partition:t:0"
    assert all(e.sampled_at == AT for e in out)
    assert len(broker_samples(brokers, AT)) == 3, "dead brokers are left out"


def test_an_offline_log_directory_is_sampled_as_offline_from_the_real_cruise_controls_answer() -> None:
    """Recorded from the real Cruise Control with broker 5's data-1 failed: its DiskMB and DiskPct are "DEAD"."""
    import json
    from pathlib import Path

    recorded = Path(__file__).resolve().parents[3] / "shared" / "reference" / "cruise-control-real" / "responses"
    answer = json.loads((recorded / "load-disk-offline-real.json").read_text())["body"]
    brokers = BrokerLoads.model_validate(answer)
    dirs = {(d.broker, d.log_dir): d for d in broker_samples(brokers, AT) if isinstance(d, LogDirLoadSample)}
    failed = dirs[(5, "/var/kafka/broker-5/data-1")]
    assert not failed.online and failed.disk_mb == 0.0 and failed.disk_pct is None
    assert sum(1 for d in dirs.values() if d.online) == 9, "every other directory keeps its figures"
    assert dirs[(1, "/var/kafka/broker-1/data-0")].disk_mb > 0


class _Unacknowledged(MemoryOutbox):
    """Counts the records published and not acknowledged yet; acknowledges them a moment later, as the bus does."""

    def __init__(self) -> None:
        super().__init__()
        self.waiting = self.most_waiting = 0

    async def publish(self, topic, event, **kwargs):  # noqa: ANN001, ANN003, ANN201
        self.put(topic, event, **kwargs)
        self.waiting += 1
        self.most_waiting = max(self.most_waiting, self.waiting)
        acknowledged = asyncio.get_running_loop().create_future()

        def acknowledge() -> None:
            self.waiting -= 1
            acknowledged.set_result(None)
        asyncio.get_running_loop().call_later(0.001, acknowledge)
        return acknowledged


class _CruiseControl:
    can_ask_now = True

    def __init__(self, partitions: int) -> None:
        self.partitions = partitions

    async def load(self, **_: object) -> BrokerLoads:
        return BrokerLoads.model_validate({"brokers": [{"Broker": 1, "BrokerState": "ALIVE", "Replicas": 1}]})

    async def partition_load(self) -> PartitionLoads:
        return PartitionLoads.model_validate({"records": [
            {"topic": f"t{i}", "partition": 0, "leader": 1} for i in range(self.partitions)]})


async def test_the_partitions_samples_go_to_the_bus_a_chunk_at_a_time(monkeypatch: pytest.MonkeyPatch,
                                                                      tmp_path: Path) -> None:
    """Issue 52: at 100,000 partitions, every sample made and handed to the bus at once took hundreds of MB that the
    load collector kept after. Each chunk is on the bus before the next is made; every sample is published."""
    from services.load_collector import app

    monkeypatch.setattr(app, "PUBLISH_CHUNK", 4)
    outbox = _Unacknowledged()
    service = app.LoadCollectorService(Settings(data_dir=tmp_path), cruise_control=_CruiseControl(10),  # type: ignore[arg-type]
                                       outbox=outbox)
    await service.collect()
    sampled = outbox.on(TOPICS.load_samples)
    assert sorted(s.topic for s in sampled if isinstance(s, PartitionLoadSample)) == sorted(f"t{i}" for i in range(10))
    assert service.published == len(sampled) == 11
    assert outbox.most_waiting == 4
