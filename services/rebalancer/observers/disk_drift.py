"""The automatic disk rebalance: when a broker's log directories drift apart (the Spark job's log-dir aggregates), a
rebalanceDisk request from its template."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from events import TOPICS
from events.envelope import utcnow
from services.common.logging import get_logger
from services.common.outbox import send
from services.rebalancer import disks, logic
from services.rebalancer.observers.look import ClusterLook
from services.rebalancer.observers.shared import Shared

log = get_logger(__name__)


async def on_load_events(shared: Shared, events: Sequence[Any]) -> None:
    """The Spark job's log-directory aggregates: how far each broker's disks drift apart."""
    for event in events:
        decoded = await shared.dead_letters.decode_or_reject(event, TOPICS.load_aggregates)
        if decoded is not None and decoded.event.entity_kind == "log-dir":
            shared.recent_load.take(decoded.event)


async def observe(shared: Shared, look: ClusterLook) -> None:
    auto = shared.tuning.auto
    if auto.disk_drift is None:
        return
    now = utcnow()
    usage = {b: {d: u.disk_mb for d, u in dirs.items()} for b, dirs in shared.recent_load.log_dirs(now).items()}
    excluded = disks.drained_log_dirs(shared.statuses.values())
    for broker, status in shared.broker_statuses.items():
        excluded.setdefault(broker, set()).update(d.path for d in status.log_dirs if not d.online)
    drift = disks.disk_drift(usage, excluded)
    request = disks.disk_rebalance_request(drift, shared.statuses.values(), threshold=auto.disk_drift,
                                           min_mb=auto.disk_drift_min_mb, cooldown_s=auto.disk_cooldown_s,
                                           template=auto.rebalance_disk, now=now)
    if request is not None and request.name not in shared.statuses:
        log.info("disks drifted apart; requesting a disk rebalance", rebalance=request.name,
                 drift={b: round(share, 3) for b, (_, share) in drift.items()})
        # Its status first: the next look must not ask again before the request comes back from the bus.
        async with shared.lock(request.name):
            await shared.publish(logic.on_request(None, request, now))
        await send(shared.outbox, TOPICS.rebalance_requests, request)
