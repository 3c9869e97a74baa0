"""Replication-factor increases and cordons (KIP-1066), pure functions.

Cruise Control's ``topic_configuration`` takes no brokers to avoid (no ``destination_broker_ids``, and it knows no
cordons): while a broker has every log directory cordoned, the increases of a batch are first asked as a dry run, and
a topic whose proposal adds a replica to such a broker is held (pending, said, asked again later) rather than sent.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping

from services.adapters.cruise_control.models import OptimizationResult


def increases(groups: Mapping[int, Iterable[str]], actual: Mapping[str, int | None]) -> dict[int, list[str]]:
    """The part of a batch (target RF -> topics) that adds replicas; a topic whose RF is not known counts as one."""
    found = {rf: [t for t in topics if (now := actual.get(t)) is None or now < rf] for rf, topics in groups.items()}
    return {rf: topics for rf, topics in found.items() if topics}


def crossing(result: OptimizationResult, cordoned: frozenset[int]) -> dict[str, list[int]]:
    """Topic -> the fully cordoned brokers its proposal adds a replica to (from the verbose proposal's movements)."""
    onto: dict[str, set[int]] = defaultdict(set)
    for proposal in result.proposals or []:
        added = set(proposal.get("newReplicas", ())) - set(proposal.get("oldReplicas", ()))
        if hit := added & cordoned:
            onto[str((proposal.get("topicPartition") or {}).get("topic", ""))] |= hit
    return {topic: sorted(brokers) for topic, brokers in onto.items() if topic}


def held_message(brokers: Iterable[int]) -> str:
    named = ", ".join(map(str, sorted(set(brokers))))
    return (f"held: Cruise Control's proposal puts new replicas on broker(s) {named}, whose log directories are all "
            "cordoned (its topic_configuration takes no brokers to avoid); asked again later, and sent once its "
            "proposal keeps off cordoned brokers or the cordon is lifted")
