"""Creating topics in batches, as Kafka's own CreateTopics does: each topic placed in turn (a placement counts the
ones before it), its new replicas' log directories chosen, then one request for them all, with the directories sent
ahead so that no replica moves after (``ClusterAdmin.create_topics``); then the placements counted and on the bus
(``announce``)."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from events import TOPICS, PlaceholderRecord, encode
from events.limits import MAX_RECORD_BYTES
from services.adapters.admin import AdminError, ClusterAdmin, NewTopic
from services.common.logging import correlation, get_logger
from services.common.outbox import Outbox
from services.placement.model import PlacementError
from services.topic_reconciler import logic
from services.topic_reconciler.placing import Placing

log = get_logger(__name__)

# How many times a creation whose answer was lost looks for the topics before counting them not created.
IN_DOUBT_LOOKS = 3


@dataclass(frozen=True)
class Creation:
    """One topic to create, as its plan says, and where its records go."""

    action: logic.CreateTopic
    load_aware: bool
    correlation: str | None


@dataclass
class _Placed:
    topic: NewTopic
    placeholders: PlaceholderRecord | None


@dataclass
class Created:
    """What became of one creation: ``error`` None when the topic was created (``placeholders``: the record of the
    replicas it was created without, if any); ``sends``: the records on their way to the bus. ``placed``: what
    ``BatchCreator.announce`` counts and puts on the bus."""

    error: AdminError | PlacementError | None = None
    placeholders: PlaceholderRecord | None = None
    sends: list[asyncio.Future[Any]] = field(default_factory=list)
    placed: _Placed | None = field(default=None, repr=False)
    correlation: str | None = None


class BatchCreator:
    def __init__(self, admin: ClusterAdmin, placing: Placing, outbox: Outbox) -> None:
        self.admin = admin
        self.placing = placing
        self.outbox = outbox

    async def create(self, creations: list[Creation], *,
                     ahead: Callable[[list[str]], Awaitable[None]] | None = None) -> dict[str, Created]:
        """Each creation's outcome, by topic. A failure of the whole request (the cluster unreachable) is every
        topic's. ``ahead``: what must be on record before the request goes, given the topics placed (the others are
        not asked for)."""
        outcome: dict[str, Created] = {}
        placed: dict[str, _Placed] = {}
        answered: dict[str, AdminError | None] = {}
        # The brokers are read once for the batch, by its first placement (as fresh as the look that planned it):
        # thousands of placements one after the other need not ask thousands of times.
        brokers_read = False
        # The directories chosen for the batch's topics so far: the ledger counts a replica only once created
        # (``announce``), and each topic's choice must count the ones before it, or a burst of one-partition topics
        # lands in one directory of each broker.
        dirs_so_far: Counter[tuple[int, str]] = Counter()
        for creation in creations:
            with correlation(creation.correlation, topic=creation.action.name):
                try:
                    placed[creation.action.name] = one = await self._place(creation, brokers_read=brokers_read,
                                                                           dirs_so_far=dirs_so_far)
                    dirs_so_far.update((broker, path) for (_, broker), path in one.topic.log_dirs.items())
                    brokers_read = True
                except PlacementError as exc:  # the cluster was read: the topic cannot be placed on it
                    brokers_read = True
                    outcome[creation.action.name] = Created(error=exc)
                except AdminError as exc:
                    outcome[creation.action.name] = Created(error=exc)
        if placed:
            log.info("creating topics", topics=len(placed),
                     partitions=sum(len(p.topic.assignment) for p in placed.values()))
            try:
                answered = await self._create([p.topic for p in placed.values()],
                                              first=(lambda: ahead(list(placed))) if ahead is not None else None)
            except BaseException:
                for name in placed:
                    self.placing.view.forget(name)  # not asked for after all
                raise
        by_name = {c.action.name: c for c in creations}
        for name, one in placed.items():
            error = answered.get(name)
            if error is not None:
                self.placing.view.forget(name)  # placed in the view ahead of the answer: not there after all
                outcome[name] = Created(error=error)
                continue
            correlation_id = by_name[name].correlation
            sends = [] if one.placeholders is None else [
                await self.outbox.publish(TOPICS.placeholders, one.placeholders, correlation_id=correlation_id)]
            outcome[name] = Created(placeholders=one.placeholders, sends=sends, placed=one, correlation=correlation_id)
        return outcome

    async def announce(self, created: Mapping[str, Created]) -> list[asyncio.Future[Any]]:
        """The replicas of the topics ``create`` made, counted in their directories' usage and on the bus for the
        load aggregates. Apart from ``create``: the caller tells users first. (The placeholders went with the
        creation: they are the topic's own memory, which a restart needs.)"""
        sends: list[asyncio.Future[Any]] = []
        for one in created.values():
            if one.error is None and one.placed is not None:
                topic = one.placed.topic
                replicas = {p: list(r) for p, r in enumerate(topic.assignment)}
                sends.extend(await self.placing.announce(topic.name, "create", replicas, dict(topic.log_dirs),
                                                         correlation_id=one.correlation))
        return sends

    async def _create(self, topics: list[NewTopic], *,
                      first: Callable[[], Awaitable[None]] | None) -> dict[str, AdminError | None]:
        """One request for all (``first`` done before it goes); where the cluster refuses the request itself (too
        large, say), each topic alone, so that no topic's refusal is another's. A temporary failure is every topic's
        (the next resync tries again)."""
        done = False

        async def once() -> None:  # before whichever request goes first (one refused whole may not have run it)
            nonlocal done
            if first is not None and not done:
                await first()
                done = True

        try:
            return await self.admin.create_topics(topics, first=once)
        except AdminError as exc:
            if exc.temporary:
                return await self._in_doubt(topics, exc)
            if len(topics) == 1:
                return {t.name: exc for t in topics}
            log.warning("the cluster refused the creation request; creating each topic alone", topics=len(topics),
                        error=str(exc))
        outcome: dict[str, AdminError | None] = {}
        for topic in topics:
            try:
                outcome.update(await self.admin.create_topics([topic], first=once))
            except AdminError as exc:
                outcome[topic.name] = exc
        return outcome

    async def _in_doubt(self, topics: list[NewTopic], error: AdminError) -> dict[str, AdminError | None]:
        """A request whose answer was lost (the connection it went on closed: a broker killed, say) may still have
        been carried out: a topic the cluster now shows with the partitions asked for was created (its placement and
        placeholders are announced as for any other); the others failed with ``error``."""
        created: set[str] = set()
        for attempt in range(IN_DOUBT_LOOKS):  # a broker's metadata follows the controller's by moments
            try:
                shown = await self.admin.describe_topics([t.name for t in topics if t.name not in created],
                                                         replica_dirs=False)
            except AdminError:
                break
            created |= {t.name for t in topics if (d := shown.get(t.name)) is not None
                        and [list(p.replicas) for p in d.partitions] == [list(r) for r in t.assignment]}
            if len(created) == len(topics):
                break
            await asyncio.sleep(0.2 * (attempt + 1))
        if created:
            log.warning("creation answered with an error, yet the cluster shows the topics as asked: created",
                        topics=len(created), error=str(error))
        return {t.name: None if t.name in created else error for t in topics}

    async def _place(self, creation: Creation, *, brokers_read: bool,
                     dirs_so_far: Mapping[tuple[int, str], int]) -> _Placed:
        action = creation.action
        self.placing.view.forget(action.name)  # whatever the view remembers of a topic that is gone
        placed = await self.placing.place_topic(action.name, action.partitions, action.replication_factor,
                                                action.config, action.placer, action.min_required_replicas,
                                                load_aware=creation.load_aware, brokers_read=brokers_read)
        record = None
        if placed.placeholders:
            record = PlaceholderRecord(topic=action.name, replication_factor=action.replication_factor,
                                       assignment=placed.full, intended=placed.intended)
            if (size := len(encode(record))) > MAX_RECORD_BYTES:
                # Its memory of the placeholders would not fit on the bus: refuse rather than forget them.
                raise PlacementError(
                    f"too many partitions to create under-replicated: the record of its placeholders would "
                    f"take {size:,} bytes (at most {MAX_RECORD_BYTES:,}); create it once enough brokers are "
                    "alive, or with fewer partitions")
        dirs = await self.placing.ledger.choose(dict(enumerate(placed.assignment)), load_aware=creation.load_aware,
                                                placed_before=dirs_so_far)
        log.info("creating topic", partitions=action.partitions, replicas=action.replication_factor,
                 placer=action.placer or "default", placeholders=placed.placeholders, log_dirs=len(dirs))
        # The next topic of the batch is placed counting this one's replicas.
        self.placing.view.set_topic(action.name, placed.assignment)
        return _Placed(NewTopic(action.name, tuple(tuple(r) for r in placed.assignment), dict(action.config), dirs),
                       record)
