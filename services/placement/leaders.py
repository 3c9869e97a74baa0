"""Choose each partition's leader among its replicas so that leaders per broker stay within one of each other.

Choosing partition by partition ("the replica with the fewest leaders") paints itself into corners: with three
brokers and one leader already on broker 1, a topic with replicas {2,3} and {1,2} gets leaders 2 and 1 where 3 and
2 were possible. So leaders are chosen for the whole topic at once: first how many each broker should lead (fill
the brokers that lead the fewest partitions cluster-wide, never more than the partitions they host), then a
matching of partitions to brokers that meets those numbers, repaired by augmenting paths where a greedy pass
falls short. When the replica sets themselves leave no way to meet the numbers, a follower is swapped between two
partitions (replica counts unchanged, spread checked) to bring a broker with leaderships to spare into the partition.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Mapping


def choose_leaders(partitions: list[list[int]], alive: set[int], quota: Mapping[int, int],
                   topic_leaders: Mapping[int, int], cluster_leaders: Mapping[int, int], order: Iterable[int],
                   spread_ok: Callable[[list[int]], bool] = lambda replicas: True,
                   hosted: Mapping[int, int] | None = None) -> list[list[int]]:
    """Return ``partitions`` with each one's leader moved to the front, each broker leading ``quota[b]`` of them
    where the replica sets allow. ``topic_leaders`` / ``cluster_leaders`` (leaderships in this topic's earlier
    partitions / in other topics) and ``order`` decide where they do not."""
    rank = {b: i for i, b in enumerate(order)}
    for b in alive:
        rank.setdefault(b, len(rank))
    hosted = hosted if hosted is not None else hosted_counts(partitions, alive)
    quota = {b: quota.get(b, 0) for b in hosted}
    leader: list[int | None] = [None] * len(partitions)
    led: dict[int, set[int]] = {b: set() for b in hosted}
    # Greedy: the replica that must lead the largest share of the partitions it still has to see (quota left over
    # hosted partitions left), so a broker whose quota is large against what it hosts is not left short at the end.
    left = dict(quota)
    unseen = dict(hosted)
    for index, replicas in enumerate(partitions):
        chosen = None
        for b in replicas:
            if b not in alive:
                continue
            if left[b] and (chosen is None or left[b] * unseen[chosen] > left[chosen] * unseen[b]
                            or (left[b] * unseen[chosen] == left[chosen] * unseen[b] and rank[b] < rank[chosen])):
                chosen = b
        for b in replicas:
            if b in alive:
                unseen[b] -= 1
        if chosen is not None:
            leader[index] = chosen
            led[chosen].add(index)
            left[chosen] -= 1
    for index, replicas in enumerate(partitions):
        if leader[index] is None and not _augment(index, partitions, alive, quota, leader, led) \
                and not _swap_in(index, partitions, alive, quota, leader, led, spread_ok):
            # The quotas cannot all be met with these replica sets: the least-loaded replica leads.
            options = [b for b in replicas if b in alive]
            if not options:
                raise ValueError(f"partition {index} has no alive replica to lead it: {replicas}")
            chosen = min(options, key=lambda b: (topic_leaders.get(b, 0) + len(led[b]), cluster_leaders.get(b, 0),
                                                 rank.get(b, 0)))
            leader[index] = chosen
            led[chosen].add(index)
    return [replicas if replicas[0] == lead else [lead, *(b for b in replicas if b != lead)]  # type: ignore[misc]
            for lead, replicas in zip(leader, partitions)]


def hosted_counts(partitions: Iterable[list[int]], alive: set[int]) -> dict[int, int]:
    """Partitions each alive broker holds a replica of: the most it can lead."""
    hosted: dict[int, int] = {}
    for replicas in partitions:
        for b in replicas:
            if b in alive:
                hosted[b] = hosted.get(b, 0) + 1
    return hosted


def _augment(start: int, partitions: list[list[int]], alive: set[int], quota: Mapping[int, int],
             leader: list[int | None], led: dict[int, set[int]]) -> bool:
    """Find brokers b1..bk: ``start`` takes b1, a partition led by b1 moves to b2, ..., bk has quota left."""
    came_from: dict[int, tuple[int, int | None]] = {}  # broker -> (partition that moves onto it, broker it leaves)
    queue: deque[int] = deque()

    def shift(broker: int) -> bool:  # walk the path back, moving each partition onto the next broker
        while True:
            partition, previous = came_from[broker]
            if previous is not None:
                led[previous].discard(partition)
            leader[partition] = broker
            led[broker].add(partition)
            if previous is None:
                return True
            broker = previous

    for b in partitions[start]:
        if b in alive and b not in came_from:
            came_from[b] = (start, None)
            if len(led[b]) < quota[b]:
                return shift(b)
            queue.append(b)
    while queue:
        broker = queue.popleft()
        for partition in led[broker]:
            for other in partitions[partition]:
                if other in alive and other not in came_from:
                    came_from[other] = (partition, broker)
                    if len(led[other]) < quota[other]:  # checked on discovery: the BFS stops a level earlier
                        return shift(other)
                    queue.append(other)
    return False


def _swap_in(index: int, partitions: list[list[int]], alive: set[int], quota: Mapping[int, int],
             leader: list[int | None], led: dict[int, set[int]], spread_ok: Callable[[list[int]], bool]) -> bool:
    """Give partition ``index`` a broker with leaderships to spare by trading one of its replicas for it with a
    partition where that broker is a follower."""
    spare = [b for b in led if b in alive and len(led[b]) < quota[b]]
    mine = partitions[index]
    for broker in spare:
        if broker in mine:
            continue
        for other, replicas in enumerate(partitions):
            if other == index or broker not in replicas or leader[other] == broker:
                continue
            for give in mine:
                if give in replicas or give == leader[other]:
                    continue
                new_mine = [broker if b == give else b for b in mine]
                new_other = [give if b == broker else b for b in replicas]
                if spread_ok(new_mine) and spread_ok(new_other):
                    partitions[index], partitions[other] = new_mine, new_other
                    leader[index] = broker
                    led[broker].add(index)
                    return True
    return False
