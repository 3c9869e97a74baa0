"""Automatic rebalancing when brokers join or are announced for removal: which brokers joined, and the request made
from the template of its mode."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from events import (
    RebalanceMode,
    RebalanceRequest,
)


def joined(known: Iterable[int] | None, alive: Iterable[int]) -> tuple[list[int], list[int]]:
    """(brokers that joined since ``known``, the new known set). On the very first look nothing has joined: the
    brokers there are the cluster as it was."""
    current = sorted(set(alive))
    if known is None:
        return [], current
    known_set = set(known)
    new = [b for b in current if b not in known_set]
    return new, sorted((known_set & set(current)) | set(new))


def scaling_request(direction: str, brokers: list[int], template: Mapping[str, object],
                    auto_approve: bool) -> RebalanceRequest:
    """An automatic rebalance from the mode's template (the options of a RebalanceRequest)."""
    mode = RebalanceMode.ADD_BROKERS if direction == "up" else RebalanceMode.REMOVE_BROKERS
    name = f"auto-{mode.value}-{'-'.join(map(str, brokers))}"
    return RebalanceRequest.model_validate({**template, "name": name, "mode": mode, "brokers": brokers,
                                            "auto_approve": auto_approve, "scaling": direction})
