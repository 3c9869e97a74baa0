"""The placer interface and the registry of placers by name."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

from services.placement.model import Assignment, ClusterView, PlacementError, PlacementSpec
from services.placement.multi_level import MultiLevelPlacer
from services.placement.striped import StripedPlacer


class ReplicaPlacer(Protocol):
    name: str

    def place(self, spec: PlacementSpec, cluster: ClusterView, broker_ids: Iterable[int] | None = None
              ) -> Assignment | None:
        """Partition -> replicas (leader first) for ``spec``, or ``None`` to defer to the default placer."""
        ...


PLACERS: dict[str, type] = {StripedPlacer.name: StripedPlacer, MultiLevelPlacer.name: MultiLevelPlacer}
DEFAULT_PLACER = StripedPlacer.name


def placer_named(name: str, seed: int | None = None) -> ReplicaPlacer:
    try:
        return PLACERS[name](seed)
    except KeyError:
        raise PlacementError(f"unknown placer {name!r}; choose one of {', '.join(sorted(PLACERS))}") from None


def place(spec: PlacementSpec, cluster: ClusterView, placer: ReplicaPlacer, broker_ids: Iterable[int] | None = None,
          seed: int | None = None) -> Assignment:
    """Run ``placer``; when it defers (returns ``None``), the default placer decides."""
    broker_ids = list(broker_ids) if broker_ids is not None else None
    assignment = placer.place(spec, cluster, broker_ids)
    if assignment is None:
        assignment = placer_named(DEFAULT_PLACER, seed).place(spec, cluster, broker_ids)
    return assignment
