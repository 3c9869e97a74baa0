"""The options of Cruise Control's optimization endpoints (rebalance, add_broker, remove_broker,
fix_offline_replicas), as the query parameters each endpoint takes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class OptimizationOptions:
    """The knobs of rebalance / add_broker / remove_broker (Strimzi's KafkaRebalance spec has the same)."""

    goals: tuple[str, ...] = ()
    skip_hard_goal_check: bool = False
    excluded_topics: str | None = None  # a regex
    concurrent_partition_movements_per_broker: int | None = None
    concurrent_leader_movements: int | None = None
    replication_throttle: int | None = None  # bytes per second
    rebalance_disk: bool = False  # rebalance only: between the disks of each broker
    concurrent_intra_broker_partition_movements: int | None = None  # rebalance only
    verbose: bool = False
    reason: str | None = None
    # rebalance and remove_broker only: the brokers replicas may move onto (Ballast leaves fully cordoned ones out).
    destination_broker_ids: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        if self.rebalance_disk and self.goals:
            raise ValueError("rebalanceDisk balances a broker's disks and takes no goals; drop one of them")

    def params(self, endpoint: str) -> dict[str, Any]:
        params: dict[str, Any] = {}
        if self.goals:
            params["goals"] = ",".join(self.goals)
        if self.skip_hard_goal_check:
            params["skip_hard_goal_check"] = "true"
        if self.excluded_topics:
            params["excluded_topics"] = self.excluded_topics
        if self.concurrent_partition_movements_per_broker:
            params["concurrent_partition_movements_per_broker"] = self.concurrent_partition_movements_per_broker
        if self.concurrent_leader_movements:
            params["concurrent_leader_movements"] = self.concurrent_leader_movements
        if self.replication_throttle:
            params["replication_throttle"] = self.replication_throttle
        if self.rebalance_disk and endpoint == "rebalance":
            params["rebalance_disk"] = "true"
        if self.concurrent_intra_broker_partition_movements and endpoint == "rebalance":
            params["concurrent_intra_broker_partition_movements"] = self.concurrent_intra_broker_partition_movements
        if self.destination_broker_ids and endpoint in ("rebalance", "remove_broker"):
            params["destination_broker_ids"] = ",".join(map(str, self.destination_broker_ids))
        if self.verbose:
            params["verbose"] = "true"
        if self.reason:
            params["reason"] = self.reason
        return params
