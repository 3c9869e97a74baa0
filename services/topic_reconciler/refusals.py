"""When the topic reconciler acts again on a topic whose action the cluster refused (pure rules).

The cluster-admin port sorts its failures into temporary and permanent ones (``services/adapters/admin/port.py``). A
temporary failure is tried again at the next resync, as any topic not there yet is. A permanent refusal would only be
refused again at every resync: the topic waits the one backoff (``services.common.retry.backoff``), longer after each
refusal, in case the cluster changed meanwhile (ACLs granted, a policy relaxed), and its status keeps the refusal's
message. A new spec generation is acted on at once (the new spec may well be accepted), and so is a plan that no
longer holds what was refused (the cluster changed under it: a topic deleted or created by someone else meanwhile).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from services.common.retry import backoff
from services.topic_reconciler.logic import Action


@dataclass(frozen=True)
class Refusal:
    """The cluster's last permanent refusal of actions on a topic."""

    actions: tuple[Action, ...]  # what it refused
    message: str  # the status's error while the topic waits
    attempts: int  # refusals in a row, of this generation
    next_attempt_at: datetime
    generation: int  # the spec generation refused


def may_act(refusal: Refusal | None, generation: int, planned: Sequence[Action], now: datetime) -> bool:
    """Whether the reconciler may carry out ``planned`` on a topic now: nothing was refused, the backoff has passed,
    the spec changed since, or the plan no longer asks for anything refused."""
    return (refusal is None or refusal.generation != generation or now >= refusal.next_attempt_at
            or not any(action in planned for action in refusal.actions))


def refused(previous: Refusal | None, actions: Sequence[Action], failure: str, generation: int, now: datetime, *,
            initial_s: float, max_s: float) -> Refusal:
    """The refusal after the cluster refused ``actions`` (``failure``: what failed, in the cluster's words), with its
    next attempt; a refusal of a new generation starts the backoff over."""
    attempts = previous.attempts + 1 if previous is not None and previous.generation == generation else 1
    at = now + backoff(attempts, initial_s=initial_s, max_s=max_s)
    message = (f"{failure} (refused: tried again after {at.strftime('%Y-%m-%dT%H:%M:%SZ')}, or at once when the spec "
               "changes)")
    return Refusal(tuple(actions), message, attempts, at, generation)


def temporary(failure: str) -> str:
    """The status's error for a failure the cluster may not repeat: it is tried again at the next resync."""
    return f"{failure} (temporary: tried again at the next resync)"
