"""The parameter names each Cruise Control endpoint takes (its servlet's ``*Parameters`` classes, as its OpenAPI
description lists them; ``tests/unit/test_cluster_sim_fidelity.py`` keeps the two in step). Cruise Control refuses a
request naming any other parameter (``ParameterUtils.hasValidParameterNames``), and so does the simulator."""

from __future__ import annotations

VALID_PARAMETERS: dict[str, frozenset[str]] = {
    "topic_configuration": frozenset({
        "allow_capacity_estimation", "broker_concurrent_leader_movements", "concurrent_leader_movements",
        "concurrent_partition_movements_per_broker", "data_from", "doAs", "dryrun",
        "exclude_recently_demoted_brokers", "exclude_recently_removed_brokers", "excluded_topics",
        "execution_progress_check_interval_ms", "fast_mode", "get_response_schema", "goals", "json",
        "max_partition_movements_in_cluster", "reason", "replica_movement_strategies", "replication_factor",
        "replication_throttle", "review_id", "skip_hard_goal_check", "skip_rack_awareness_check",
        "stop_ongoing_execution", "topic", "use_ready_default_goals", "verbose",
    }),
    "rebalance": frozenset({
        "allow_capacity_estimation", "broker_concurrent_leader_movements",
        "concurrent_intra_broker_partition_movements", "concurrent_leader_movements",
        "concurrent_partition_movements_per_broker", "data_from", "destination_broker_ids", "doAs", "dryrun",
        "exclude_recently_demoted_brokers", "exclude_recently_removed_brokers", "excluded_topics",
        "execution_progress_check_interval_ms", "fast_mode", "get_response_schema", "goals", "ignore_proposal_cache",
        "json", "kafka_assigner", "max_partition_movements_in_cluster", "reason", "rebalance_disk",
        "replica_movement_strategies", "replication_throttle", "review_id", "skip_hard_goal_check",
        "stop_ongoing_execution", "use_ready_default_goals", "verbose",
    }),
    "add_broker": frozenset({
        "allow_capacity_estimation", "broker_concurrent_leader_movements", "brokerid", "concurrent_leader_movements",
        "concurrent_partition_movements_per_broker", "data_from", "doAs", "dryrun",
        "exclude_recently_demoted_brokers", "exclude_recently_removed_brokers", "excluded_topics",
        "execution_progress_check_interval_ms", "fast_mode", "get_response_schema", "goals", "json",
        "kafka_assigner", "max_partition_movements_in_cluster", "reason", "replica_movement_strategies",
        "replication_throttle", "review_id", "skip_hard_goal_check", "stop_ongoing_execution",
        "throttle_added_broker", "use_ready_default_goals", "verbose",
    }),
    "remove_broker": frozenset({
        "allow_capacity_estimation", "broker_concurrent_leader_movements", "brokerid", "concurrent_leader_movements",
        "concurrent_partition_movements_per_broker", "data_from", "destination_broker_ids", "doAs", "dryrun",
        "exclude_recently_demoted_brokers", "exclude_recently_removed_brokers", "excluded_topics",
        "execution_progress_check_interval_ms", "fast_mode", "get_response_schema", "goals", "json",
        "kafka_assigner", "max_partition_movements_in_cluster", "reason", "replica_movement_strategies",
        "replication_throttle", "review_id", "skip_hard_goal_check", "stop_ongoing_execution",
        "throttle_removed_broker", "use_ready_default_goals", "verbose",
    }),
    "fix_offline_replicas": frozenset({
        "allow_capacity_estimation", "broker_concurrent_leader_movements", "concurrent_leader_movements",
        "concurrent_partition_movements_per_broker", "data_from", "doAs", "dryrun",
        "exclude_recently_demoted_brokers", "exclude_recently_removed_brokers", "excluded_topics",
        "execution_progress_check_interval_ms", "fast_mode", "get_response_schema", "goals", "json",
        "max_partition_movements_in_cluster", "reason", "replica_movement_strategies", "replication_throttle",
        "review_id", "skip_hard_goal_check", "stop_ongoing_execution", "use_ready_default_goals", "verbose",
    }),
    "remove_disks": frozenset({
        "brokerid_and_logdirs", "dryrun", "json", "reason", "stop_ongoing_execution",
    }),
    "proposals": frozenset({
        "allow_capacity_estimation", "data_from", "destination_broker_ids", "doAs", "exclude_recently_demoted_brokers",
        "exclude_recently_removed_brokers", "excluded_topics", "fast_mode", "get_response_schema", "goals",
        "ignore_proposal_cache", "json", "kafka_assigner", "rebalance_disk", "reason", "use_ready_default_goals",
        "verbose",
    }),
    "stop_proposal_execution": frozenset({
        "doAs", "force_stop", "get_response_schema", "json", "reason", "review_id", "stop_external_agent",
    }),
    "state": frozenset({
        "doAs", "get_response_schema", "json", "reason", "substates", "super_verbose", "verbose",
    }),
    "kafka_cluster_state": frozenset({
        "doAs", "get_response_schema", "json", "reason", "topic", "verbose",
    }),
    "load": frozenset({
        "allow_capacity_estimation", "capacity_only", "doAs", "end", "get_response_schema", "json",
        "populate_disk_info", "reason", "start", "time",
    }),
    "partition_load": frozenset({
        "allow_capacity_estimation", "avg_load", "brokerid", "doAs", "end", "entries", "get_response_schema", "json",
        "max_load", "min_valid_partition_ratio", "partition", "reason", "resource", "start", "topic",
    }),
    "user_tasks": frozenset({
        "client_ids", "doAs", "endpoints", "entries", "fetch_completed_task", "get_response_schema", "json",
        "reason", "types", "user_task_ids",
    }),
}


def unrecognized(endpoint: str, method: str, names: list[str]) -> str | None:
    """Cruise Control's message for parameters the endpoint does not take (names compare case-insensitively), or
    None."""
    if endpoint not in VALID_PARAMETERS:
        return None
    valid = {n.lower() for n in VALID_PARAMETERS[endpoint]}
    unknown = sorted({n for n in names if n.lower() not in valid}, key=str.lower)
    if not unknown:
        return None
    return f"Unrecognized endpoint parameters in {endpoint.upper()} {method} request: [{', '.join(unknown)}]."
