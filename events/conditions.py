"""The conditions status events carry: the block each is written as (``Condition``), and the names of their types,
part of the contract subscribers read, so written once, here, and used by the services that set them and by the CLI,
the dashboard and the demo that read them."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, Field

from events.envelope import FROZEN_WIRE, utcnow
from events.limits import BoundedText


class Condition(BaseModel):
    model_config = FROZEN_WIRE

    type: str
    status: str  # "True" | "False" | "Unknown", as in Kubernetes conditions
    reason: str | None = None
    message: BoundedText | None = None
    last_transition_time: datetime = Field(default_factory=utcnow)


# -- topics (TopicStatus) -----------------------------------------------------------------------------------------
READY = "Ready"
UNDER_REPLICATED = "UnderReplicated"  # placeholder replicas kept for brokers that are down (seed 002)
REPLICAS_CHANGE_BLOCKED = "ReplicasChangeBlocked"  # held: too few brokers alive for the target
PARTITIONS_DECREASE_NOT_SUPPORTED = "PartitionsDecreaseNotSupported"
RF_BELOW_MIN_INSYNC = "ReplicationFactorBelowMinInsyncReplicas"
RECONCILIATION_PAUSED = "ReconciliationPaused"  # spec paused: nothing is changed on the topic
UNMANAGED = "Unmanaged"  # spec managed: false: Ballast has let go of the topic
# The cluster differed from a spec already applied (changed outside Ballast): reason Corrected (set back, said until
# the spec changes) or Reported (left as it is, said while it lasts), per the reconciler's drift setting.
DRIFT = "Drift"
# Partitions are being reassigned (by anyone) and the replica count differs from the spec's: the replication factor
# is judged once the move ends (neither drift nor a change to ask for).
PARTITIONS_MOVING = "PartitionsMoving"
# A config the spec names that is not the spec's to set (the replication throttles' lists): left out.
CONFIG_IGNORED = "ConfigIgnored"
POLICY_VIOLATION = "PolicyViolation"  # the spec (or its withdrawal) breaks a rule of the policy file: not acted on
# A tenant's spec (or withdrawal) refused by the tenant gate (issue 53), on the tenant's own status topic: the name is
# not the tenant's (NotOwner), or the spec asks beyond its quota (QuotaExceeded). Reason: the rule.
NOT_OWNER = "NotOwner"
QUOTA_EXCEEDED = "QuotaExceeded"

# -- brokers (BrokerStatus) ----------------------------------------------------------------------------------------
# Some of the broker's log directories are cordoned (KIP-1066: cordoned.log.dirs): they take no new replica; all of
# them, and the broker takes none (reason AllCordoned, else SomeCordoned; False: NoneCordoned).
LOG_DIRS_CORDONED = "LogDirsCordoned"

# -- rebalances (RebalanceStatus) ---------------------------------------------------------------------------------
INVALID_ACTION = "InvalidAction"
REQUEST_CHANGED = "RequestChanged"
BROKERS_REMOVABLE = "BrokersRemovable"
PROPOSAL_CHANGED = "ProposalChanged"
DISKS_EMPTY = "DisksEmpty"
# The proposal moves replicas onto cordoned places (KIP-1066): a fully cordoned broker, or a cordoned directory by an
# intra-broker move. Cruise Control knows no cordons; it is not executed unless approved with accept_cordoned.
CORDONS_CROSSED = "CordonsCrossed"
# Cruise Control forgot the execution (a restart): its new proposal for what was left is checked (reason
# CruiseControlRestarted), then executed (reason NewProposalExecuted, said until the rebalance ends).
EXECUTION_INTERRUPTED = "ExecutionInterrupted"
# What Cruise Control's replication throttle left once the rebalance no longer executes: True (reason Waiting) while
# some of it waits to be removed, False once nothing is left (reason Removed: Ballast took it off; TakenOff: Cruise
# Control had).
REPLICATION_THROTTLE_LEFT = "ReplicationThrottleLeft"

# -- brokers (BrokerStatus) ---------------------------------------------------------------------------------------
LOG_DIRS_OFFLINE = "LogDirsOffline"
