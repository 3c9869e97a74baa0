"""Rack paths (``/dc1/rack2``) as a tree whose leaves are brokers.

Every rack id starts at the root ``/``; all brokers must sit at the same depth, so that "a domain at level L" means
the same thing everywhere. A broker without a rack, or a rack path that breaks these rules, is a clear error: the
multi-level placer cannot guess where it is.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from services.placement.model import Broker, InvalidRack


def rack_levels(rack: str) -> tuple[str, ...]:
    return tuple(part for part in rack.split("/")[1:])


@dataclass
class Domain:
    """One node of the rack tree: the root, a data centre, a rack, ... or a single broker (a leaf)."""

    path: str
    children: list[Domain] = field(default_factory=list)
    broker: int | None = None
    # How many brokers sit under this domain: how many replicas of one partition it can hold.
    capacity: int = 0

    @property
    def is_broker(self) -> bool:
        return self.broker is not None

    def walk(self) -> Iterable[Domain]:
        yield self
        for child in self.children:
            yield from child.walk()


def validate_racks(brokers: Iterable[Broker]) -> int:
    """Check every rack path; return the depth (number of levels below the root)."""
    depths: dict[int, list[int]] = {}
    for broker in brokers:
        rack = broker.rack
        if rack is None or rack == "":
            raise InvalidRack(f"broker {broker.id} has no rack; the multi-level placer needs a rack path such as "
                              "/dc1/rack1 on every broker (or use the striped placer)")
        if not rack.startswith("/"):
            raise InvalidRack(f"broker {broker.id} has rack {rack!r}, which does not start with '/'; rack paths are "
                              "absolute, e.g. /dc1/rack1")
        levels = rack_levels(rack)
        if any(level == "" for level in levels):
            raise InvalidRack(f"broker {broker.id} has rack {rack!r} with an empty level; write /dc1/rack1")
        depths.setdefault(len(levels), []).append(broker.id)
    if len(depths) > 1:
        described = ", ".join(f"depth {d}: brokers {ids[:5]}{'...' if len(ids) > 5 else ''}"
                              for d, ids in sorted(depths.items()))
        raise InvalidRack(f"rack paths mix depths ({described}); every broker needs the same number of levels")
    return next(iter(depths), 0)


def build_tree(brokers: Iterable[Broker]) -> Domain:
    brokers = sorted(brokers, key=lambda b: b.id)
    validate_racks(brokers)
    root = Domain("/")
    index: dict[str, Domain] = {"/": root}
    for broker in brokers:
        parent = root
        path = ""
        for level in rack_levels(broker.rack or "/"):
            path = f"{path}/{level}"
            node = index.get(path)
            if node is None:
                node = index[path] = Domain(path)
                parent.children.append(node)
            parent = node
        parent.children.append(Domain(f"{path}#{broker.id}", broker=broker.id))
    _finish(root)
    return root


def _finish(node: Domain) -> int:
    if node.is_broker:
        node.capacity = 1
        return 1
    node.children.sort(key=lambda c: (c.broker if c.is_broker else -1, c.path))
    node.capacity = sum(_finish(child) for child in node.children)
    return node.capacity


def broker_paths(root: Domain) -> dict[int, tuple[Domain, ...]]:
    """For every broker, the domains from the root down to (and including) its leaf."""
    paths: dict[int, tuple[Domain, ...]] = {}

    def descend(node: Domain, trail: tuple[Domain, ...]) -> None:
        trail = (*trail, node)
        if node.is_broker:
            paths[node.broker] = trail  # type: ignore[index]
        for child in node.children:
            descend(child, trail)

    descend(root, ())
    return paths
