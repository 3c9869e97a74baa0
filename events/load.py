"""Load events (issue 5): samples the load collector reads from Cruise Control, and the rolling aggregates the Spark
job computes from them. Rates are KB/s and sizes MB, as Cruise Control reports them."""

from __future__ import annotations

from datetime import datetime
from typing import ClassVar, Literal

from pydantic import Field

from events.models import Event


class BrokerLoadSample(Event):
    SCHEMA: ClassVar[str] = "ballast.BrokerLoadSample"

    broker: int
    rack: str | None = None
    sampled_at: datetime
    bytes_in_kb_s: float = 0.0  # leader and follower bytes in
    bytes_out_kb_s: float = 0.0
    disk_mb: float = 0.0
    replicas: int = 0
    leaders: int = 0
    cpu_pct: float | None = None

    @property
    def key(self) -> str:
        return f"broker:{self.broker}"


class LogDirLoadSample(Event):
    """One log directory's load. An offline one (a failed disk: Cruise Control reports ``"DEAD"`` for it) is sampled
    too, with ``online`` false and no disk figures, so that whoever reads the samples sees it is gone."""

    SCHEMA: ClassVar[str] = "ballast.LogDirLoadSample"

    broker: int
    rack: str | None = None
    log_dir: str
    sampled_at: datetime
    online: bool = True
    disk_mb: float = 0.0
    disk_pct: float | None = None
    replicas: int = 0
    leaders: int = 0

    @property
    def key(self) -> str:
        return f"log-dir:{self.broker}:{self.log_dir}"


class PartitionLoadSample(Event):
    SCHEMA: ClassVar[str] = "ballast.PartitionLoadSample"

    topic: str
    partition: int
    leader: int
    followers: list[int] = Field(default_factory=list)
    sampled_at: datetime
    bytes_in_kb_s: float = 0.0
    bytes_out_kb_s: float = 0.0
    disk_mb: float = 0.0
    msg_in_s: float = 0.0

    @property
    def key(self) -> str:
        return f"partition:{self.topic}:{self.partition}"


EntityKind = Literal["broker", "log-dir", "domain"]


class LoadAggregate(Event):
    """One entity's load over one window: a broker, a log directory (``broker:dir``), or a rack-tree domain at any
    level (``/dc1``, ``/dc1/r2``; ``level`` counts from 1 at the top). Keyed by (window, entity): recomputing a window
    overwrites its record, so the compacted topic is idempotent across restarts."""

    SCHEMA: ClassVar[str] = "ballast.LoadAggregate"

    window_start: datetime
    window_end: datetime
    entity_kind: EntityKind
    entity: str
    level: int = 0
    rack: str | None = None  # a broker's rack path (the domains its figures are summed into)
    samples: int = 0
    bytes_in_kb_s: float = 0.0  # mean over the window
    bytes_out_kb_s: float = 0.0
    disk_mb: float = 0.0  # the latest in the window
    disk_growth_mb: float = 0.0  # latest minus earliest in the window
    replicas: int = 0
    leaders: int = 0
    placements: int = 0  # replicas placed on the entity in the window
    last_sample_at: datetime | None = None  # the newest sample in the window (freshness: event time -> here)

    @property
    def key(self) -> str:
        return f"{self.window_start.isoformat()}|{self.entity_kind}:{self.entity}"


LOAD_EVENT_TYPES: tuple[type[Event], ...] = (BrokerLoadSample, LogDirLoadSample, PartitionLoadSample, LoadAggregate)
