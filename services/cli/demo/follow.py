"""What both demos do with topic specs: apply a scenario's specs, then follow the status topic, printing each
transition, until the specs are reflected."""

from __future__ import annotations

import time
from collections.abc import Callable
from importlib import resources

from rich.console import Console

from events import conditions
from events import TOPICS, TopicSpec, TopicStatus
from services.cli.demo.patience import Patience
from services.cli.manifests import load_specs
from services.common.wording import transition_line
from services.common import busio
from services.common.settings import BusSettings


def scenario(name: str) -> list[TopicSpec]:
    text = resources.files("services.local").joinpath("scenarios", name).read_text()
    return load_specs(text, name)


def apply(bus: BusSettings, specs: list[TopicSpec]) -> None:
    busio.publish(bus, TOPICS.specs, specs)


def settled(latest: dict[str, TopicStatus], specs: list[TopicSpec]) -> bool:
    for spec in specs:
        status = latest.get(spec.name)
        if status is None or not status.ready or status.replicas != spec.replicas:
            return False
        if status.replicas_change is not None and status.replicas_change.state != "completed":
            return False
    return True


def under_replicated(latest: dict[str, TopicStatus], specs: list[TopicSpec]) -> bool:
    return all((s := latest.get(spec.name)) is not None and s.condition(conditions.UNDER_REPLICATED) is not None
               for spec in specs)


# Partition -> last offset printed, so a later step does not print the earlier steps' transitions again.
Seen = dict[int, int]


def _same(previous: TopicStatus, status: TopicStatus) -> bool:
    """Nothing worth a line: the same status, conditions of the same kinds."""
    return previous.model_dump(exclude={"conditions"}) == status.model_dump(exclude={"conditions"}) and [
        c.type for c in previous.conditions] == [c.type for c in status.conditions]


def follow(console: Console, bus: BusSettings, specs: list[TopicSpec], latest: dict[str, TopicStatus],
           patience: Patience, until: Callable[[dict[str, TopicStatus], list[TopicSpec]], bool] = settled,
           seen: Seen | None = None) -> bool:
    """Print status transitions as they happen until ``until`` holds (default: every spec is reflected); False when
    no status changed for the patience's while."""
    seen = seen if seen is not None else {}
    for record, status in busio.records_with_events(bus, TOPICS.status, follow=True, deadline=patience.deadline):
        if record.offset <= seen.get(record.partition, -1):
            continue
        seen[record.partition] = record.offset
        previous = latest.get(status.topic)
        if previous is not None and _same(previous, status):
            latest[status.topic] = status
            continue
        latest[status.topic] = status
        patience.moved()
        console.print(f"[dim]{time.strftime('%H:%M:%S')}[/dim]  {transition_line(status, previous)}", soft_wrap=True)
        if until(latest, specs):
            return True
    return until(latest, specs)
