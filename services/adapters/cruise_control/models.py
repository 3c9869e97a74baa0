"""Typed views of Cruise Control's JSON answers.

Field names follow Cruise Control's own (including its mixed casing). Models accept extra fields: Cruise Control adds
keys between versions, and a client that breaks on a new key is worse than one that ignores it.
"""

from __future__ import annotations

import json
from enum import StrEnum
from typing import Annotated, Any
from urllib.parse import parse_qs, urlsplit

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field


class _CCModel(BaseModel):
    model_config = ConfigDict(extra="allow", populate_by_name=True)


class TaskStatus(StrEnum):
    ACTIVE = "Active"
    IN_EXECUTION = "InExecution"
    COMPLETED = "Completed"
    COMPLETED_WITH_ERROR = "CompletedWithError"


class UserTask(_CCModel):
    user_task_id: str = Field(alias="UserTaskId")
    status: TaskStatus = Field(alias="Status")
    start_ms: str = Field(alias="StartMs")
    request_url: str | None = Field(default=None, alias="RequestURL")
    client_identity: str | None = Field(default=None, alias="ClientIdentity")
    # A JSON *string* holding the operation's result (with fetch_completed_task=true).
    original_response: str | None = Field(default=None, alias="originalResponse")

    def reason(self) -> str | None:
        """The ``reason`` parameter of the request that made this task (how a client finds its own tasks again)."""
        if not self.request_url:
            return None
        values = parse_qs(urlsplit(self.request_url).query).get("reason")
        return values[0] if values else None

    def original_result(self) -> dict[str, Any] | None:
        """The operation's result as JSON, or None. Cruise Control sometimes stores a bare word here
        (e.g. ``COMPLETED_WITH_ERROR``) rather than a JSON document."""
        if not self.original_response:
            return None
        try:
            parsed = json.loads(self.original_response)
        except json.JSONDecodeError:
            return None
        return parsed if isinstance(parsed, dict) else None


class UserTasks(_CCModel):
    user_tasks: list[UserTask] = Field(alias="userTasks")
    version: int = 1

    def by_id(self) -> dict[str, UserTask]:
        return {task.user_task_id: task for task in self.user_tasks}


class OptimizationSummary(_CCModel):
    num_replica_movements: int = Field(default=0, alias="numReplicaMovements")
    num_leader_movements: int = Field(default=0, alias="numLeaderMovements")
    data_to_move_mb: float = Field(default=0, alias="dataToMoveMB")
    num_intra_broker_replica_movements: int = Field(default=0, alias="numIntraBrokerReplicaMovements")
    intra_broker_data_to_move_mb: float = Field(default=0, alias="intraBrokerDataToMoveMB")
    balancedness_before: float | None = Field(default=None, alias="onDemandBalancednessScoreBefore")
    balancedness_after: float | None = Field(default=None, alias="onDemandBalancednessScoreAfter")
    recent_windows: int | None = Field(default=None, alias="recentWindows")
    monitored_partitions_percentage: float | None = Field(default=None, alias="monitoredPartitionsPercentage")
    excluded_topics: list[str] = Field(default_factory=list, alias="excludedTopics")
    provision_status: str | None = Field(default=None, alias="provisionStatus")


class OptimizationResult(_CCModel):
    summary: OptimizationSummary
    goal_summary: list[dict[str, Any]] = Field(default_factory=list, alias="goalSummary")
    load_after_optimization: BrokerLoads | None = Field(default=None, alias="loadAfterOptimization")
    load_before_optimization: BrokerLoads | None = Field(default=None, alias="loadBeforeOptimization")
    proposals: list[dict[str, Any]] | None = None
    version: int = 1


class OperationStep(_CCModel):
    step: str
    description: str | None = None
    time_in_ms: int | None = Field(default=None, alias="time-in-ms")
    completion_percentage: float | None = Field(default=None, alias="completionPercentage")


class OperationProgress(_CCModel):
    operation: str
    operation_progress: list[OperationStep] = Field(default_factory=list, alias="operationProgress")


class ProgressResponse(_CCModel):
    """The 202 body while Cruise Control is still working on a request."""

    progress: list[OperationProgress]
    version: int = 1


class ErrorResponse(_CCModel):
    error_message: str = Field(default="", alias="errorMessage")
    stack_trace: str | None = Field(default=None, alias="stackTrace")
    version: int = 1


class ExecutorState(_CCModel):
    state: str
    triggered_user_task_id: str | None = Field(default=None, alias="triggeredUserTaskId")
    num_total_partition_movements: int | None = Field(default=None, alias="numTotalPartitionMovements")
    num_finished_partition_movements: int | None = Field(default=None, alias="numFinishedPartitionMovements")
    num_in_progress_partition_movements: int | None = Field(default=None, alias="numInProgressPartitionMovements")
    total_data_to_move: float | None = Field(default=None, alias="totalDataToMove")
    finished_data_movement: float | None = Field(default=None, alias="finishedDataMovement")
    num_total_intra_broker_partition_movements: int | None = Field(
        default=None, alias="numTotalIntraBrokerPartitionMovements")
    num_finished_intra_broker_partition_movements: int | None = Field(
        default=None, alias="numFinishedIntraBrokerPartitionMovements")
    total_intra_broker_data_to_move: float | None = Field(default=None, alias="totalIntraBrokerDataToMove")
    finished_intra_broker_data_movement: float | None = Field(default=None, alias="finishedIntraBrokerDataMovement")


class MonitorState(_CCModel):
    state: str
    trained: bool | None = None
    num_monitored_windows: int | None = Field(default=None, alias="numMonitoredWindows")
    num_valid_partitions: int | None = Field(default=None, alias="numValidPartitions")
    num_total_partitions: int | None = Field(default=None, alias="numTotalPartitions")
    monitoring_coverage_pct: float | None = Field(default=None, alias="monitoringCoveragePct")
    loading_progress_pct: float | None = Field(default=None, alias="loadingProgressPct")  # while LOADING

    @property
    def loading_progress(self) -> float | None:
        return None if self.loading_progress_pct is None else self.loading_progress_pct / 100.0


class AnalyzerState(_CCModel):
    is_proposal_ready: bool = Field(alias="isProposalReady")
    ready_goals: list[str] = Field(default_factory=list, alias="readyGoals")


class CruiseControlState(_CCModel):
    executor: ExecutorState | None = Field(default=None, alias="ExecutorState")
    monitor: MonitorState | None = Field(default=None, alias="MonitorState")
    analyzer: AnalyzerState | None = Field(default=None, alias="AnalyzerState")
    anomaly_detector: dict[str, Any] | None = Field(default=None, alias="AnomalyDetectorState")
    version: int = 1


class PartitionState(_CCModel):
    topic: str
    partition: int
    leader: int
    replicas: list[int]
    in_sync: list[int] = Field(alias="in-sync")
    out_of_sync: list[int] = Field(default_factory=list, alias="out-of-sync")
    offline: list[int] = Field(default_factory=list)


class KafkaClusterState(_CCModel):
    broker_state: dict[str, Any] = Field(alias="KafkaBrokerState")
    partition_state: dict[str, list[PartitionState]] = Field(alias="KafkaPartitionState")
    version: int = 1


OFFLINE_DISK = "DEAD"


def _figure_or_offline(value: Any) -> Any:
    return None if value == OFFLINE_DISK else value


# Cruise Control writes the string "DEAD" instead of a figure for an offline log directory.
DiskFigure = Annotated[float | None, BeforeValidator(_figure_or_offline)]


class LogDirLoad(_CCModel):
    """One log directory of a broker (``DiskState`` with populate_disk_info=true, and in a proposal's
    ``loadAfterOptimization``). An offline directory (a failed disk, or one a proposal empties for removal) has no
    figures: Cruise Control writes ``"DEAD"`` in ``DiskMB`` and ``DiskPct``."""

    disk_mb: DiskFigure = Field(default=0, alias="DiskMB")
    disk_pct: DiskFigure = Field(default=None, alias="DiskPct")
    leaders: int = Field(default=0, alias="NumLeaderReplicas")
    replicas: int = Field(default=0, alias="NumReplicas")

    @property
    def online(self) -> bool:
        return self.disk_mb is not None


class BrokerLoad(_CCModel):
    broker: int = Field(alias="Broker")
    host: str | None = Field(default=None, alias="Host")
    rack: str | None = Field(default=None, alias="Rack")
    state: str | None = Field(default=None, alias="BrokerState")
    replicas: int = Field(default=0, alias="Replicas")
    leaders: int = Field(default=0, alias="Leaders")
    disk_mb: float = Field(default=0, alias="DiskMB")
    disk_pct: float | None = Field(default=None, alias="DiskPct")
    cpu_pct: float | None = Field(default=None, alias="CpuPct")
    leader_nw_in_rate: float | None = Field(default=None, alias="LeaderNwInRate")
    follower_nw_in_rate: float | None = Field(default=None, alias="FollowerNwInRate")
    nw_out_rate: float | None = Field(default=None, alias="NwOutRate")
    disk_state: dict[str, LogDirLoad] = Field(default_factory=dict, alias="DiskState")

    @property
    def alive(self) -> bool:
        return self.state in (None, "ALIVE")


class BrokerLoads(_CCModel):
    """GET load (and ``loadAfterOptimization`` / ``loadBeforeOptimization`` of a proposal)."""

    brokers: list[BrokerLoad] = Field(default_factory=list)
    version: int = 1

    def by_broker(self) -> dict[int, BrokerLoad]:
        return {b.broker: b for b in self.brokers}


class PartitionLoad(_CCModel):
    """One record of GET partition_load (rates in KB/s, disk in MB)."""

    topic: str
    partition: int
    leader: int
    followers: list[int] = Field(default_factory=list)
    cpu: float = 0.0
    network_inbound: float = Field(default=0.0, alias="networkInbound")
    network_outbound: float = Field(default=0.0, alias="networkOutbound")
    disk: float = 0.0
    msg_in: float = 0.0


class PartitionLoads(_CCModel):
    records: list[PartitionLoad] = Field(default_factory=list)
    version: int = 1


OptimizationResult.model_rebuild()
