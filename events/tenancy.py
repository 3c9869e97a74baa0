"""The tenant gate's own memory (issue 53): how far it has decided each tenant's spec topic."""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field

from events.models import Event


class TenantGateProgress(Event):
    """The last record of a tenant's spec topic partition the gate decided (forwarded or refused) for the names of one
    shard: read back at the gate's start and as it gains a shard, so that no record is decided twice, whatever has
    been written for its name on the deployment's spec topic since."""

    SCHEMA: ClassVar[str] = "ballast.TenantGateProgress"

    source: str  # the tenant's spec topic
    partition: int = Field(ge=0)
    shard: int = Field(ge=0)
    offset: int = Field(ge=0)

    @property
    def key(self) -> str:
        return f"{self.source}/{self.partition}/{self.shard}"


TENANCY_EVENT_TYPES: tuple[type[Event], ...] = (TenantGateProgress,)
