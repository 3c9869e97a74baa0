"""Safe scale-down: at each look, whether the brokers of every Ready remove-brokers rebalance still host replicas."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from events import RebalanceMode, RebalanceStatus
from events.envelope import utcnow
from services.adapters.admin import TopicDescription
from services.rebalancer import scale_down
from services.rebalancer.observers.look import ClusterLook
from services.rebalancer.observers.shared import Shared
from services.rebalancer.statuses import S


def waiting(statuses: Iterable[RebalanceStatus]) -> list[RebalanceStatus]:
    return [s for s in statuses
            if s.state == S.READY and s.request.mode == RebalanceMode.REMOVE_BROKERS and not s.deleted]


def needs_topics(shared: Shared) -> bool:
    return bool(waiting(shared.statuses.values()))


def hosted(topics: Mapping[str, TopicDescription]) -> dict[int, dict[str, int]]:
    """broker -> topic -> its replicas there, from the cluster's topics."""
    return scale_down.hosted_replicas({name: [p.replicas for p in t.partitions] for name, t in topics.items()})


async def observe(shared: Shared, look: ClusterLook) -> None:
    if look.topics is None:
        return  # no removal waited when the look was read
    hosted_now = hosted(look.topics)
    for status in waiting(shared.statuses.values()):
        await shared.change(status.name, lambda s: scale_down.removal_check(s, hosted_now, utcnow()))
