"""One read of the cluster per look, handed to every observer."""

from __future__ import annotations

from dataclasses import dataclass

from services.adapters.admin import AdminError, BrokerInfo, ClusterAdmin, LogDirInfo, TopicDescription
from services.common.logging import get_logger

log = get_logger(__name__)


@dataclass(frozen=True)
class ClusterLook:
    brokers: list[BrokerInfo]
    # None when no observer needed them at this look: listing every topic is the heaviest read.
    topics: dict[str, TopicDescription] | None
    # The alive brokers' directories, without their replicas; None when the brokers did not describe them (the
    # observers that need them skip).
    log_dirs: list[LogDirInfo] | None

    @property
    def alive(self) -> list[int]:
        return [b.id for b in self.brokers if b.alive]

    @classmethod
    async def read(cls, admin: ClusterAdmin, *, with_topics: bool) -> ClusterLook:
        """Raises AdminError when the brokers or the topics cannot be read: without them there is nothing to look at."""
        brokers = await admin.brokers()
        topics = await admin.list_topics() if with_topics else None
        alive = [b.id for b in brokers if b.alive]
        # One DescribeLogDirs per look, without the replicas in each directory: hundreds of thousands of them at
        # 100,000 topics, read every look, for the drained directories' observer alone, which reads those of the
        # brokers it drains.
        try:
            log_dirs = await admin.describe_log_dirs(alive, replicas=False) if alive else []
        except AdminError as exc:
            log.info("log directories not described", error=str(exc))
            log_dirs = None
        return cls(brokers, topics, log_dirs)
