"""Scale-up: brokers that joined since the last look get an automatic add-brokers rebalance."""

from __future__ import annotations

from events import TOPICS, KnownBrokers
from services.common.logging import get_logger
from services.common.outbox import send
from services.rebalancer import scaling
from services.rebalancer.observers.look import ClusterLook
from services.rebalancer.observers.shared import Shared

log = get_logger(__name__)


async def observe(shared: Shared, look: ClusterLook) -> None:
    new, known = scaling.joined(shared.known_brokers, look.alive)
    auto = shared.tuning.auto
    if new and auto.enabled:
        request = scaling.scaling_request("up", new, auto.add_brokers, auto_approve=True)
        log.info("brokers joined; rebalancing onto them", brokers=new, rebalance=request.name)
        await send(shared.outbox, TOPICS.rebalance_requests, request)
    elif new:
        log.info("brokers joined; automatic rebalancing is off", brokers=new)
    if known != shared.known_brokers:
        # After the request: a crash in between repeats the same request, which changes nothing.
        await send(shared.outbox, TOPICS.scaling, KnownBrokers(brokers=known))
        shared.known_brokers = known
