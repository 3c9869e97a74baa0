"""Nearest-replica selection for follower fetching on multi-level racks (KIP-879's replica selector), as Ballast's
own tools reason about it; the brokers run the same rule as a real plugin, ``jvm/replica-selector``.

A consumer in rack ``/dc1/r2`` should fetch from a replica in ``/dc1/r2`` if there is one, else anywhere in ``/dc1``,
else anywhere. Among equally near replicas the choice is spread evenly by a stable hash of the client id, so many
consumers of one partition do not all land on the same follower.
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping, Sequence

from services.placement.rack_tree import rack_levels
from events import placeholders as placeholder


def shared_levels(a: str, b: str) -> int:
    """How many leading rack levels two rack paths share (``/dc1/r1`` and ``/dc1/r2`` share 1)."""
    shared = 0
    for x, y in zip(rack_levels(a), rack_levels(b)):
        if x != y:
            break
        shared += 1
    return shared


def nearest_replica(client_rack: str | None, replicas: Sequence[int], rack_of: Mapping[int, str | None],
                    client_id: str = "", alive: set[int] | None = None) -> int | None:
    """The replica to fetch from, or ``None`` when no replica is usable. Without a client rack, the leader (first)."""
    usable = [b for b in placeholder.real(replicas) if alive is None or b in alive]
    if not usable:
        return None
    if not client_rack:
        return usable[0]
    nearness = {b: shared_levels(client_rack, rack_of.get(b) or "/") for b in usable}
    best = max(nearness.values())
    nearest = [b for b in usable if nearness[b] == best]
    if len(nearest) == 1:
        return nearest[0]
    return nearest[zlib.crc32(client_id.encode()) % len(nearest)]
