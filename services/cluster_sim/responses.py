"""Cruise Control's JSON shapes, built from the simulated cluster. Validated against Cruise Control's own OpenAPI
description in the tests, so every required field is here even where the simulator has nothing better than 0."""

from __future__ import annotations

import re
import statistics
from collections.abc import Iterable
from typing import Any

from services.cluster_sim.load import LoadModel
from services.cluster_sim.model import BROKER_DISK_CAPACITY_MB, Cluster, IntraBrokerMove, ReplicaMove

_ANOMALY_TYPES = ("GOAL_VIOLATION", "BROKER_FAILURE", "METRIC_ANOMALY", "DISK_FAILURE", "TOPIC_ANOMALY",
                  "MAINTENANCE_EVENT")


def error_body(method: str, endpoint: str, cause: str, exception: str) -> dict[str, Any]:
    """Cruise Control's error wrapping: 'Error processing POST request '/x' due to: '<exception>: <cause>'.'"""
    message = f"Error processing {method} request '/{endpoint}' due to: '{exception}: {cause}'."
    stack = f"{exception}: {cause}\n\tat com.linkedin.kafka.cruisecontrol.servlet (simulated)"
    return {"errorMessage": message, "stackTrace": stack, "version": 1}


def _broker_stats(cluster: Cluster, moves: list[ReplicaMove] | None = None) -> dict[str, Any]:
    """Per-broker load now, or after ``moves`` (replicas and disk follow each move; its first replica leads)."""
    replicas = cluster.replica_counts()
    leaders = cluster.leader_counts()
    disk: dict[int, float] = {b: 0.0 for b in cluster.brokers}
    for topic in cluster.topics.values():
        for p in topic.partitions:
            for b in p.replicas:
                disk[b] += p.size_mb
    for move in moves or ():
        for b in move.old_replicas:
            replicas[b] -= 1
            disk[b] -= move.size_mb
        for b in move.new_replicas:
            replicas[b] += 1
            disk[b] += move.size_mb
        if move.old_replicas[:1] != move.new_replicas[:1]:
            current = cluster.topics[move.topic].partitions[move.partition].leader
            if current is not None:
                leaders[current] -= 1
            leaders[move.new_replicas[0]] += 1
    brokers, hosts = [], []
    for b in sorted(cluster.brokers.values(), key=lambda x: x.id):
        row = {
            "Host": f"broker-{b.id}.sim.local",
            "Broker": b.id,
            "Rack": b.rack or "",
            "BrokerState": "ALIVE" if b.alive else "DEAD",
            "DiskMB": disk[b.id],
            "DiskPct": round(100.0 * disk[b.id] / BROKER_DISK_CAPACITY_MB, 4),
            "CpuPct": 0.0,
            "LeaderNwInRate": 0.0,
            "FollowerNwInRate": 0.0,
            "NwOutRate": 0.0,
            "PnwOutRate": 0.0,
            "Replicas": replicas[b.id],
            "Leaders": leaders[b.id],
            "DiskCapacityMB": BROKER_DISK_CAPACITY_MB,
            "NetworkInCapacity": 50_000.0,
            "NetworkOutCapacity": 50_000.0,
            "NumCore": 8.0,
        }
        brokers.append(row)
        hosts.append({k: v for k, v in row.items() if k not in ("Broker", "BrokerState")})
    return {"hosts": hosts, "brokers": brokers}


def broker_load(cluster: Cluster, model: LoadModel, *, disk_info: bool = False) -> dict[str, Any]:
    """GET load: per-broker and per-host load; replica, leader and disk figures from the cluster model, rates and
    CPU from the load model, and with ``populate_disk_info`` each log directory's share (DiskState)."""
    stats = _broker_stats(cluster)
    by_broker = model.brokers()
    for row in stats["brokers"]:
        load = by_broker.get(row["Broker"])
        if load is None or row["BrokerState"] != "ALIVE":
            continue
        row.update({"LeaderNwInRate": load["leader_in"], "FollowerNwInRate": load["follower_in"],
                    "NwOutRate": load["out"], "PnwOutRate": load["out"], "CpuPct": load["cpu_pct"]})
        if disk_info:
            broker = cluster.brokers[row["Broker"]]
            row["DiskState"] = {
                directory: {"DiskMB": d["disk_mb"],
                            "DiskPct": round(100.0 * d["disk_mb"] / broker.capacity_mb(directory), 4),
                            "NumLeaderReplicas": d["leaders"], "NumReplicas": d["replicas"]}
                for directory, d in load["dirs"].items()}
    for host, row in zip(stats["hosts"], stats["brokers"]):
        host.update({k: row[k] for k in ("LeaderNwInRate", "FollowerNwInRate", "NwOutRate", "PnwOutRate", "CpuPct")})
    return {**stats, "version": 1}


PARTITION_SORT = {"cpu": "cpu", "networkInbound": "networkInbound", "networkOutbound": "networkOutbound",
                  "disk": "disk"}


def partition_load(model: LoadModel, params: dict[str, str]) -> dict[str, Any]:
    """GET partition_load: one record per partition, sorted by ``resource`` (disk by default), at most ``entries``,
    optionally only topics matching the ``topic`` regex. Cruise Control's OpenAPI description types the figures as
    integers (KB/s, MB, messages/s), so they are rounded."""
    pattern = re.compile(params["topic"]) if params.get("topic") else None
    records = [
        {"topic": p.topic, "partition": p.partition, "leader": p.leader if p.leader is not None else -1,
         "followers": p.followers, "cpu": round(p.bytes_in_kb_s / 1024.0 * 0.05),
         "networkInbound": round(p.bytes_in_kb_s), "networkOutbound": round(p.bytes_out_kb_s),
         "disk": round(p.disk_mb), "msg_in": round(p.msg_in_s)}
        for p in model.partitions() if pattern is None or pattern.fullmatch(p.topic)]
    key = PARTITION_SORT.get(params.get("resource", "disk"), "disk")
    records.sort(key=lambda r: (-r[key], r["topic"], r["partition"]))
    entries = int(params.get("entries", len(records) or 1))
    return {"records": records[:entries], "version": 1}


def _stats(values: list[float]) -> dict[str, float]:
    return {
        "AVG": statistics.fmean(values) if values else 0.0,
        "MAX": max(values, default=0.0),
        "MIN": min(values, default=0.0),
        "STD": statistics.pstdev(values) if values else 0.0,
    }


def _cluster_model_stats(cluster: Cluster) -> dict[str, Any]:
    replicas = cluster.replica_counts()
    leaders = cluster.leader_counts()
    alive = sorted(cluster.alive_ids)
    rep = _stats([float(replicas[b]) for b in alive])
    lead = _stats([float(leaders[b]) for b in alive])
    holder = {}
    for agg in ("AVG", "MAX", "MIN", "STD"):
        holder[agg] = {"cpu": 0.0, "networkInbound": 0.0, "networkOutbound": 0.0, "disk": 0.0, "potentialNwOut": 0.0,
                       "replicas": rep[agg], "leaderReplicas": lead[agg], "topicReplicas": 0.0}
    return {
        "metadata": {"brokers": len(alive), "replicas": sum(replicas.values()), "topics": len(cluster.topics)},
        "statistics": holder,
    }


def balancedness(brokers: list[dict[str, Any]], leaving: Iterable[int] = ()) -> float:
    """A score from 0 to 100 standing in for Cruise Control's goal-weighted one: 100 when alive brokers (other than
    ``leaving`` ones) hold equal replica counts, lower as their spread grows (100 x (1 - coefficient of variation))."""
    gone = set(leaving)
    counts = [float(b["Replicas"]) for b in brokers if b["BrokerState"] == "ALIVE" and b["Broker"] not in gone]
    mean = statistics.fmean(counts) if counts else 0.0
    if mean == 0:
        return 100.0
    return round(max(0.0, 100.0 * (1 - statistics.pstdev(counts) / mean)), 3)


def optimization_result(cluster: Cluster, moves: list[ReplicaMove], *, goals: list[str], verbose: bool = False,
                        leaving: Iterable[int] = (), intra: Iterable[IntraBrokerMove] = ()) -> dict[str, Any]:
    intra = list(intra)
    before, after = _broker_stats(cluster), _broker_stats(cluster, moves)
    summary = {
        # A replica moved counts once; so does one added or dropped by a replication-factor change.
        "numReplicaMovements": sum(max(len(set(m.new_replicas) - set(m.old_replicas)),
                                       len(set(m.old_replicas) - set(m.new_replicas))) for m in moves),
        "dataToMoveMB": int(sum(m.data_to_move_mb for m in moves)),
        "numIntraBrokerReplicaMovements": len(intra),
        "intraBrokerDataToMoveMB": int(sum(m.size_mb for m in intra)),
        "numLeaderMovements": sum(1 for m in moves if m.old_replicas[:1] != m.new_replicas[:1]),
        "recentWindows": 5,
        "monitoredPartitionsPercentage": 100.0,
        "excludedTopics": [],
        "excludedBrokersForReplicaMove": [],
        "excludedBrokersForLeadership": [],
        "onDemandBalancednessScoreBefore": balancedness(before["brokers"]),
        "onDemandBalancednessScoreAfter": balancedness(after["brokers"], leaving),
        "provisionStatus": "RIGHT_SIZED",
        "provisionRecommendation": "",
    }
    stats = _cluster_model_stats(cluster)
    result: dict[str, Any] = {
        "summary": summary,
        "goalSummary": [
            {"goal": g, "status": "FIXED" if moves or intra else "NO-ACTION", "clusterModelStats": stats,
             "optimizationTimeMs": 1}
            for g in goals
        ],
        "loadAfterOptimization": after,
        "version": 1,
    }
    if verbose:
        result["proposals"] = [
            {
                "topicPartition": f"{m.topic}-{m.partition}",
                "oldLeader": m.old_replicas[0] if m.old_replicas else -1,
                "oldReplicas": list(m.old_replicas),
                "newReplicas": list(m.new_replicas),
            }
            for m in moves
        ]
        result["loadBeforeOptimization"] = before
    return result


def progress_body(operation: str, elapsed_ms: int) -> dict[str, Any]:
    return {
        "version": 1,
        "progress": [
            {
                "version": 1,
                "operation": operation,
                "operationProgress": [
                    {"step": "AGGREGATING_METRICS", "description": "Retrieve the metrics of all the partitions.",
                     "time-in-ms": elapsed_ms // 2, "completionPercentage": 100.0},
                    {"step": "GENERATING_CLUSTER_MODEL", "description": "Generating cluster model for the cluster.",
                     "time-in-ms": elapsed_ms - elapsed_ms // 2, "completionPercentage": 50.0},
                ],
            }
        ],
    }


def kafka_cluster_state(cluster: Cluster) -> dict[str, Any]:
    alive = cluster.alive_ids
    replicas = cluster.replica_counts()
    leaders = cluster.leader_counts()
    out_of_sync: dict[int, int] = {b: 0 for b in cluster.brokers}
    offline_count: dict[int, int] = {b: 0 for b in cluster.brokers}
    lists: dict[str, list[dict[str, Any]]] = {"offline": [], "with-offline-replicas": [], "urp": [],
                                              "under-min-isr": [], "other": []}
    for topic in cluster.topics.values():
        min_isr = int(topic.config.get("min.insync.replicas", "1"))
        for p in topic.partitions:
            isr = p.isr(alive)
            offline = p.offline(alive)
            lagging = [b for b in p.replicas if b not in isr]
            for b in lagging:
                out_of_sync[b] += 1
            for b in offline:
                offline_count[b] += 1
            entry = {"topic": topic.name, "partition": p.index, "leader": p.leader if p.leader is not None else -1,
                     "replicas": list(p.replicas), "in-sync": isr, "out-of-sync": lagging, "offline": offline,
                     "min-isr": min_isr}
            if p.leader is None:
                lists["offline"].append(entry)
            elif offline:
                lists["with-offline-replicas"].append(entry)
            if p.leader is not None and lagging:
                lists["urp"].append(entry)
                if len(isr) < min_isr:
                    lists["under-min-isr"].append(entry)
            elif p.leader is not None and not offline:
                lists["other"].append(entry)
    ids = sorted(cluster.brokers)
    rep_values = [replicas[b] for b in ids] or [0]
    lead_values = [leaders[b] for b in ids] or [0]
    n_partitions = sum(len(t.partitions) for t in cluster.topics.values())
    controller = min(alive) if alive else -1
    return {
        "KafkaBrokerState": {
            "LeaderCountByBrokerId": {str(b): leaders[b] for b in ids},
            "OutOfSyncCountByBrokerId": {str(b): out_of_sync[b] for b in ids},
            "ReplicaCountByBrokerId": {str(b): replicas[b] for b in ids},
            "OfflineReplicaCountByBrokerId": {str(b): offline_count[b] for b in ids},
            "IsController": {str(b): b == controller for b in ids},
            "OnlineLogDirsByBrokerId": {str(b): [d for d in cluster.brokers[b].log_dirs
                                                 if d not in cluster.brokers[b].offline_log_dirs] if b in alive else []
                                        for b in ids},
            "OfflineLogDirsByBrokerId": {str(b): list(cluster.brokers[b].offline_log_dirs) if b in alive
                                         else list(cluster.brokers[b].log_dirs) for b in ids},
            "BrokerSetByBrokerId": {},
            "Summary": {
                "Brokers": len(ids),
                "Topics": len(cluster.topics),
                "Replicas": sum(rep_values),
                "Leaders": sum(lead_values),
                "AvgReplicationFactor": (sum(rep_values) / n_partitions) if n_partitions else 0.0,
                "AvgReplicasPerBroker": statistics.fmean(rep_values),
                "AvgLeadersPerBroker": statistics.fmean(lead_values),
                "MaxReplicasPerBroker": max(rep_values),
                "MaxLeadersPerBroker": max(lead_values),
                "StdReplicasPerBroker": round(statistics.pstdev(rep_values)),
                "StdLeadersPerBroker": round(statistics.pstdev(lead_values)),
            },
        },
        "KafkaPartitionState": lists,
        "version": 1,
    }


def cruise_control_state(*, executor: dict[str, Any], warm: bool, num_partitions: int,
                         goals: list[str]) -> dict[str, Any]:
    zero = {t: 0.0 for t in _ANOMALY_TYPES}
    return {
        "MonitorState": {
            "state": "RUNNING" if warm else "LOADING",
            "trained": False,
            "trainingPct": 20.0,
            "numMonitoredWindows": 5 if warm else 0,
            "numValidPartitions": num_partitions if warm else 0,
            "numTotalPartitions": num_partitions,
            "monitoringCoveragePct": 100.0 if warm else 0.0,
            "numFlawedPartitions": 0,
            "reasonOfLatestPauseOrResume": "N/A",
        },
        "ExecutorState": executor,
        "AnalyzerState": {"isProposalReady": warm, "readyGoals": goals if warm else []},
        "AnomalyDetectorState": {
            "selfHealingEnabled": [],
            "selfHealingDisabled": list(_ANOMALY_TYPES),
            "selfHealingEnabledRatio": dict(zero),
            "recentGoalViolations": [],
            "recentBrokerFailures": [],
            "recentMetricAnomalies": [],
            "recentDiskFailures": [],
            "recentTopicAnomalies": [],
            "recentMaintenanceEvents": [],
            "metrics": {
                "meanTimeBetweenAnomaliesMs": dict(zero),
                "meanTimeToStartFixMs": 0.0,
                "numSelfHealingStarted": 0,
                "numSelfHealingFailedToStart": 0,
                "ongoingAnomalyDurationMs": 0,
            },
            "balancednessScore": 100.0,
        },
        "version": 1,
    }
