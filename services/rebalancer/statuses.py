"""A rebalance's status, changed: the helpers every rebalance rule uses (the states, a status updated, conditions
replaced)."""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from datetime import datetime

from events import BrokerThrottle, Condition, RebalanceRequest, RebalanceState, RebalanceStatus

S = RebalanceState
TERMINAL = {S.READY, S.NOT_READY, S.STOPPED}
EXECUTING = {S.REBALANCING, S.STOPPING}


def update(status: RebalanceStatus, now: datetime, **fields: object) -> RebalanceStatus:
    return status.model_copy(update={**fields, "updated_at": now})


def without(conditions: Iterable[Condition], *types: str) -> list[Condition]:
    return [c for c in conditions if c.type not in types]


def fresh(request: RebalanceRequest, now: datetime) -> RebalanceStatus:
    return RebalanceStatus(name=request.name, state=S.NEW, request=request, updated_at=now)


def new_reason() -> str:
    return f"ballast-rebalance-{uuid.uuid4()}"


def with_throttles(status: RebalanceStatus, throttles: list[BrokerThrottle]) -> RebalanceStatus | None:
    """The status showing the rates in force while it executes, and none once it does not; None when it already
    does."""
    shown = throttles if status.state in EXECUTING else []
    return None if shown == status.throttles else status.model_copy(update={"throttles": shown})
