"""The topic reconciler's work on the cluster: compare each topic's spec with the cluster, act through the admin
port (placing replicas through ``placing``), ask the replicas-change service for replication-factor changes, and
publish every status that changed. Decisions are ``logic``'s (and ``refusals``': when a topic the cluster refused is
acted on again); this executes them."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from events import conditions
from events import TOPICS, Condition, ReplicasChangeCommand, ReplicasChangeRecord, ReplicasChangeState, TopicSpec
from services.adapters.admin import AdminError, ClusterAdmin, TopicDefaults, TopicDescription
from services.common.logging import correlation, get_logger
from services.common.metrics import DRIFT
from services.common.outbox import Outbox
from services.common.settings import ReconcilerSettings
from services.domain.policy import Policy
from services.placement.model import PlacementError
from services.topic_reconciler import logic, refusals
from services.topic_reconciler.creating import BatchCreator, Creation
from services.topic_reconciler.memory import Memory, TopicMemory, kept
from services.topic_reconciler.placing import Placing
from services.topic_reconciler.status import StatusPublisher

log = get_logger(__name__)
Sends = list[asyncio.Future[Any]]
# Topics handled per hold of the reconciler's lock by resyncs and replicas-change records: spec events wait for the
# lock, and a task's end brings hundreds of completed changes (each described and given a status) at once.
CHUNK = 200
# A real Kafka may describe a topic just created or grown without it for a moment: ask again up to this often.
DESCRIBE_AGAIN_ATTEMPTS = 6
# Topics created but not shown yet after those tries (a broker shows a creation only once it has created the logs
# of the ones before it: minutes, for thousands of topics on a busy machine) are looked at again once they show:
# asked after this long at first, then twice as long each time up to the most, for at most the last.
UNSEEN_FIRST_WAIT_S = 0.5
UNSEEN_MAX_WAIT_S = 5.0
UNSEEN_GIVE_UP_S = 900.0


@dataclass
class Planned:
    """One topic's plan, between planning and acting (``creates``: the topic to create, done in a batch with the
    others of the look)."""

    name: str
    topic: TopicMemory
    spec: TopicSpec | None
    plan: logic.Plan
    alive: int | None
    now: datetime
    may_act: bool

    @property
    def creates(self) -> logic.CreateTopic | None:
        if not self.may_act:
            return None
        return next((a for a in self.plan.actions if isinstance(a, logic.CreateTopic)), None)


@dataclass(frozen=True)
class Look:
    """What one read of the cluster says of a topic: its description (None: it does not exist), its effective spec
    (``logic.effective_spec``; None for a spec whose new topic needs the cluster's defaults, unread), and how many of
    its partitions are being reassigned (asked only where the replica count differs from the spec's)."""

    actual: TopicDescription | None
    spec: TopicSpec | None
    moving: int = 0


class Reconciler:
    def __init__(self, admin: ClusterAdmin, outbox: Outbox, placing: Placing, clock: Callable[[], datetime], *,
                 fence: Callable[[Iterable[str]], set[str]], settings: ReconcilerSettings | None = None,
                 policy: Callable[[], Policy] | None = None,
                 steward: Callable[[str, str | None], str | None] = lambda name, owner: None) -> None:
        self.admin = admin
        self.settings = settings or ReconcilerSettings()
        # The policy in force now (it follows edits of the policy file).
        self.policy = policy
        self.outbox = outbox
        self.placing = placing
        self.creator = BatchCreator(admin, placing, outbox)
        self.memory = Memory()
        self.statuses = StatusPublisher(outbox, clock, steward)
        self._now = clock
        # Which of these topics this instance may act on now (its shards; see ``intake``).
        self._fence = fence
        # Brokers alive at the last look (None before the first).
        self.alive_brokers: set[int] | None = None
        self.lock = asyncio.Lock()
        # Topics created here that the cluster does not show yet -> the partitions they were created with; not
        # created again meanwhile (the cluster would refuse it: the topic exists), looked at again once shown.
        self.unseen: dict[str, int] = {}
        self._watching: asyncio.Task[None] | None = None

    async def resync(self, names: Iterable[str] | None = None) -> None:
        """Reconcile every topic specified (or these), a chunk per lock hold: with thousands of topics one pass takes
        seconds, and live spec and change events must not wait behind it. The topics to create are created after, in
        one batch as a burst's are: chunk by chunk, each chunk's directories would wait for the brokers to create the
        logs of the chunk before (seconds a chunk, after a lost lease in the middle of thousands of creations)."""
        ordered = sorted(names) if names is not None else self.memory.specified()
        to_create: list[str] = []
        for start in range(0, len(ordered), CHUNK):
            to_create.extend(await self.reconcile(ordered[start:start + CHUNK], create=False))
        if to_create:
            # Looked at again in the batch: a spec event may have created or changed them meanwhile.
            await self.reconcile(to_create)

    async def reconcile(self, names: list[str], *, create: bool = True) -> list[str]:
        """Compare desired with actual for these topics, act, and publish every status that changed. Without
        ``create``, the topics to create are left as they are and named in the answer."""
        async with self.lock:
            names = sorted(self._fence(names))
            if not names:
                return []
            try:
                looks = await self._look(names)
            except AdminError as exc:
                log.warning("cannot read the cluster; will retry at the next resync", error=str(exc))
                return []
            sends: Sends = []
            policy = self.policy() if self.policy is not None else None
            creating: dict[str, Planned] = {}
            for name in names:
                topic = self.memory[name]
                actual = looks[name].actual
                if logic.absence_unconfirmed(topic.spec, topic.actual, actual, topic.absent_once):
                    topic.absent_once = True
                    with correlation(topic.correlation, topic=name):
                        log.info("topic not shown by the cluster; acted on if the next look agrees")
                    continue
                topic.absent_once = False
                topic.described, topic.actual = True, actual
                with correlation(topic.correlation, topic=name):
                    try:
                        planned = await self._plan_one(name, topic, looks[name], policy, sends)
                        if planned is not None and planned.creates:
                            creating[name] = planned  # created with the others below, in one request
                        elif planned is not None:
                            sends.extend(await self._act_and_finish(planned))
                    except Exception as exc:  # noqa: BLE001 - one topic's failure never stops the others
                        log.exception("reconcile failed; will retry at the next resync")
                        sends.extend(await self._report_failure(name, topic, exc))
            if creating and create:
                sends.extend(await self._create_all(creating))
        # The records are queued in order; waiting for their acknowledgements outside the lock lets the next batch of
        # specs be handled meanwhile (the caller still returns, and its offsets commit, only once they are durable).
        await asyncio.gather(*sends)
        return [] if create else sorted(creating)

    async def _look(self, names: list[str]) -> dict[str, Look]:
        """One read of the cluster for these topics: their descriptions, the topic defaults where a spec leaves a new
        topic's counts to the cluster, and the reassignments of those whose replica count differs from the spec's."""
        described = await self.admin.describe_topics(names, replica_dirs=False)
        defaults = await self._defaults([n for n in names if logic.needs_defaults(self.memory.spec(n),
                                                                                  described.get(n))])
        effective = {n: logic.effective_spec(self.memory.spec(n), described.get(n), self.memory[n].placeholders,
                                             defaults) for n in names}
        moving = await self._moving({n: d for n, d in described.items()
                                     if d is not None and logic.replicas_in_question(effective[n], d)})
        return {n: Look(described.get(n), effective[n], moving.get(n, 0)) for n in names}

    async def _defaults(self, needing: list[str]) -> TopicDefaults | None:
        """The cluster's topic defaults, read once for the topics about to be created from specs that leave their
        partitions or replicas to the cluster; None when none needs them or they cannot be read now."""
        if not needing:
            return None
        try:
            return await self.admin.topic_defaults()
        except AdminError as exc:
            log.warning("cannot read the cluster's topic defaults; those topics are created at the next resync",
                        topics=len(needing), error=str(exc))
            return None

    async def _without_defaults(self, name: str, topic: TopicMemory) -> Sends:
        """A new topic whose spec leaves partitions or replicas to the cluster, whose defaults could not be read."""
        error = refusals.temporary("cannot read the cluster's topic defaults (num.partitions, "
                                   "default.replication.factor) for a spec that leaves them to the cluster")
        topic.outcome = (error, [])
        return await self.statuses.publish(name, topic, error=error, warnings=[])

    async def _moving(self, topics: dict[str, TopicDescription]) -> dict[str, int]:
        """How many partitions of each of these topics are being reassigned now. Where that cannot be told, every
        partition counts as moving: the replication factor waits for the next resync rather than being misjudged."""
        if not topics:
            return {}
        try:
            reassignments = await self.admin.list_reassignments(sorted(topics))
        except AdminError as exc:
            log.warning("cannot read the reassignments in progress; replication factors judged at the next resync",
                        topics=len(topics), error=str(exc))
            return {name: actual.partition_count for name, actual in topics.items()}
        moving: dict[str, int] = {}
        for reassignment in reassignments:
            moving[reassignment.topic] = moving.get(reassignment.topic, 0) + 1
        return moving

    async def _report_failure(self, name: str, topic: TopicMemory, exc: Exception) -> Sends:
        """A topic whose reconcile raised (a bug, or an adapter error no one expected) says so in its status."""
        error = f"internal error: {type(exc).__name__}: {exc}"
        topic.outcome = (error, [])
        try:
            return await self.statuses.publish(name, topic, error=error, warnings=[])
        except Exception:  # noqa: BLE001 - the log above has it; the next resync tries again
            log.exception("cannot publish the failure's status")
            return []

    async def _plan_one(self, name: str, topic: TopicMemory, look: Look, policy: Policy | None,
                        sends: Sends) -> Planned | None:
        """What to do for one topic now (filling placeholders on the way); None when nothing is left to do or say."""
        spec = look.spec
        if spec is None and topic.spec is not None:
            sends.extend(await self._without_defaults(name, topic))
            return None
        if spec is None and topic.actual is None and topic.status is not None and topic.status.deleted:
            return None  # deletion done and reported
        count = logic.differing_count(spec, topic.actual, look.moving)
        count_seen_before, topic.differing_count = topic.differing_count == count, count
        if logic.waiting_for_brokers(topic.placeholders, topic.actual, spec):
            await self._fill_placeholders(name, topic, sends)
        alive = len(self.alive_brokers) if self.alive_brokers is not None else None
        topic.origin = logic.origin_now(topic.origin, spec, topic.actual)
        plan = logic.plan(spec, topic.actual, topic.change, topic.placeholders, alive, topic.origin,
                          applied=logic.spec_applied(topic.status, topic.generation), drift_mode=self.settings.drift,
                          policy=policy, moving=look.moving, config_ownership=self.settings.config_ownership,
                          count_seen_before=count_seen_before,
                          cordoned_brokers=len(self.placing.view.fully_cordoned & (self.alive_brokers or set())))
        now = self._now()
        if name in self.unseen:
            # Created here and not shown yet: creating it again would be refused (it exists); its status says
            # Creating until the cluster shows it (``_watch_unseen``).
            plan.actions = [a for a in plan.actions if not isinstance(a, logic.CreateTopic)]
        may_act = refusals.may_act(topic.refusal, topic.generation, plan.actions, now)
        return Planned(name, topic, spec, plan, alive, now, may_act)

    async def _act_and_finish(self, planned: Planned) -> Sends:
        sends: Sends = []
        if planned.may_act:
            acted = planned.plan.actions
            error = await self._act(planned.topic, acted, sends, planned.now)
        else:
            # The same request would be refused again: the topic keeps the refusal's message until its next attempt.
            assert planned.topic.refusal is not None
            acted, error = [], planned.topic.refusal.message
        await self._after_acting(planned, acted)
        return sends + await self._finish(planned, error)

    async def _create_all(self, creating: dict[str, Planned]) -> Sends:
        """The topics to create, in one request (``creating``), then each one's status."""
        sends: Sends = []
        began = time.monotonic()
        created = await self.creator.create([
            Creation(p.creates, load_aware=_load_aware(p.topic), correlation=p.topic.correlation)
            for p in creating.values() if p.creates is not None],
            ahead=lambda placed: self._declare_creations({name: creating[name] for name in placed}))
        errors: dict[str, str | None] = {}
        for name, planned in creating.items():
            outcome = created[name]
            sends.extend(outcome.sends)
            with correlation(planned.topic.correlation, topic=name):
                planned.topic.origin = logic.origin_after_creation(outcome.error)
                if outcome.error is None:
                    # A record still open from the topic as it was before (deleted outside Ballast) is not this
                    # topic's: closed, with nothing announced (the creation announces its own replicas).
                    stale = planned.topic.placeholders if outcome.placeholders is None else None
                    planned.topic.placeholders = outcome.placeholders
                    if stale is not None and stale.placeholders:
                        sends.append(await self.placing.close(stale, correlation_id=planned.topic.correlation))
                errors[name] = self._settle(planned.topic, [(planned.creates, outcome.error)] if outcome.error
                                            else [], planned.now)
        made = {n: p.creates.partitions for n, p in creating.items() if created[n].error is None and p.creates}
        placed_and_created = time.monotonic()
        if unseen := await self._describe_created(made):
            log.info("topics created but not shown by the cluster yet; looked at again once they are",
                     topics=len(unseen))
            self.unseen.update(unseen)
            if self._watching is None or self._watching.done():
                self._watching = asyncio.get_running_loop().create_task(self._watch_unseen())
        described = time.monotonic()
        for name, planned in creating.items():
            with correlation(planned.topic.correlation, topic=name):
                acted = [planned.creates] if created[name].error is None and planned.creates is not None else []
                await self._after_acting(planned, acted, described=True)
                sends.extend(await self._finish(planned, errors[name]))
        # The statuses on the bus, then the placements counted and announced (for the load aggregates): users wait on
        # the statuses, and the placements of thousands of topics keep the event loop, and the producer's sends with
        # it, busy for a while.
        await asyncio.gather(*sends)
        statuses_sent = time.monotonic()
        sends.extend(await self.creator.announce(created))
        # Where a batch's time went (BENCHMARKS.md's creation profile reads these).
        log.info("topics created", topics=len(creating), created=len(made), unseen=len(unseen),
                 creating_s=round(placed_and_created - began, 3), describing_s=round(described - placed_and_created, 3),
                 statuses_s=round(statuses_sent - described, 3),
                 announcing_s=round(time.monotonic() - statuses_sent, 3))
        return sends

    async def _declare_creations(self, creating: dict[str, Planned]) -> None:
        """Identity before side effect: each topic placed and about to be created is Ballast's in its status
        ("creating topic", origin ``created``) on the bus before the request goes. A kill -9 after the cluster made it
        and before its ready status leaves that record, and the restarted reconciler finds the topic and keeps it
        Ballast's (withdrawing its spec deletes it), where it would otherwise take it for a topic someone else
        made."""
        sends: Sends = []
        for name, planned in creating.items():
            planned.topic.origin = "created"
            with correlation(planned.topic.correlation, topic=name):
                sends.extend(await self.statuses.publish(name, planned.topic, error=None,
                                                         warnings=planned.plan.warnings))
        await asyncio.gather(*sends)

    async def _after_acting(self, planned: Planned, acted: list[logic.Action], *, described: bool = False) -> None:
        """What the plan's drift says, and the topic read again where an action changed its partitions (``described``:
        read already, with the other topics created at once)."""
        topic, plan = planned.topic, planned.plan
        if plan.drift is not None:
            self._drift_found(topic, plan, plan.drift)
        elif topic.drift is not None and topic.drift[0] == topic.generation:
            plan.warnings.append(topic.drift[1])  # corrected earlier: said until the spec changes
        if any(isinstance(a, logic.CreateTopic | logic.DeleteTopic | logic.CreatePartitions) for a in acted):
            if not described:
                await self._describe_again(planned.name, topic, expect=_expected_partitions(plan.actions))
            topic.origin = logic.origin_now(topic.origin, planned.spec, topic.actual)
            if topic.placeholders is not None and any(isinstance(a, logic.CreateTopic) for a in acted):
                plan.warnings.append(logic.under_replicated_condition(topic.placeholders, planned.alive))

    async def _finish(self, planned: Planned, error: str | None) -> Sends:
        """The placeholders' record closed once filled, and the status."""
        topic, name = planned.topic, planned.name
        sends: Sends = []
        if logic.placeholders_filled(topic.placeholders, topic.actual, planned.spec):
            assert topic.placeholders is not None and topic.actual is not None
            filled = logic.filled_without_ballast(topic.placeholders, topic.actual)
            # Closed first, as a fill of Ballast's own does: a stop between the two then loses a count rather than
            # doubling it. Replicas that filled them some other way are placements all the same, for the load
            # aggregates to count (where they are now: nothing moves).
            sends.append(await self._close_placeholders(topic))
            if filled:
                sends.extend(await self.placing.announce(name, "fill-placeholders", filled, {},
                                                         correlation_id=topic.correlation))
        topic.outcome = (error, planned.plan.warnings)
        sends.extend(await self.statuses.publish(name, topic, error=error, warnings=planned.plan.warnings))
        return sends

    def _drift_found(self, topic: TopicMemory, plan: logic.Plan, drift: Condition) -> None:
        """Say what was changed outside Ballast: every correction (each is an action on the cluster), a report when
        it first differs."""
        corrected = drift.reason == "Corrected"
        previous = topic.status.condition(conditions.DRIFT) if topic.status is not None else None
        if corrected:
            topic.drift = (topic.generation, drift)
        elif previous is not None and previous.message == drift.message:
            return
        log.warning("drift corrected" if corrected else "drift found", kinds=list(plan.drift_kinds),
                    detail=drift.message)
        for kind in plan.drift_kinds:
            DRIFT.labels(kind=kind, action="corrected" if corrected else "reported").inc()

    async def _act(self, topic: TopicMemory, actions: list[logic.Action], sends: Sends, now: datetime) -> str | None:
        """Carry out ``actions``; the status's error when one failed (``_settle``)."""
        failed: list[tuple[logic.Action, AdminError | PlacementError]] = []
        for action in actions:
            try:
                sends.extend(await self._execute(topic, action))
            except (AdminError, PlacementError) as exc:
                failed.append((action, exc))
        return self._settle(topic, failed, now)

    def _settle(self, topic: TopicMemory, failed: list[tuple[logic.Action, AdminError | PlacementError]],
                now: datetime) -> str | None:
        """The status's error for the actions that failed, if any. A permanent refusal is remembered, for the topic
        to wait out (``refusals``); anything else (a temporary failure; a placement, which brokers returning or
        joining may allow) is tried again at the next resync."""
        error: str | None = None
        refused: list[logic.Action] = []
        failure = ""
        for action, exc in failed:
            said = f"{type(action).__name__} failed: {exc}"
            if isinstance(exc, AdminError) and not exc.temporary:
                refused.append(action)
                failure = said
            else:
                error = refusals.temporary(said) if isinstance(exc, AdminError) else said
                log.warning("reconcile action failed; retried at the next resync", action=type(action).__name__,
                            error=str(exc))
        if not refused:
            topic.refusal = None
            return error
        topic.refusal = refusals.refused(topic.refusal, refused, failure, topic.generation, now,
                                         initial_s=self.settings.retry_initial_s, max_s=self.settings.retry_max_s)
        log.warning("reconcile action refused by the cluster; not asked again until the backoff has passed or the "
                    "spec changes", actions=[type(a).__name__ for a in refused], error=failure,
                    attempts=topic.refusal.attempts, next_attempt_at=topic.refusal.next_attempt_at.isoformat())
        return topic.refusal.message

    async def _describe_created(self, expect: dict[str, int]) -> dict[str, int]:
        """The topics just created, read again together until each shows the partitions it was created with (a real
        Kafka's brokers learn of them moments after its controller), for a few tries at most; those still not shown
        (or not read)."""
        waiting = dict(expect)
        for attempt in range(DESCRIBE_AGAIN_ATTEMPTS):
            if not waiting:
                return waiting
            try:
                described = await self.admin.describe_topics(sorted(waiting), replica_dirs=False)
            except AdminError as exc:
                log.warning("cannot read the topics just created; will read them again", topics=len(waiting),
                            error=str(exc))
                return waiting
            for name, actual in described.items():
                self.memory[name].actual = actual
                if actual is not None and actual.partition_count >= waiting[name]:
                    del waiting[name]
            if waiting and attempt < DESCRIBE_AGAIN_ATTEMPTS - 1:
                await asyncio.sleep(0.05 * (attempt + 1))
        return waiting

    async def _watch_unseen(self) -> None:
        """Read the topics created but not shown yet, outside the lock, at growing intervals; look at each again
        (``reconcile``: its status says ready) as soon as the cluster shows it. One the cluster has not shown for
        ``UNSEEN_GIVE_UP_S`` is left to the resync (which creates it again if it is not there)."""
        wait, began = UNSEEN_FIRST_WAIT_S, self._now()
        while self.unseen:
            await asyncio.sleep(wait)
            wait = min(wait * 2, UNSEEN_MAX_WAIT_S)
            try:
                described = await self.admin.describe_topics(sorted(self.unseen), replica_dirs=False)
            except AdminError as exc:
                log.warning("cannot read the topics created but not shown yet; will retry", error=str(exc))
                continue
            shown = logic.shown(self.unseen, {n: d.partition_count if d is not None else 0
                                              for n, d in described.items()})
            if shown:
                wait = UNSEEN_FIRST_WAIT_S  # the cluster is catching up: the rest may show soon
                # Still unseen while looked at: each read asks whichever broker is least loaded, and one that has not
                # caught up yet would show the topic absent, to be created again (and its replicas moved between
                # directories). A topic stays watched until the reconcile's own look has shown it.
                await self.reconcile(shown)
                looked = {n: actual.partition_count for n in shown if (actual := self.memory[n].actual) is not None}
                withdrawn = [n for n in shown if self.memory.spec(n) is None]  # nothing left to wait for
                for name in [*logic.shown(self.unseen, looked), *withdrawn]:
                    self.unseen.pop(name, None)
            if (self._now() - began).total_seconds() > UNSEEN_GIVE_UP_S and self.unseen:
                log.warning("topics created but still not shown by the cluster; left to the resync",
                            topics=len(self.unseen))
                self.unseen.clear()

    async def _describe_again(self, name: str, topic: TopicMemory, *, expect: int | None) -> None:
        """``expect``: the partitions a create or growth just asked for. A real Kafka answers from each broker's
        metadata, which follows the controller's by moments: ask again briefly until it shows them."""
        for attempt in range(DESCRIBE_AGAIN_ATTEMPTS):
            try:
                topic.actual = (await self.admin.describe_topics([name], replica_dirs=False)).get(name)
            except AdminError as exc:
                log.warning("cannot read the topic after changing it; the next resync will", error=str(exc))
                return
            seen = topic.actual.partition_count if topic.actual is not None else 0
            if expect is None or seen >= expect or attempt == DESCRIBE_AGAIN_ATTEMPTS - 1:
                return
            await asyncio.sleep(0.05 * (attempt + 1))

    async def _execute(self, topic: TopicMemory, action: logic.Action) -> Sends:
        match action:
            case logic.CreateTopic():
                raise AssertionError("topics are created in batches (_create_all)")
            case logic.DeleteTopic(name):
                log.info("deleting topic")
                await self.admin.delete_topic(name)
                self.placing.view.forget(name)
                return [await self._close_placeholders(topic)] if topic.placeholders is not None else []
            case logic.CreatePartitions(name, total, rf, existing, placer):
                self.placing.view.set_topic(name, existing)
                assignment = await self.placing.place(name, total - len(existing), rf, placer,
                                                      load_aware=_load_aware(topic))
                new_replicas = {len(existing) + i: r for i, r in enumerate(assignment)}
                # Their directories go with the creation (as a new topic's): nothing moves between directories after.
                dirs = await self.placing.ledger.choose(new_replicas, load_aware=_load_aware(topic))
                log.info("adding partitions", total=total, placer=placer or "default", log_dirs=len(dirs))
                await self.admin.create_partitions(name, total, assignment=assignment, log_dirs=dirs)
                self.placing.view.add_partitions(name, assignment)
                return await self.placing.announce(name, "add-partitions", new_replicas, dirs,
                                                   correlation_id=topic.correlation)
            case logic.AlterConfig(name, config):
                await self.admin.alter_configs(name, config)
            case logic.RequestReplicasChange(name, target):
                command = ReplicasChangeCommand(topic=name, target_replicas=target, generation=topic.generation)
                log.info("requesting replicas change", target=target)
                sent = await self.outbox.publish(TOPICS.replicas_commands, command, correlation_id=topic.correlation)
                if expected := logic.expected_change(topic.change, action, command.generation, self._now()):
                    topic.change = expected  # until the replicas-change service's own record arrives
                return [sent]
        return []

    async def _fill_placeholders(self, name: str, topic: TopicMemory, sends: Sends) -> None:
        assert topic.placeholders is not None
        filled = await self.placing.fill(name, topic.placeholders, load_aware=_load_aware(topic),
                                         correlation_id=topic.correlation)
        if filled is None:
            return
        topic.placeholders = None if filled.record.filled else filled.record
        sends.extend(filled.sends)
        try:
            topic.actual = (await self.admin.describe_topics([name], replica_dirs=False)).get(name)
        except AdminError as exc:
            log.warning("cannot read the topic after filling placeholders; the next resync will", error=str(exc))

    async def _close_placeholders(self, topic: TopicMemory) -> asyncio.Future[Any]:
        assert topic.placeholders is not None
        record, topic.placeholders = topic.placeholders, None
        return await self.placing.close(record, correlation_id=topic.correlation)

    async def on_change_records(self, records: list[ReplicasChangeRecord]) -> None:
        """Publish the status after the last replicas-change transition of each topic in this batch (transitions
        that arrive within the same few milliseconds would only be overtaken at once). Only a completed change
        alters the cluster, so only those topics are described again; the others reuse the last description."""
        managed = {r.topic for r in records if self.memory.spec(r.topic) is not None}
        if not managed:
            for record in records:
                self.memory[record.topic].change = kept(record)
            return
        async with self.lock:
            managed = self._fence(managed)  # a handover may have paused this instance meanwhile
            stale = sorted({r.topic for r in records if r.topic in managed and
                            (r.state == ReplicasChangeState.COMPLETED or not self.memory[r.topic].described)})
            if stale:
                try:
                    for name, actual in (await self.admin.describe_topics(stale, replica_dirs=False)).items():
                        self.memory[name].described, self.memory[name].actual = True, actual
                        if actual is not None:
                            # Cruise Control placed replicas: the placer counts them from now on, not only once
                            # its view of the cluster is read again.
                            self.placing.view.set_topic(name, [p.replicas for p in actual.partitions])
                except AdminError as exc:
                    log.warning("cannot read the cluster; statuses wait for the next resync", error=str(exc))
            for record in records:
                self.memory[record.topic].change = kept(record)
            sends: Sends = []
            for name in dict.fromkeys(r.topic for r in records):
                topic = self.memory[name]
                if name in managed and topic.described:
                    sends.extend(await self.statuses.publish(name, topic, error=topic.outcome[0],
                                                             warnings=_still_holding(topic)))
        await asyncio.gather(*sends)
        # Only a finished change whose target is no longer the spec's needs more work now (the spec moved on while
        # it ran); everything else is already reflected, and the resync timer catches drift.
        follow_up = sorted({r.topic for r in records if r.state == ReplicasChangeState.COMPLETED
                            and (spec := self.memory.spec(r.topic)) is not None and spec.replicas is not None
                            and spec.replicas != r.target_replicas})
        await self.reconcile(follow_up)

    async def refresh_placement_reads(self) -> None:
        """Read again the whole cluster's figures that placements used past their age
        (``services.topic_reconciler.freshness``), beside the batches: without the lock, which they take, and only
        while no batch holds it (the next tick otherwise). Every topic's metadata decoded and every log directory's
        replicas summed took the reconciler's CPU and the brokers' from a batch of 295 creations that came as the timer
        fired: its placing and AlterReplicaLogDirs took 1.5 s, 0.5 s in the runs around it."""
        if self.lock.locked():
            return
        await self.placing.refresh_due()

    async def observe_brokers(self, *, record_news: bool) -> None:
        """Note brokers never seen before (and record them on the bus when ``record_news``); when one joins or
        returns, fill the placeholders waiting for it."""
        look = self.placing.observed.look_begins()
        try:
            described = await self.admin.brokers()
        except AdminError as exc:
            log.warning("cannot read the cluster's brokers; will retry", error=str(exc))
            return
        news = self.placing.observed.observe(described, look)
        if news and record_news:
            log.info("brokers observed", brokers={b.id: b.rack for b in news})
            await asyncio.gather(*[await self.outbox.publish(TOPICS.observed_brokers, b) for b in news])
        self.placing.view.set_brokers(described)
        alive = {b.id for b in described if b.alive}
        # A cordon set by anyone, or a directory failed, is known within one look.
        await self.placing.view.read_directories(sorted(alive))
        came = alive - self.alive_brokers if self.alive_brokers is not None else set()
        self.alive_brokers = alive
        if came and (waiting := self.memory.with_placeholders()):
            log.info("brokers joined or returned; filling placeholders", brokers=sorted(came), topics=len(waiting))
            await self.reconcile(waiting)


def _expected_partitions(actions: list[logic.Action]) -> int | None:
    for action in actions:
        if isinstance(action, logic.CreateTopic):
            return action.partitions
        if isinstance(action, logic.CreatePartitions):
            return action.total
    return None


def _still_holding(topic: TopicMemory) -> list[Any]:
    """The last reconcile's warnings, less what held a change back once Cruise Control has taken it."""
    warnings = topic.outcome[1]
    if topic.change is not None and topic.change.state != ReplicasChangeState.PENDING:
        warnings = [w for w in warnings if w.type != conditions.REPLICAS_CHANGE_BLOCKED]
    return warnings


def _load_aware(topic: TopicMemory) -> bool:
    return topic.spec is None or topic.spec.load_aware
