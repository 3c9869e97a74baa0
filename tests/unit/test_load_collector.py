from datetime import UTC, datetime

from events import BrokerLoadSample, LogDirLoadSample, PartitionLoadSample
from services.adapters.cruise_control.models import BrokerLoads, PartitionLoads
from services.load_collector.logic import samples

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
    out = samples(brokers, partitions, AT)
    broker, *dirs, partition = out
    assert isinstance(broker, BrokerLoadSample) and broker.bytes_in_kb_s == 150.0 and broker.rack == "/dc1/r1"
    assert [d.log_dir for d in dirs] == ["/d0", "/d1"] and all(isinstance(d, LogDirLoadSample) for d in dirs)
    assert isinstance(partition, PartitionLoadSample) and partition.key == "partition:t:0"
    assert all(e.sampled_at == AT for e in out)
    assert len(samples(brokers, None, AT)) == 3, "dead brokers and, when off, partitions are left out"


def test_an_offline_log_directory_is_sampled_as_offline_from_the_real_cruise_controls_answer() -> None:
    """Recorded from the real Cruise Control with broker 5's data-1 failed: its DiskMB and DiskPct are "DEAD"."""
    import json
    from pathlib import Path

    recorded = Path(__file__).resolve().parents[3] / "shared" / "reference" / "cruise-control-real" / "responses"
    answer = json.loads((recorded / "load-disk-offline-real.json").read_text())["body"]
    brokers = BrokerLoads.model_validate(answer)
    dirs = {(d.broker, d.log_dir): d for d in samples(brokers, None, AT) if isinstance(d, LogDirLoadSample)}
    failed = dirs[(5, "/var/kafka/broker-5/data-1")]
    assert not failed.online and failed.disk_mb == 0.0 and failed.disk_pct is None
    assert sum(1 for d in dirs.values() if d.online) == 9, "every other directory keeps its figures"
    assert dirs[(1, "/var/kafka/broker-1/data-0")].disk_mb > 0
