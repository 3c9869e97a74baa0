"""Events of rebalancing (seed 001): requests, actions, status, and the scaling signals behind automatic rebalances.

The request mirrors Strimzi's ``KafkaRebalance`` spec and the status its status, in camelCase, so a KafkaRebalance
user reads familiar documents: ``ballast apply -f`` takes a KafkaRebalance YAML unchanged.
"""

from __future__ import annotations

import re
from datetime import datetime
from enum import StrEnum
from typing import Annotated, ClassVar, Literal

from pydantic import AfterValidator, BaseModel, Field, field_validator, model_validator

from events.envelope import FROZEN_WIRE, utcnow
from events.limits import BoundedText
from events.throttle import BrokerThrottle
from events.conditions import Condition
from events.models import Event
from events.names import ClusterName
from events.strict import StrictBool, StrictInt


def _broker_ids(brokers: list[int]) -> list[int]:
    if any(b < 0 for b in brokers):
        raise ValueError("broker ids are never negative")
    return sorted(set(brokers))


# Sorted, without repeats.
BrokerIds = Annotated[list[StrictInt], AfterValidator(_broker_ids)]

# Kubernetes resource names, so a KafkaRebalance's metadata.name is always a valid rebalance name.
_NAME = re.compile(r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$")


class RebalanceMode(StrEnum):
    FULL = "full"  # /rebalance: the whole cluster (with rebalanceDisk: between the disks of each broker)
    ADD_BROKERS = "add-brokers"  # /add_broker: replicas move only onto ``brokers``
    REMOVE_BROKERS = "remove-brokers"  # /remove_broker: every replica moves off ``brokers``
    REMOVE_DISKS = "remove-disks"  # /remove_disks: every replica moves off the named log directories
    # /fix_offline_replicas: replicas on dead brokers and failed disks move to healthy ones (Ballast's remediation)
    FIX_OFFLINE_REPLICAS = "fix-offline-replicas"

    @property
    def endpoint(self) -> str:
        return {"full": "rebalance", "add-brokers": "add_broker", "remove-brokers": "remove_broker",
                "remove-disks": "remove_disks", "fix-offline-replicas": "fix_offline_replicas"}[self.value]


class _Block(BaseModel):
    model_config = FROZEN_WIRE


class DiskRemoval(_Block):
    """One broker's directories to empty: Strimzi's ``moveReplicasOffVolumes`` entry (``volumeIds``: JBOD volume
    ``N`` is the directory under ``data-N``, Strimzi's layout), or the log-dir paths themselves (``logDirs``)."""

    broker_id: StrictInt = Field(ge=0)
    volume_ids: list[StrictInt] = Field(default_factory=list)
    log_dirs: list[BoundedText] = Field(default_factory=list)

    @model_validator(mode="after")
    def _check(self) -> DiskRemoval:
        if not self.volume_ids and not self.log_dirs:
            raise ValueError(f"broker {self.broker_id}: name the volumes to empty (volumeIds) or their log dirs "
                             "(logDirs)")
        if any(v < 0 for v in self.volume_ids):
            raise ValueError("volume ids are never negative")
        return self


class BrokerLogDirs(_Block):
    broker: StrictInt
    log_dirs: list[str]


class ThrottledReplicas(_Block):
    """One topic's items of Cruise Control's replication throttle: ``partition:broker``, comma-separated, as Kafka's
    ``leader/follower.replication.throttled.replicas`` list them."""

    topic: str
    items: str


class CruiseControlThrottle(_Block):
    """What Cruise Control sets for a rebalance's executions with its ``replicationThrottle`` (its
    ``ReplicationThrottleHelper``), learnt from the moves each execution's answer lists: the rate, as
    ``leader/follower.replication.throttled.rate``, on every broker a move touches, and ``partition:broker`` items
    for each moved partition's current and added replicas in its topic's throttled-replicas lists. Cruise Control
    takes them off as its moves end and after a stop; what a crash of it left (kill -9) Ballast removes once the
    rebalance no longer executes (services/rebalancer/replication_throttle.py)."""

    # The request's rate (two, when a refreshed request changed it while some of the earlier one's was left).
    rates: list[StrictInt] = Field(min_length=1)
    brokers: BrokerIds = Field(default_factory=list)
    replicas: list[ThrottledReplicas] = Field(default_factory=list)
    # Topics whose items did not fit in the status (a rebalance of many thousand partitions): left as they are.
    unrecorded_topics: StrictInt = 0


class RebalanceRequest(Event):
    """Desired rebalance, keyed by name; the latest request per name wins. A changed request starts over."""

    SCHEMA: ClassVar[str] = "ballast.RebalanceRequest"

    name: str
    mode: RebalanceMode = RebalanceMode.FULL
    brokers: BrokerIds = Field(default_factory=list)
    goals: list[str] = Field(default_factory=list)
    skip_hard_goal_check: StrictBool = False
    excluded_topics: str | None = None  # a regex, as Cruise Control takes it
    concurrent_partition_movements_per_broker: StrictInt | None = Field(default=None, ge=1)
    concurrent_leader_movements: StrictInt | None = Field(default=None, ge=1)
    replication_throttle: StrictInt | None = Field(default=None, ge=1)  # bytes per second
    rebalance_disk: StrictBool = False  # full mode: balance between the disks of each broker
    move_replicas_off_volumes: list[DiskRemoval] = Field(default_factory=list)  # remove-disks mode
    concurrent_intra_broker_partition_movements: StrictInt | None = Field(default=None, ge=1)
    # Bytes per second for moves between a broker's directories (replica.alter.log.dirs.io.max.bytes.per.second),
    # set by Ballast on the brokers involved for the execution: Cruise Control sets no intra-broker throttle.
    intra_broker_throttle: StrictInt | None = Field(default=None, ge=1)
    # Execute the proposal as soon as it is ready (Strimzi: annotation strimzi.io/rebalance-auto-approval).
    auto_approve: StrictBool = False
    # An approval stands only if the proposal Cruise Control computes again for the execution is within this many
    # percent of the approved one (data to move, replica movements). None: the rebalancer's setting.
    approval_max_drift_percent: float | None = Field(default=None, ge=0)
    # Set on rebalances Ballast starts itself when the cluster scales; "down" ones run before "up" ones.
    scaling: Literal["up", "down"] | None = None
    # The cluster the request is for (a KafkaRebalance's strimzi.io/cluster label), as a topic spec's ``cluster``.
    cluster: ClusterName | None = None

    @field_validator("name")
    @classmethod
    def _check_name(cls, name: str) -> str:
        if not _NAME.match(name):
            raise ValueError(f"invalid rebalance name {name!r}: use lower-case letters, digits, '-' and '.', "
                             "starting and ending with a letter or digit (at most 253 characters)")
        return name

    @field_validator("excluded_topics")
    @classmethod
    def _check_regex(cls, regex: str | None) -> str | None:
        if regex is not None:
            try:
                re.compile(regex)
            except re.error as exc:
                raise ValueError(f"excludedTopics is not a valid regex: {exc}") from None
        return regex

    @model_validator(mode="after")
    def _check_mode(self) -> RebalanceRequest:
        disks = self.mode == RebalanceMode.REMOVE_DISKS
        if self.mode in (RebalanceMode.ADD_BROKERS, RebalanceMode.REMOVE_BROKERS) and not self.brokers:
            raise ValueError(f"mode {self.mode} needs the list of brokers (brokers: [...])")
        if self.mode not in (RebalanceMode.ADD_BROKERS, RebalanceMode.REMOVE_BROKERS) and self.brokers:
            raise ValueError("brokers is only for the add-brokers and remove-brokers modes")
        if disks and not self.move_replicas_off_volumes:
            raise ValueError("mode remove-disks needs moveReplicasOffVolumes: [{brokerId: ..., volumeIds: [...]}] "
                             "(or logDirs: [...] instead of volumeIds)")
        if self.move_replicas_off_volumes and not disks:
            raise ValueError("moveReplicasOffVolumes is only for the remove-disks mode")
        if disks and (self.goals or self.replication_throttle or self.excluded_topics):
            raise ValueError("remove-disks takes no goals, replicationThrottle or excludedTopics (Cruise Control's "
                             "remove_disks has none); intraBrokerThrottle limits its moves")
        if self.intra_broker_throttle and not (disks or self.rebalance_disk):
            raise ValueError("intraBrokerThrottle is for moves between disks: remove-disks, or rebalanceDisk: true")
        if self.rebalance_disk and self.mode != RebalanceMode.FULL:
            raise ValueError("rebalanceDisk is only for the full mode")
        if self.rebalance_disk and self.goals:
            raise ValueError("rebalanceDisk balances a broker's disks and takes no goals; drop one of them")
        return self

    @property
    def key(self) -> str:
        return self.name


class RebalanceAction(Event):
    """What Strimzi users do with the ``strimzi.io/rebalance`` annotation: approve, refresh or stop a rebalance."""

    SCHEMA: ClassVar[str] = "ballast.RebalanceAction"

    name: str
    # release: a Ready remove-disks rebalance's directories may take replicas again (Ballast keeps them empty until).
    action: Literal["approve", "refresh", "stop", "release"]
    # approve only: execute a proposal that moves replicas onto cordoned brokers or directories (condition
    # CordonsCrossed), knowingly; an approval without it leaves such a proposal waiting.
    accept_cordoned: bool = False

    @property
    def key(self) -> str:
        return self.name


class RebalanceState(StrEnum):
    NEW = "New"
    PENDING_PROPOSAL = "PendingProposal"
    PROPOSAL_READY = "ProposalReady"
    REBALANCING = "Rebalancing"
    # Stop asked: Cruise Control lets the movements in flight finish (up to minutes), then reports no execution.
    STOPPING = "Stopping"
    READY = "Ready"
    NOT_READY = "NotReady"
    STOPPED = "Stopped"


class ProposalSummary(_Block):
    """Cruise Control's ``summary`` of a proposal (Strimzi's status.optimizationResult), Cruise Control's names."""

    num_replica_movements: int = 0
    num_leader_movements: int = 0
    data_to_move_mb: float = Field(default=0, alias="dataToMoveMB")
    num_intra_broker_replica_movements: int = 0
    intra_broker_data_to_move_mb: float = Field(default=0, alias="intraBrokerDataToMoveMB")
    on_demand_balancedness_score_before: float | None = None
    on_demand_balancedness_score_after: float | None = None
    recent_windows: int | None = None
    monitored_partitions_percentage: float | None = None
    excluded_topics: list[str] = Field(default_factory=list)
    provision_status: str | None = None


class BrokerLoadChange(_Block):
    """One broker's load before and after the proposal."""

    broker: int
    # None: Cruise Control did not say (remove_disks answers no load before its proposal).
    replicas_before: int | None = None
    replicas_after: int
    leaders_before: int | None = None
    leaders_after: int
    disk_mb_before: float | None = Field(default=None, alias="diskMBBefore")
    disk_mb_after: float = Field(alias="diskMBAfter")


class RebalanceProgress(_Block):
    """While executing: from Cruise Control's executor state."""

    executor_state: str
    finished_data_mb: float = Field(alias="finishedDataMovementMB")
    total_data_mb: float = Field(alias="totalDataToMoveMB")
    finished_partition_movements: int = 0
    total_partition_movements: int = 0
    # In flight at the last look: a stop lets them finish.
    in_progress_partition_movements: int = 0
    percent_data_moved: float = 0.0
    estimated_seconds_to_completion: float | None = None
    finished_intra_broker_data_mb: float = Field(default=0.0, alias="finishedIntraBrokerDataMovementMB")
    total_intra_broker_data_mb: float = Field(default=0.0, alias="totalIntraBrokerDataToMoveMB")
    finished_intra_broker_partition_movements: int = 0
    total_intra_broker_partition_movements: int = 0


class RebalanceStatus(Event):
    """Where one rebalance stands: published on every transition; compacted; the rebalancer's memory."""

    SCHEMA: ClassVar[str] = "ballast.RebalanceStatus"

    name: str
    state: RebalanceState
    request: RebalanceRequest
    # The Cruise Control task behind the state: the proposal's (PendingProposal) or the execution's (Rebalancing).
    session_id: str | None = None
    # Set while an execution request is in flight; sent as Cruise Control's ``reason`` so that a restart between the
    # request and the record of its task id finds the task again instead of executing twice.
    execution_reason: str | None = None
    # Set by a stop or refresh action while executing: the execution is stopped (Stopping until Cruise Control's
    # movements in flight have ended), then the state becomes Stopped (stop) or New (refresh).
    stopping: Literal["stop", "refresh"] | None = None
    # A request that changed while executing: the execution goes on with ``request``; a refresh takes this one.
    pending_request: RebalanceRequest | None = None
    # The proposal shown (and approved): the dry run's.
    summary: ProposalSummary | None = None
    broker_load: list[BrokerLoadChange] = Field(default_factory=list)
    # Set by an approval that is being checked: Cruise Control computes the proposal again before it executes, and
    # the approval stands only if that proposal is within the rebalancer's drift limit of ``summary``.
    checking_approval: bool = False
    # The proposal Cruise Control executes: it computes one again at execution, from the load it sees then.
    executed_summary: ProposalSummary | None = None
    progress: RebalanceProgress | None = None
    message: BoundedText | None = None
    attempts: int = 0
    next_attempt_at: datetime | None = None
    conditions: list[Condition] = Field(default_factory=list)
    # remove-disks: the directories it empties, resolved from the request; kept empty by Ballast while the rebalance
    # is Rebalancing or Ready, until released.
    removed_log_dirs: list[BrokerLogDirs] = Field(default_factory=list)
    released: bool = False
    # Brokers whose intra-broker throttle this rebalance set; cleared once it ends (also after a restart).
    intra_throttled_brokers: list[int] = Field(default_factory=list)
    # What Cruise Control's replication throttle may still hold for this rebalance's executions: removed by Ballast
    # once it no longer executes (also after a restart), then None (the condition ReplicationThrottleLeft says how).
    cruise_control_throttle: CruiseControlThrottle | None = None
    # While it executes: the rates in force on the brokers moving replicas, as the throttle controller last saw them
    # (ballast.throttle.status), its own and others'; empty otherwise.
    throttles: list[BrokerThrottle] = Field(default_factory=list)
    # Approved with accept_cordoned: the proposal may move replicas onto cordoned places (until a refresh).
    cordons_accepted: bool = False
    deleted: bool = False
    updated_at: datetime = Field(default_factory=utcnow)

    @property
    def key(self) -> str:
        return self.name

    def condition(self, type_: str) -> Condition | None:
        return next((c for c in self.conditions if c.type == type_), None)


class BrokerRemovalRequested(Event):
    """An operator's word that these brokers are going away (``ballast brokers remove``): Ballast moves every
    replica off them first (a remove-brokers rebalance, auto-approved in auto mode) and says when they are safe to
    remove."""

    SCHEMA: ClassVar[str] = "ballast.BrokerRemovalRequested"

    brokers: BrokerIds = Field(min_length=1)

    @property
    def key(self) -> str:
        return "remove-" + "-".join(map(str, self.brokers))


class KnownBrokers(Event):
    """The rebalancer's memory of the cluster's brokers, to tell a broker that joined from one it knew."""

    SCHEMA: ClassVar[str] = "ballast.KnownBrokers"

    brokers: list[int] = Field(default_factory=list)

    @property
    def key(self) -> str:
        return "known-brokers"


class LogDirState(_Block):
    path: str
    online: bool = True
    error: str | None = None  # why it is offline, as the broker says (KAFKA_STORAGE_ERROR, ...)
    drained_by: str | None = None  # the remove-disks rebalance that keeps it empty
    cordoned: bool = False  # KIP-1066: it takes no new replica (the broker config cordoned.log.dirs)


class BrokerStatus(Event):
    """What the rebalancer sees of one broker, published when it changes: its log directories (online or failed,
    drained) and conditions (``LogDirsOffline``)."""

    SCHEMA: ClassVar[str] = "ballast.BrokerStatus"

    broker: StrictInt
    log_dirs: list[LogDirState] = Field(default_factory=list)
    conditions: list[Condition] = Field(default_factory=list)
    updated_at: datetime = Field(default_factory=utcnow)

    @property
    def key(self) -> str:
        return str(self.broker)

    def condition(self, type_: str) -> Condition | None:
        return next((c for c in self.conditions if c.type == type_), None)


REBALANCE_EVENT_TYPES: tuple[type[Event], ...] = (
    RebalanceRequest,
    RebalanceAction,
    RebalanceStatus,
    BrokerRemovalRequested,
    KnownBrokers,
    BrokerStatus,
)
