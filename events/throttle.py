"""Throttle events (issue 32): what the throttle controller sets on the managed cluster while replicas move, why, and
what it has set (its own memory, read back after a crash). Rates are bytes per second, as Kafka's configs take them."""

from __future__ import annotations

from datetime import datetime
from typing import ClassVar, Literal

from pydantic import BaseModel, Field

from events.envelope import FROZEN_WIRE, utcnow
from events.models import Event

# Between brokers (leader/follower.replication.throttled.rate) or between one broker's log directories
# (replica.alter.log.dirs.io.max.bytes.per.second).
ThrottleKind = Literal["inter-broker", "intra-broker"]
# Why a rate is what it is:
#   headroom          the broker's capacity less its live traffic, times the safety share, within floor and ceiling
#   isr-back-off      a partition outside the moves fell out of its ISR: the floor, until it is back and a hold passes
#   latency-back-off  the produce-latency probe's p99 passed its limit: the floor, likewise
#   fixed             someone else's rate (a rebalance's replicationThrottle, Kafka's tools, an operator) is set: kept
#   moves-ended       no move of this kind is in flight on the broker: the controller's rate is removed
#   leftover          the controller's rate from before a restart (or a crash), removed
#   no-capacity       no capacity is set for the broker: nothing to compute a headroom from, no rate set
ThrottleReason = Literal["headroom", "isr-back-off", "latency-back-off", "fixed", "moves-ended", "leftover",
                         "no-capacity"]
# Where the live traffic figures came from.
TrafficSource = Literal["cruise-control", "log-growth", "none"]


class _Block(BaseModel):
    model_config = FROZEN_WIRE


class BrokerThrottle(_Block):
    """One broker's throttle of one kind, as the controller last left it."""

    broker: int
    kind: ThrottleKind
    bytes_per_s: int | None = None  # the rate in force on the broker (None: none)
    owner: Literal["ballast", "other", "none"] = "none"
    reason: ThrottleReason = "headroom"
    capacity_bytes_per_s: int | None = None
    live_bytes_per_s: int | None = None  # client and replication traffic outside the moves
    headroom_bytes_per_s: int | None = None


class LogDirThrottle(_Block):
    """One log directory taking part in a move between directories: its share of the broker's intra-broker rate."""

    broker: int
    log_dir: str
    capacity_bytes_per_s: int | None = None
    live_bytes_per_s: int | None = None  # writes to it outside the moves
    headroom_bytes_per_s: int | None = None


class ThrottleStatus(Event):
    """The controller's view, published when it changes (one record: the managed cluster)."""

    SCHEMA: ClassVar[str] = "ballast.ThrottleStatus"

    moving_partitions: int = 0  # partition reassignments in flight
    moving_log_dirs: int = 0  # replicas being moved between directories
    brokers: list[BrokerThrottle] = Field(default_factory=list)
    log_dirs: list[LogDirThrottle] = Field(default_factory=list)
    traffic_source: TrafficSource = "none"
    traffic_age_s: float | None = None  # how old the traffic figures were when the rates were computed
    back_off: Literal["isr-back-off", "latency-back-off"] | None = None
    back_off_until: datetime | None = None
    lagging_partitions: list[str] = Field(default_factory=list)  # outside the moves, out of their ISR ("topic-p")
    latency_p99_ms: float | None = None  # the probe's, where one runs
    message: str = ""
    updated_at: datetime = Field(default_factory=utcnow)

    @property
    def key(self) -> str:
        return "cluster"


class ThrottleRateChanged(Event):
    """One change of one broker's rate, with its reason."""

    SCHEMA: ClassVar[str] = "ballast.ThrottleRateChanged"

    broker: int
    kind: ThrottleKind
    from_bytes_per_s: int | None = None
    to_bytes_per_s: int | None = None
    reason: ThrottleReason
    detail: str = ""
    at: datetime = Field(default_factory=utcnow)

    @property
    def key(self) -> str:
        return f"{self.kind}:{self.broker}"


class OwnedBrokerConfig(_Block):
    """A dynamic config of a broker the controller set; ``values`` holds every value it may have set (two while a
    change is being applied), so a crash between writing this and applying the change still finds the value as its
    own."""

    broker: int
    config: str
    values: list[str]


class OwnedListItems(_Block):
    """Items the controller added to a topic's LIST config (``leader/follower.replication.throttled.replicas``), and
    only those: items that were there before are someone else's."""

    topic: str
    config: str
    items: list[str]


class ThrottleLedger(Event):
    """Every throttle the controller has set and not yet removed, written before each change is applied. Read back at
    its start: what is still there is removed or taken over, and nothing else is ever touched."""

    SCHEMA: ClassVar[str] = "ballast.ThrottleLedger"

    broker_configs: list[OwnedBrokerConfig] = Field(default_factory=list)
    topic_items: list[OwnedListItems] = Field(default_factory=list)
    updated_at: datetime = Field(default_factory=utcnow)

    @property
    def key(self) -> str:
        return "ledger"

    @property
    def empty(self) -> bool:
        return not self.broker_configs and not self.topic_items


THROTTLE_EVENT_TYPES: tuple[type[Event], ...] = (ThrottleStatus, ThrottleRateChanged, ThrottleLedger)
