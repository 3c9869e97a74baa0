"""Cruise Control's JSON shapes, built from the simulated cluster. Validated against Cruise Control's own OpenAPI
description in the tests, so every required field is here even where the simulator has nothing better than 0."""

from __future__ import annotations

import re
import statistics
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from services.cluster_sim.load import LoadModel
from services.cluster_sim.model import BROKER_DISK_CAPACITY_MB, Cluster, IntraBrokerMove, ReplicaMove

OFFLINE_DISK = "DEAD"  # what Cruise Control writes for an offline log directory's figures
_ANOMALY_TYPES = ("GOAL_VIOLATION", "BROKER_FAILURE", "METRIC_ANOMALY", "DISK_FAILURE", "TOPIC_ANOMALY",
                  "MAINTENANCE_EVENT")


def error_body(method: str, endpoint: str, cause: str, exception: str) -> dict[str, Any]:
    """A task's failure: 'Error processing POST request '/x' due to: '<exception>: <cause>'.'"""
    message = f"Error processing {method} request '/{endpoint}' due to: '{exception}: {cause}'."
    stack = f"{exception}: {cause}\n\tat com.linkedin.kafka.cruisecontrol.servlet (simulated)"
    return {"errorMessage": message, "stackTrace": stack, "version": 1}


def request_error(method: str, endpoint: str, cause: str, exception: str) -> dict[str, Any]:
    """A refusal before any task exists (servlet capacity, an unexpected User-Task-ID): the cause alone."""
    return {"errorMessage": f"Error processing {method} request '/{endpoint}' due to: '{cause}'.",
            "stackTrace": f"{exception}: {cause}\n\tat com.linkedin.kafka.cruisecontrol.servlet.UserTaskManager "
                          "(simulated)", "version": 1}


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
        # A dead broker has no host, rack or capacity any more; its replicas and disk are the last ones known.
        row = {
            "Host": f"broker-{b.id}.sim.local" if b.alive else "UNKNOWN_HOST-0",
            "Broker": b.id,
            "Rack": (b.rack or "") if b.alive else "",
            "BrokerState": "ALIVE" if b.alive else "DEAD",
            "DiskMB": disk[b.id],
            "DiskPct": round(100.0 * disk[b.id] / BROKER_DISK_CAPACITY_MB, 4) if b.alive else -1.0,
            "CpuPct": 0.0,
            "LeaderNwInRate": 0.0,
            "FollowerNwInRate": 0.0,
            "NwOutRate": 0.0,
            "PnwOutRate": 0.0,
            "Replicas": replicas[b.id],
            "Leaders": leaders[b.id],
            "DiskCapacityMB": BROKER_DISK_CAPACITY_MB if b.alive else 0.0,
            "NetworkInCapacity": 50_000.0 if b.alive else 0.0,
            "NetworkOutCapacity": 50_000.0 if b.alive else 0.0,
            "NumCore": 8.0 if b.alive else 0.0,
        }
        brokers.append(row)
        if b.alive:
            hosts.append({k: v for k, v in row.items() if k not in ("Broker", "BrokerState")})
    return {"hosts": hosts, "brokers": brokers}


def disk_state(figures: dict[str, dict[str, Any]], capacity_mb: Callable[[str], float],
               offline: Iterable[str] = ()) -> dict[str, dict[str, Any]]:
    """A broker's ``DiskState``: each log directory's figures; an offline one (a failed disk, or one a proposal
    empties) has ``"DEAD"`` instead of numbers, as Cruise Control writes it."""
    gone = set(offline)
    state: dict[str, dict[str, Any]] = {}
    for directory in sorted(set(figures) | gone):
        d = figures.get(directory, {"disk_mb": 0.0, "leaders": 0, "replicas": 0})
        if directory in gone:
            state[directory] = {"DiskMB": OFFLINE_DISK, "DiskPct": OFFLINE_DISK,
                                "NumLeaderReplicas": 0, "NumReplicas": 0}
        else:
            state[directory] = {"DiskMB": d["disk_mb"], "DiskPct": round(100.0 * d["disk_mb"] / capacity_mb(directory), 4),
                                "NumLeaderReplicas": d["leaders"], "NumReplicas": d["replicas"]}
    return state


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
            online = {d: f for d, f in load["dirs"].items() if d not in broker.offline_log_dirs}
            row["DiskState"] = disk_state(online, broker.capacity_mb, broker.offline_log_dirs)
    for host, row in zip(stats["hosts"], stats["brokers"]):
        host.update({k: row[k] for k in ("LeaderNwInRate", "FollowerNwInRate", "NwOutRate", "PnwOutRate", "CpuPct")})
    return {**stats, "version": 1}


PARTITION_SORT = {"cpu": "cpu", "networkInbound": "networkInbound", "networkOutbound": "networkOutbound",
                  "disk": "disk"}


def partition_load(model: LoadModel, params: dict[str, str]) -> dict[str, Any]:
    """GET partition_load: one record per partition, sorted by ``resource`` (disk by default), at most ``entries``,
    optionally only topics matching the ``topic`` regex. Cruise Control's OpenAPI description types the figures as
    integers, but the real one answers floats (KB/s, MB, messages/s), and so does the simulator."""
    pattern = re.compile(params["topic"]) if params.get("topic") else None
    records = [
        {"topic": p.topic, "partition": p.partition, "leader": p.leader if p.leader is not None else -1,
         "followers": p.followers, "cpu": float(p.bytes_in_kb_s / 1024.0 * 0.05),
         "networkInbound": float(p.bytes_in_kb_s), "networkOutbound": float(p.bytes_out_kb_s),
         "disk": float(p.disk_mb), "msg_in": float(p.msg_in_s)}
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
    """The goal summary's statistics: averages and deviations are decimals, extremes of counts whole numbers (as the
    real one writes them)."""
    replicas = cluster.replica_counts()
    leaders = cluster.leader_counts()
    alive = sorted(cluster.alive_ids)
    rep = _stats([float(replicas[b]) for b in alive])
    lead = _stats([float(leaders[b]) for b in alive])
    holder = {}
    for agg in ("AVG", "MAX", "MIN", "STD"):
        count = float if agg in ("AVG", "STD") else int
        holder[agg] = {"cpu": 0.0, "networkInbound": 0.0, "networkOutbound": 0.0, "disk": 0.0, "potentialNwOut": 0.0,
                       "replicas": count(rep[agg]), "leaderReplicas": count(lead[agg]), "topicReplicas": count(0)}
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
                        leaving: Iterable[int] = (), intra: Iterable[IntraBrokerMove] = (),
                        excluded_topics: Iterable[str] = (), excluded_brokers: Iterable[int] = (),
                        load: LoadModel | None = None, removed_dirs: Mapping[int, set[str]] | None = None
                        ) -> dict[str, Any]:
    """A proposal's answer. ``numReplicaMovements`` counts partitions whose replicas change (as the real one does),
    ``numLeaderMovements`` those whose leader changes; a proposal between directories (``intra``) shows each broker's
    directories after it (``DiskState``), the ones emptied for removal (``removed_dirs``) as ``"DEAD"``."""
    intra = list(intra)
    before, after = _broker_stats(cluster), _broker_stats(cluster, moves)
    summary = {
        "numReplicaMovements": sum(1 for m in moves if set(m.new_replicas) != set(m.old_replicas)),
        "dataToMoveMB": int(sum(m.data_to_move_mb for m in moves)),
        "numIntraBrokerReplicaMovements": len(intra),
        "intraBrokerDataToMoveMB": int(sum(m.size_mb for m in intra)),
        "numLeaderMovements": sum(1 for m in moves if m.old_replicas[:1] != m.new_replicas[:1]),
        "recentWindows": 5,
        "monitoredPartitionsPercentage": 100.0,
        "excludedTopics": list(excluded_topics),
        "excludedBrokersForReplicaMove": list(excluded_brokers),
        "excludedBrokersForLeadership": [],
        "onDemandBalancednessScoreBefore": balancedness(before["brokers"]),
        "onDemandBalancednessScoreAfter": balancedness(after["brokers"], leaving),
        "provisionStatus": "RIGHT_SIZED",
        "provisionRecommendation": "",
    }
    if intra and load is not None:  # each directory's figures before and after (DiskState, as on a JBOD cluster)
        _disks_after(cluster, load, [], {}, before["brokers"])
        _disks_after(cluster, load, intra, removed_dirs or {}, after["brokers"])
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
                # Kafka's TopicPartition as the real one's JSON writes it (its hash is Java's; any int here).
                "topicPartition": {"hash": hash((m.topic, m.partition)) & 0x7FFFFFFF, "partition": m.partition,
                                   "topic": m.topic},
                "oldLeader": m.old_replicas[0] if m.old_replicas else -1,
                "oldReplicas": list(m.old_replicas),
                "newReplicas": list(m.new_replicas),
            }
            for m in moves
        ]
        result["loadBeforeOptimization"] = before
    return result


def _disks_after(cluster: Cluster, load: LoadModel, intra: list[IntraBrokerMove],
                 removed_dirs: Mapping[int, set[str]], rows: list[dict[str, Any]]) -> None:
    """Each broker's directories once the moves between them are done, in its ``loadAfterOptimization`` row."""
    dirs = {b: {d: dict(f) for d, f in figures["dirs"].items()} for b, figures in load.brokers().items()}
    for move in intra:
        figures = dirs.setdefault(move.broker, {})
        source = figures.setdefault(move.source, {"disk_mb": 0.0, "leaders": 0, "replicas": 0})
        target = figures.setdefault(move.destination, {"disk_mb": 0.0, "leaders": 0, "replicas": 0})
        source["disk_mb"] -= move.size_mb
        source["replicas"] -= 1
        target["disk_mb"] += move.size_mb
        target["replicas"] += 1
    for row in rows:
        broker = cluster.brokers[row["Broker"]]
        if row["BrokerState"] == "ALIVE" and row["Broker"] in dirs:
            gone = set(removed_dirs.get(broker.id, ())) | set(broker.offline_log_dirs)
            row["DiskState"] = disk_state(dirs[broker.id], broker.capacity_mb, gone)


def progress_body(operation: str, elapsed_ms: int) -> dict[str, Any]:
    """The 202 answer while a task waits its turn or is computed."""
    return {
        "version": 1,
        "progress": [
            {
                "operation": operation,
                "operationProgress": [
                    {"step": "PENDING", "description": "Operation enqueued, waiting to be executed.",
                     "time-in-ms": elapsed_ms, "completionPercentage": 100.0},
                ],
            }
        ],
    }


def kafka_cluster_state(cluster: Cluster, *, verbose: bool = False) -> dict[str, Any]:
    """Brokers' and partitions' state; healthy partitions (``other``) only when verbose, as the real one lists."""
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
    troubled = {b for b in ids if b in alive and cluster.brokers[b].offline_log_dirs}
    rep_values = [replicas[b] for b in ids] or [0]
    lead_values = [leaders[b] for b in ids] or [0]
    n_partitions = sum(len(t.partitions) for t in cluster.topics.values())
    controller = min(alive) if alive else -1
    return {
        "KafkaBrokerState": {
            # As the real one lists them: leaders of alive brokers; out-of-sync and offline replicas of the brokers
            # that have some, or an offline log directory.
            "LeaderCountByBrokerId": {str(b): leaders[b] for b in ids if b in alive},
            "OutOfSyncCountByBrokerId": {str(b): out_of_sync[b] for b in ids if out_of_sync[b] or b in troubled},
            "ReplicaCountByBrokerId": {str(b): replicas[b] for b in ids},
            "OfflineReplicaCountByBrokerId": {str(b): offline_count[b] for b in ids
                                              if offline_count[b] or b in troubled},
            "IsController": {str(b): b == controller for b in ids},
            # A dead broker's directories are not known: both lists say so, as the real one does.
            "OnlineLogDirsByBrokerId": {str(b): [d for d in cluster.brokers[b].log_dirs
                                                 if d not in cluster.brokers[b].offline_log_dirs] if b in alive
                                        else ["broker_dead"] for b in ids},
            "OfflineLogDirsByBrokerId": {str(b): list(cluster.brokers[b].offline_log_dirs) if b in alive
                                         else ["broker_dead"] for b in ids},
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
                "StdReplicasPerBroker": statistics.pstdev(rep_values),
                "StdLeadersPerBroker": statistics.pstdev(lead_values),
            },
        },
        "KafkaPartitionState": lists if verbose else {k: v for k, v in lists.items() if k != "other"},
        "version": 1,
    }


def cruise_control_state(*, executor: dict[str, Any], warm_up: str, loaded: float, num_partitions: int,
                         goals: list[str]) -> dict[str, Any]:
    """``warm_up``: the phase of a (re)start's warm-up (``warm_up.WarmUp``); ``loaded``: how far the samples
    are loaded while in its first phase. The real one counts 3 windows throughout, and covers no partition, with no
    proposal ready, until the warm-up ends."""
    ready = warm_up == "warm"
    monitor: dict[str, Any] = {"state": "LOADING" if warm_up == "metadata" else "RUNNING", "trained": False,
                               "trainingPct": 20.0, "numMonitoredWindows": 3,
                               "numValidPartitions": num_partitions if ready else 0,
                               "numTotalPartitions": num_partitions if ready else 0,
                               "monitoringCoveragePct": 100.0 if ready else 0.0, "numFlawedPartitions": 0}
    if warm_up == "metadata":
        monitor["loadingProgressPct"] = round(100.0 * min(1.0, loaded), 1)
    else:
        monitor["reasonOfLatestPauseOrResume"] = "N/A"
    zero = {t: 0.0 for t in _ANOMALY_TYPES}
    return {
        "MonitorState": monitor,
        "ExecutorState": executor,
        "AnalyzerState": {"isProposalReady": ready, "readyGoals": [] if warm_up == "windows" else goals},
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
