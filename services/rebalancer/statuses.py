"""A rebalance's status, changed: the helpers every rebalance rule uses (the states, a status updated, conditions
replaced)."""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from datetime import datetime

from events import Condition, RebalanceRequest, RebalanceState, RebalanceStatus

S = RebalanceState
TERMINAL = {S.READY, S.NOT_READY, S.STOPPED}


def update(status: RebalanceStatus, now: datetime, **fields: object) -> RebalanceStatus:
    return status.model_copy(update={**fields, "updated_at": now})


def without(conditions: Iterable[Condition], *types: str) -> list[Condition]:
    return [c for c in conditions if c.type not in types]


def fresh(request: RebalanceRequest, now: datetime) -> RebalanceStatus:
    return RebalanceStatus(name=request.name, state=S.NEW, request=request, updated_at=now)


def new_reason() -> str:
    return f"ballast-rebalance-{uuid.uuid4()}"
