"""What the best placer could reach, found by max-flow (networkx), independently of any placer's algorithm.

A domain receives, for every partition, the replicas its placement put there. Any placer that keeps the spread rule
sends them down the rack tree: a partition's ``k`` replicas at a domain give each child at most ``best_spread(k)``
(and never more than the child has brokers), and a broker holds at most one replica of a partition. Whether every
broker of the domain can end at most (or at least) some count is then whether a flow carries all the replicas (or
meets every broker's demand). The cap of a deeper domain is computed from the most replicas its parent can pass to
it, which can only allow more than the spread rule: the best found here is never worse than the true best, so
checking a placement against it is strict.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence

import networkx as nx

from services.placement.metrics import best_spread
from services.placement.rack_tree import Domain


def replicas_could_all_be(domain: Domain, arrivals: Mapping[int, int], existing: Mapping[int, int], *,
                          at_most: int | None = None, at_least: int | None = None) -> bool:
    """Could the ``arrivals`` (partition -> replicas in ``domain``) be placed so that every broker of the domain
    ends with at most / at least this many replicas, counting ``existing``?"""
    graph = nx.DiGraph()
    for partition, k in arrivals.items():
        graph.add_edge("source", ("p", partition, domain.path), capacity=k)
        _down(graph, partition, domain, k)
    return _meets(graph, _brokers(domain), existing, sum(arrivals.values()), at_most, at_least)


def leaders_could_all_be(domain: Domain, led: Sequence[Sequence[int]], alive: set[int], existing: Mapping[int, int],
                         *, at_most: int | None = None, at_least: int | None = None) -> bool:
    """Could the partitions ``led`` in ``domain`` (their replica lists) be led by their alive replicas in the domain
    so that every broker there ends with at most / at least this many leaderships, counting ``existing``?"""
    inside = set(_brokers(domain))
    graph = nx.DiGraph()
    for index, replicas in enumerate(led):
        graph.add_edge("source", ("led", index), capacity=1)
        for broker in replicas:
            if broker in inside and broker in alive:
                graph.add_edge(("led", index), ("b", broker), capacity=1)
    return _meets(graph, sorted(inside), existing, len(led), at_most, at_least)


def _down(graph: nx.DiGraph, partition: int, node: Domain, most: int) -> None:
    allowed = best_spread(most, [c.capacity for c in node.children])
    for child in node.children:
        if child.broker is not None:
            graph.add_edge(("p", partition, node.path), ("b", child.broker), capacity=1)
            continue
        cap = min(allowed, child.capacity)
        graph.add_edge(("p", partition, node.path), ("p", partition, child.path), capacity=cap)
        _down(graph, partition, child, cap)


def _brokers(domain: Domain) -> list[int]:
    return [node.broker for node in domain.walk() if node.broker is not None]


def _meets(graph: nx.DiGraph, brokers: list[int], existing: Mapping[int, int], units: int, at_most: int | None,
           at_least: int | None) -> bool:
    demand = 0
    for broker in brokers:
        have = existing.get(broker, 0)
        if at_most is not None:
            if have > at_most:
                return False
            graph.add_edge(("b", broker), "sink", capacity=at_most - have)
        else:
            assert at_least is not None
            need = max(0, at_least - have)
            demand += need
            graph.add_edge(("b", broker), "sink", capacity=need)
    if "source" not in graph:
        return at_most is not None or demand == 0
    flow = nx.maximum_flow_value(graph, "source", "sink") if "sink" in graph else 0
    # At most: every replica finds room. At least: every broker's demand is met (the rest can always go somewhere,
    # since the placement being judged placed them all; adding flow never takes any from a broker).
    return flow == units if at_most is not None else flow == demand and demand <= units


def uneven_spread(partitions: Sequence[Sequence[int]], domain_of: Mapping[int, str]) -> list[str]:
    """Where one topic's own spread is uneven (issue 55: a topic's spread comes first): two brokers of one domain
    holding two or more apart of its replicas, or two brokers (of ``domain_of``) leading two or more apart of its
    partitions (the first replica leads). Empty when the topic is spread within one everywhere."""
    replicas = Counter(b for partition in partitions for b in partition)
    leaders = Counter(partition[0] for partition in partitions if partition)
    found = []
    for domain in sorted(set(domain_of.values())):
        inside = sorted(b for b, d in domain_of.items() if d == domain)
        counts = {b: replicas[b] for b in inside}
        if max(counts.values()) - min(counts.values()) >= 2:
            found.append(f"replicas in {domain}: {counts}")
    led = {b: leaders[b] for b in domain_of}
    if max(led.values()) - min(led.values()) >= 2:
        found.append(f"leaders: {led}")
    return found
