from datetime import UTC, datetime

from events import BrokerLoadSample, LogDirLoadSample, PartitionLoadSample
from services.common.cruise_control.models import BrokerLoads, PartitionLoads
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
