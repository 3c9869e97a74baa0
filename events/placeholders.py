"""Placeholders: in an assignment Ballast keeps (``PlaceholderRecord``), a replica that cannot be placed yet is a
negative broker id (-1, -2, ... within a partition). The one place that knows it."""

from __future__ import annotations

from collections.abc import Iterable, Sequence


def placeholders(count: int) -> list[int]:
    """``count`` placeholders for one partition."""
    return [-(i + 1) for i in range(count)]


def is_placeholder(broker: int) -> bool:
    return broker < 0


def real(replicas: Iterable[int]) -> list[int]:
    """The replicas that are brokers, in order (placeholders left out)."""
    return [b for b in replicas if not is_placeholder(b)]


def count(assignment: Iterable[Sequence[int]]) -> int:
    """Placeholders in an assignment."""
    return sum(1 for replicas in assignment for b in replicas if is_placeholder(b))


def partitions_waiting(assignment: Iterable[Sequence[int]]) -> int:
    """Partitions with at least one placeholder."""
    return sum(1 for replicas in assignment if any(is_placeholder(b) for b in replicas))
