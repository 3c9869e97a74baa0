"""From Cruise Control's load answers to load samples. Pure."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from events import BrokerLoadSample, LogDirLoadSample, PartitionLoadSample
from events.models import Event
from services.adapters.cruise_control.models import BrokerLoads, PartitionLoad


def broker_samples(brokers: BrokerLoads, sampled_at: datetime) -> list[Event]:
    """One sample per alive broker and per log directory of it (an offline one as such), all stamped ``sampled_at``
    (the event time the aggregates window by)."""
    out: list[Event] = []
    for b in brokers.brokers:
        if not b.alive:
            continue  # a dead broker reports nothing worth averaging
        out.append(BrokerLoadSample(
            broker=b.broker, rack=b.rack or None, sampled_at=sampled_at,
            bytes_in_kb_s=(b.leader_nw_in_rate or 0.0) + (b.follower_nw_in_rate or 0.0),
            bytes_out_kb_s=b.nw_out_rate or 0.0, disk_mb=b.disk_mb, replicas=b.replicas, leaders=b.leaders,
            cpu_pct=b.cpu_pct))
        for directory, d in sorted(b.disk_state.items()):
            out.append(LogDirLoadSample(
                broker=b.broker, rack=b.rack or None, log_dir=directory, sampled_at=sampled_at, online=d.online,
                disk_mb=d.disk_mb or 0.0, disk_pct=d.disk_pct, replicas=d.replicas, leaders=d.leaders))
    return out


def partition_samples(records: Sequence[PartitionLoad], sampled_at: datetime) -> list[Event]:
    """One sample per partition."""
    return [PartitionLoadSample(
        topic=p.topic, partition=p.partition, leader=p.leader, followers=p.followers, sampled_at=sampled_at,
        bytes_in_kb_s=p.network_inbound, bytes_out_kb_s=p.network_outbound, disk_mb=p.disk, msg_in_s=p.msg_in)
        for p in records]
