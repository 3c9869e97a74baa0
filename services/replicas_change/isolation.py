"""One impossible change must not hold back the changes batched with it.

Cruise Control validates a whole ``topic_configuration`` request before it executes any of it: one target RF above
the alive brokers, or one topic deleted meanwhile, refuses every change in the request. So when a multi-topic
request is refused (``RequestRejected``), the refusal is pinned on the topics it is about, and only they wait:
- Cruise Control's message names them (an RF group, a pattern that matched nothing): those topics keep the message
  and back off; the rest are sent again at once without them;
- the message names a state of the whole cluster (offline replicas) or says everything is already done: every
  change in the request shares it, as it should;
- otherwise the request is split in two and each half sent on its own, again and again, until the refused changes
  are alone (a half that Cruise Control accepts simply executes).

A change being isolated carries its ``group`` label in its record (so a restart goes on where it was): changes of
one group are only ever sent together, never with others. Labels: ``rf:N`` (named by an RF refusal), ``<batch>.a``
/ ``<batch>.b`` (halves), ``solo:<topic>`` (a change refused on its own, sent alone from then on).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from events import ReplicasChangeRecord
from services.adapters.cruise_control.topic_names import topic_regex
from services.common.retry import backoff
from services.replicas_change.logic import PENDING

# Cruise Control's own messages (RunnableUtils and UpdateTopicConfigurationRunnable in its source).
_NO_MATCH = re.compile(r"There is no topic in cluster matching pattern '(?P<regex>.*)'\.")
_RF_GROUP = re.compile(r"Unable to change replication factor (?:\(RF\) )?of topics \[[^\]]*\] "
                       r"to (?P<rf>\d+) since")
_CLUSTER_WIDE = ("has offline replicas on brokers", "already have target replication factor",
                 "All brokers are dead in the cluster")


@dataclass(frozen=True)
class Refusal:
    """Which topics of a refused request the refusal is about: ``culprits`` keep its message and back off;
    ``halves`` (when nothing is named) are the two groups to try apart. Everything else is sent again at once."""

    culprits: frozenset[str]
    label: str | None = None
    halves: tuple[tuple[str, ...], tuple[str, ...]] | None = None


def pin(detail: str, groups: Mapping[int, Sequence[str]], batch_id: str) -> Refusal:
    """Read Cruise Control's refusal of a request carrying ``groups`` (target RF -> topics)."""
    topics = sorted(t for names in groups.values() for t in names)
    text = detail or ""
    if any(marker in text for marker in _CLUSTER_WIDE) or len(topics) <= 1:
        return Refusal(culprits=frozenset(topics))
    if found := _NO_MATCH.search(text):
        for rf, names in groups.items():
            if topic_regex(names) == found.group("regex"):
                return Refusal(culprits=frozenset(names), label=f"rf:{rf}")
    if found := _RF_GROUP.search(text):
        rf = int(found.group("rf"))
        if rf in groups:
            return Refusal(culprits=frozenset(groups[rf]), label=f"rf:{rf}")
    middle = len(topics) // 2
    return Refusal(culprits=frozenset(), halves=(tuple(topics[:middle]), tuple(topics[middle:])))


def next_request(due: Iterable[ReplicasChangeRecord]) -> list[ReplicasChangeRecord]:
    """The changes the next request carries: every change not being isolated, or else one isolated group."""
    due = list(due)
    free = [r for r in due if r.group is None]
    if free:
        return free
    if not due:
        return []
    first = min(r.group for r in due if r.group is not None)
    return [r for r in due if r.group == first]


def on_refused(records: Mapping[str, ReplicasChangeRecord], refusal: Refusal, topics: Iterable[str], message: str,
               now: datetime, *, batch_id: str, initial_s: float, max_s: float) -> list[ReplicasChangeRecord]:
    """The records after a refusal: culprits keep ``message`` and back off as failed requests do; halves get
    their labels; the others go back to the queue as they were, to be sent again at once."""
    changed = []
    halves = refusal.halves or ((), ())
    for topic in topics:
        record = records.get(topic)
        if record is None or record.state != PENDING:
            continue
        update: dict[str, object] = {"batch_id": None, "updated_at": now}
        if topic in refusal.culprits:
            if refusal.label is not None:
                group = refusal.label
            elif len(refusal.culprits) == 1:
                group = f"solo:{topic}"  # refused on its own: from now on it is always sent alone
            else:
                group = None  # the whole request, for a reason of the cluster's: they all wait alike
            attempts = record.attempts + 1
            update |= {"message": message, "attempts": attempts, "group": group,
                       "next_attempt_at": now + backoff(attempts, initial_s=initial_s, max_s=max_s)}
        elif topic in halves[0] or topic in halves[1]:
            update |= {"group": f"{batch_id}.{'a' if topic in halves[0] else 'b'}", "next_attempt_at": None}
        else:
            update |= {"group": None, "next_attempt_at": None}
        changed.append(record.model_copy(update=update))
    return changed
