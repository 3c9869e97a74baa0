"""A rebalance's status, changed: the helpers every rebalance rule uses (the states, a status updated, conditions
replaced)."""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from datetime import datetime

from events import BrokerThrottle, Condition, RebalanceProgress, RebalanceRequest, RebalanceState, RebalanceStatus
from services.domain import drift

S = RebalanceState
TERMINAL = {S.READY, S.NOT_READY, S.STOPPED}
EXECUTING = {S.REBALANCING, S.STOPPING}


def update(status: RebalanceStatus, now: datetime, **fields: object) -> RebalanceStatus:
    return status.model_copy(update={**fields, "updated_at": now})


def without(conditions: Iterable[Condition], *types: str) -> list[Condition]:
    return [c for c in conditions if c.type not in types]


def fresh(request: RebalanceRequest, now: datetime, before: RebalanceStatus | None = None) -> RebalanceStatus:
    """The rebalance from New. What Cruise Control's replication throttle may still hold for ``before``'s executions
    goes with it, to be removed all the same (replication_throttle)."""
    left = before.cruise_control_throttle if before is not None else None
    return RebalanceStatus(name=request.name, state=S.NEW, request=request, updated_at=now,
                           cruise_control_throttle=left)


def stopped_message(progress: RebalanceProgress | None) -> str:
    return f"Stopped; by Cruise Control's last report, {drift.moved_and_left(progress)}"


def new_reason() -> str:
    return f"ballast-rebalance-{uuid.uuid4()}"


def with_throttles(status: RebalanceStatus, throttles: list[BrokerThrottle]) -> RebalanceStatus | None:
    """The status showing the rates in force while it executes, and none once it does not; None when it already
    does."""
    shown = throttles if status.state in EXECUTING else []
    return None if shown == status.throttles else status.model_copy(update={"throttles": shown})
