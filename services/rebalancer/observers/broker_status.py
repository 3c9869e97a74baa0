"""Each alive broker's log directories as a BrokerStatus when they change (a failed disk is seen within one look);
with remediation on, a failed disk's offline replicas are moved off (a fix-offline-replicas rebalance)."""

from __future__ import annotations

from events import TOPICS
from events.envelope import utcnow
from services.common.logging import get_logger
from services.common.outbox import send
from services.rebalancer import disks, failed_disks
from services.rebalancer.observers.look import ClusterLook
from services.rebalancer.observers.shared import Shared

log = get_logger(__name__)


async def observe(shared: Shared, look: ClusterLook) -> None:
    if look.log_dirs is None:
        return
    alive = look.alive
    drained_by: dict[tuple[int, str], str] = {}
    for status in shared.statuses.values():
        for broker, paths in disks.drained_log_dirs([status]).items():
            drained_by.update({(broker, path): status.name for path in paths})
    for broker in alive:
        dirs = [(d.path, d.error) for d in look.log_dirs if d.broker == broker]
        if not dirs:
            continue
        own = {path: name for (b, path), name in drained_by.items() if b == broker}
        cordoned = {d.path for d in look.log_dirs if d.broker == broker and d.cordoned}
        status = failed_disks.broker_status(broker, dirs, own, shared.broker_statuses.get(broker), utcnow(),
                                            cordoned=cordoned)
        if status is None:
            continue
        shared.broker_statuses[broker] = status
        await send(shared.outbox, TOPICS.broker_status, status)
        log.info("broker status", broker=broker, offline=[d.path for d in status.log_dirs if not d.online],
                 cordoned=[d.path for d in status.log_dirs if d.cordoned])
    if shared.tuning.remediate_failed_disks:
        request = failed_disks.fix_offline_request(
            [shared.broker_statuses[b] for b in alive if b in shared.broker_statuses],
            shared.tuning.auto.fix_offline_replicas)
        if request is not None and request.name not in shared.statuses:
            log.warning("failed disks: moving their offline replicas", rebalance=request.name)
            await send(shared.outbox, TOPICS.rebalance_requests, request)
