"""The replicas-change service's work: commands recorded as changes, batches sent to Cruise Control's
``topic_configuration``, tasks polled until the cluster has the target replication factor. Decisions are ``logic``'s
(and ``isolation``'s for refused requests); this executes them against Cruise Control, the cluster and the bus.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Collection, Sequence
from datetime import timedelta
from typing import Any

from events import TOPICS, ReplicasChangeBatch, ReplicasChangeCommand, ReplicasChangeRecord
from events.envelope import utcnow
from events.topics import BusTopic
from services.adapters.admin import AdminError, ClusterAdmin
from services.common.bus import DeadLetters
from services.adapters.cruise_control import ClusterModelNotReady, CruiseControlClient, CruiseControlError, MalformedAnswer
from services.common.logging import correlation, get_logger
from services.common.metrics import observe_since
from services.common.outbox import Outbox, send
from services.common.settings import ReplicasChangeSettings
from services.domain import replicas_change as contract
from services.adapters.cruise_control.models import OptimizationResult
from services.common.cordons import read_cordons
from services.replicas_change import cordon_hold, isolation, logic

log = get_logger(__name__)



# A dry run answered 202 (still computing) is asked again every DRY_RUN_FOLLOW_S, up to DRY_RUN_WAIT_S; then the batch
# waits for the next tick (the computing task is followed meanwhile, as every 202 is).
DRY_RUN_FOLLOW_S = 0.5
DRY_RUN_WAIT_S = 30.0

# Before it had a topic of its own, the batch record was kept on the state topic: an open one written by an earlier
# release is still settled after an upgrade.
LEGACY_BATCHES: BusTopic[ReplicasChangeBatch] = BusTopic(TOPICS.replicas_state.name, True, "", (ReplicasChangeBatch,))


class ReplicasChanges:
    def __init__(self, tuning: ReplicasChangeSettings, *, admin: ClusterAdmin, cruise_control: CruiseControlClient,
                 outbox: Outbox, dead_letters: DeadLetters) -> None:
        self.tuning = tuning
        self.admin = admin
        self.cc = cruise_control
        self.outbox = outbox
        self.dead_letters = dead_letters
        self.records: dict[str, ReplicasChangeRecord] = {}
        # The records not completed: what every timer tick looks at (all records would make each tick O(topics ever
        # changed)).
        self.in_flight: dict[str, ReplicasChangeRecord] = {}
        self._last_full_poll = 0.0
        self._last_follow = 0.0
        # For the latency metrics: when each topic's change was asked for (the command's time) and sent.
        self._asked_at: dict[str, float] = {}
        self._sent_at: dict[str, float] = {}
        self.correlations: dict[str, str] = {}
        self.ready = asyncio.Event()
        self._cc_lock = asyncio.Lock()
        self._retry = {"initial_s": tuning.retry_initial_s, "max_s": tuning.retry_max_s}
        # The batch of a request Cruise Control may or may not have taken (a crash mid-request, an answer that could
        # not be read): open until its task is looked up by the batch id the request carried as its reason.
        self._open_batch: ReplicasChangeBatch | None = None

    # -- timers --------------------------------------------------------------------------------------------------

    async def submit_tick(self) -> None:
        if self.ready.is_set():
            await self.submit_due()

    async def poll_tick(self) -> None:
        if not self.ready.is_set():
            return
        if not self.cc.can_ask_now:
            # The service's share of Cruise Control's tasks is in use: a look is never worth waiting for. A request
            # answered 202 holds it until its answer comes, which only following it brings.
            await self._follow_computing()
            return
        if time.monotonic() - self._last_full_poll >= self.tuning.poll_interval_s:
            await self.poll()
        elif logic.waiting_behind_our_execution(self.in_flight.values()):
            # Changes wait for our executing task to end: look more often, so they go as soon as it does.
            await self.poll(quick=True)

    async def _follow_computing(self) -> None:
        if time.monotonic() - self._last_follow < self.tuning.poll_interval_s:
            return
        self._last_follow = time.monotonic()
        async with self._cc_lock:
            for task_id in self.cc.computing:
                try:
                    answer = await self.cc.follow(task_id)
                except CruiseControlError as exc:
                    # Its answer is lost (a restart, an expired session): the next poll finds the task by its id.
                    log.info("cannot follow a computing task; polling it instead", task=task_id, error=exc.message)
                    continue
                if not answer.in_progress:
                    log.info("computing task answered", task=task_id)

    # -- steps -------------------------------------------------------------------------------------------------

    async def rebuild(self) -> None:
        """Rebuild memory from the compacted state topic, then settle submissions a crash left in doubt."""
        stored, batches, legacy = await asyncio.gather(
            self.outbox.read_compacted(TOPICS.replicas_state), self.outbox.read_compacted(TOPICS.replicas_batches),
            self.outbox.read_compacted(LEGACY_BATCHES))
        for key, item in stored.items():
            self._remember(item.decoded.event)
            self.correlations[key] = item.decoded.envelope.correlation_id
        found = batches.get(ReplicasChangeBatch.KEY) or legacy.get(ReplicasChangeBatch.KEY)
        batch = found.decoded.event if found is not None else None
        if batch is not None:
            for record in logic.reopen_batch(self.in_flight, batch):
                self._remember(record)
        self._open_batch = batch if batch is not None and batch.open else None
        while not await self._settle_in_doubt():
            await asyncio.sleep(self.tuning.poll_interval_s)
        log.info("rebuilt state", changes=len(self.records),
                 in_flight=len(self.in_flight))
        self.ready.set()

    async def on_command_events(self, events: Sequence[Any]) -> None:
        batch: list[ReplicasChangeCommand] = []
        for event in events:
            decoded = await self.dead_letters.decode_or_reject(event, TOPICS.replicas_commands)
            if decoded is None:
                continue
            self.correlations[decoded.event.topic] = decoded.envelope.correlation_id
            self._asked_at.setdefault(decoded.event.topic, decoded.envelope.time.timestamp())
            batch.append(decoded.event)
        if batch:
            await self.handle_commands(batch)

    async def handle_commands(self, commands: list[ReplicasChangeCommand]) -> None:
        try:
            actual = await self._actual_rf(sorted({c.topic for c in commands}))
        except AdminError as exc:
            # Unknown actual RF only means "not known to be done yet": the change is recorded as pending.
            log.warning("cannot read actual replication factors", error=str(exc))
            actual = {}
        changed = []
        for command in commands:
            with correlation(self.correlations.get(command.topic), topic=command.topic):
                record = contract.on_command(self.records.get(command.topic), command, utcnow(),
                                             actual.get(command.topic))
                if record is not None:
                    log.debug("replicas change requested", target=command.target_replicas, state=record.state)
                    self._remember(record)  # a later command for the same topic in this batch builds on it
                    changed.append(record)
        await self._publish(changed)

    async def submit_due(self) -> None:
        tuning = self.tuning
        now = utcnow()
        due = logic.due_for_submission(self.in_flight, now)
        if not logic.batch_ready(due, now, quiet=timedelta(seconds=tuning.batch_quiet_s),
                                 window=timedelta(seconds=tuning.batch_window_s)):
            return
        async with self._cc_lock:
            await self._submit_due_locked()

    async def _submit_due_locked(self, *, ended_sessions: Collection[str] = ()) -> None:
        """Send every due change in one request. The caller holds the Cruise Control lock; ``ended_sessions``: our
        tasks a poll has just seen end, whose changes are not yet recorded as such."""
        due = isolation.next_request(logic.due_for_submission(self.in_flight, utcnow(), ended_sessions=ended_sessions))
        scoped = self.tuning.optimization_scope == "batch"
        due = logic.fit_in_one_request(due, url_bytes=self.tuning.max_request_url_bytes if scoped else None)
        if not due:
            return
        groups = logic.group_by_target(due)
        held = await self._held_by_cordons(groups)
        if held is None:
            return  # Cruise Control or the cluster could not be asked now: the next tick asks again
        if held:
            due = [r for r in due if r.topic not in held]
            groups = logic.group_by_target(due)
        topics = [t for names in groups.values() for t in names]
        if not topics:
            return
        # One record before the request, not one per change: a crash mid-request leaves it open, and the restart
        # looks the task up by the batch id (the request's reason).
        batch = ReplicasChangeBatch(batch_id=f"ballast-{uuid.uuid4()}", topics=topics, created_at=utcnow())
        for record in logic.mark_submitting(due, batch.batch_id, utcnow()):
            self._remember(record)
        await self._write(batch)
        try:
            submission = await self.cc.topic_configuration(groups, reason=batch.batch_id, **self._scope(topics))
        except MalformedAnswer as exc:
            # Cruise Control answered, but whether it took the request cannot be read from the answer: in doubt, as
            # after a crash mid-request, until the next poll looks the task up by the batch id.
            log.warning("replicas change request answered unreadably; looking its task up", error=exc.message,
                        topics=len(topics))
            self._open_batch = batch
            await self._publish(logic.in_doubt(self.in_flight, topics, exc.message, utcnow()))
            return
        except CruiseControlError as exc:
            if exc.temporary:
                changed = logic.on_submit_failed(self.in_flight, topics, exc.message, utcnow(), **self._retry,
                                                 steady=isinstance(exc, ClusterModelNotReady))
                if exc.quiet or logic.said_already(self.in_flight, changed):
                    # Nothing new to say (a full servlet, a warm-up already reported): wait, without a record.
                    log.info("replicas change request failed; asking again shortly", error=exc.message)
                    for record in changed:
                        self._remember(record)
                else:
                    log.warning("replicas change request failed", error=exc.message, topics=len(topics))
                    await self._publish(changed)
                await self._close(batch)
                return
            refusal = isolation.pin(exc.detail or exc.message, groups, batch.batch_id)
            log.warning("replicas change request refused", error=exc.message, topics=len(topics),
                        culprits=len(refusal.culprits), split=refusal.halves is not None)
            await self._publish(isolation.on_refused(self.in_flight, refusal, topics, exc.message, utcnow(),
                                                     batch_id=batch.batch_id, **self._retry))
            await self._close(batch)
            return
        log.info("replicas change submitted", session_id=submission.task_id, topics=len(topics),
                 targets={rf: len(names) for rf, names in groups.items()})
        await self._publish(logic.on_submitted(self.in_flight, topics, submission.task_id, utcnow()))
        for topic in topics:
            if (asked := self._asked_at.pop(topic, None)) is not None:
                observe_since("spec_to_submission", asked)
            self._sent_at[topic] = time.time()
        await self._close(batch)

    async def _held_by_cordons(self, groups: dict[int, list[str]]) -> dict[str, list[int]] | None:
        """The topics held back because Cruise Control would put a new replica on a fully cordoned broker (their
        records say so); None: the whole batch waits (the cluster or Cruise Control could not be asked now).

        While some broker is fully cordoned and the batch adds replicas, the request about to be sent is asked as a
        dry run first; the topics its proposal puts on a cordoned broker are held and the rest asked again, until a
        dry run of exactly what is sent crosses nothing (without the held topics' replicas a cordoned, emptiest
        broker looks emptier still to the others)."""
        try:
            cordoned = (await read_cordons(self.admin)).fully_cordoned
            topics = [t for ts in groups.values() for t in ts]
            if not cordoned or not cordon_hold.increases(groups, await self._actual_rf(topics)):
                return {}
        except AdminError as exc:
            log.warning("cannot read the cluster's cordons; the batch waits", error=str(exc))
            return None
        held: dict[str, list[int]] = {}
        asked = {rf: list(names) for rf, names in groups.items()}
        while asked:
            try:
                answer = await self._dry_run(asked)
            except CruiseControlError as exc:
                if exc.temporary:
                    log.info("dry run for cordons not answered; asking again shortly", error=exc.message)
                    return None
                # Refused: what Cruise Control would do once it takes the request is not known, so nothing of it is
                # sent unchecked; the increases wait with the refusal said, and are asked again at their retry.
                log.info("dry run for cordons refused; the increases wait", error=exc.message)
                waiting = [t for ts in cordon_hold.increases(asked, await self._actual_rf(
                    [t for ts in asked.values() for t in ts])).values() for t in ts]
                await self._say_waiting(waiting, f"held: a broker is cordoned, and Cruise Control refused the dry run "
                                                 f"that checks where the new replicas would go: {exc.message}")
                held.update({t: [] for t in waiting})
                break
            if answer is None:
                return None
            crossing = cordon_hold.crossing(answer, cordoned)
            if not crossing:
                break
            in_batch = {t: brokers for t, brokers in crossing.items() if any(t in ts for ts in asked.values())}
            # Another topic's move (a whole-cluster optimization: optimization_scope=cluster) holds the whole request.
            hit = in_batch if len(in_batch) == len(crossing) else {
                t: sorted({b for bs in crossing.values() for b in bs}) for ts in asked.values() for t in ts}
            held.update(hit)
            asked = {rf: kept for rf, names in asked.items() if (kept := [t for t in names if t not in hit])}
        await self._say_held(held)
        return held

    async def _dry_run(self, groups: dict[int, list[str]]) -> OptimizationResult | None:
        """The request as a dry run with its moves (verbose); None when Cruise Control is still computing it after
        ``DRY_RUN_WAIT_S``."""
        topics = [t for ts in groups.values() for t in ts]
        answer = await self.cc.topic_configuration(groups, dryrun=True, verbose=True, **self._scope(topics))
        for _ in range(int(DRY_RUN_WAIT_S / DRY_RUN_FOLLOW_S)):
            if not answer.in_progress:
                break
            await asyncio.sleep(DRY_RUN_FOLLOW_S)
            answer = await self.cc.follow(answer.task_id)
        return answer.result

    async def _say_held(self, held: dict[str, list[int]]) -> None:
        """Held topics pending with the reason, asked again at their retry; a record only when the reason is new."""
        by_message: dict[str, list[str]] = {}
        for topic, brokers in held.items():
            if brokers:  # those without brokers were said already (a refused dry run)
                by_message.setdefault(cordon_hold.held_message(brokers), []).append(topic)
        for message, topics in by_message.items():
            log.warning("replicas change held: Cruise Control would use a cordoned broker", topics=len(topics),
                        message=message)
            await self._say_waiting(topics, message)

    async def _say_waiting(self, topics: list[str], message: str) -> None:
        changed = logic.on_submit_failed(self.in_flight, topics, message, utcnow(), **self._retry)
        news = [r for r in changed if (old := self.in_flight.get(r.topic)) is None or old.message != r.message]
        for record in changed:  # said already: only its retry time moved, no record for the bus
            if record not in news:
                self._remember(record)
        await self._publish(news)

    async def _settle_in_doubt(self) -> bool:
        """Changes whose request may or may not have reached Cruise Control: its topic_configuration tasks say, by
        the batch id the request carried as its reason. False when Cruise Control could not be asked."""
        in_doubt = [r for r in self.in_flight.values() if r.batch_id]
        if in_doubt:
            try:
                tasks = await self.cc.user_tasks(endpoints="topic_configuration")
            except CruiseControlError as exc:
                log.warning("cannot settle in-doubt submissions yet", error=exc.message, changes=len(in_doubt))
                return False
            await self._publish(logic.recover_in_doubt(self.in_flight, tasks.user_tasks, utcnow()))
        if self._open_batch is not None:
            await self._close(self._open_batch)
            self._open_batch = None
        return True

    async def _close(self, batch: ReplicasChangeBatch) -> None:
        """The batch's outcome is in its changes' records: nothing is in doubt any more."""
        await self._write(batch.model_copy(update={"open": False, "topics": []}))

    async def _write(self, batch: ReplicasChangeBatch) -> None:
        await send(self.outbox, TOPICS.replicas_batches, batch)

    async def poll(self, *, quick: bool = False) -> None:
        """Ask Cruise Control about every task we hold, and the cluster about the topics that needs. ``quick``: stop
        after the answer if none of our tasks has ended (nothing else can have changed for them)."""
        async with self._cc_lock:
            if not self.in_flight:
                return
            if not quick:
                self._last_full_poll = time.monotonic()
                await self._settle_in_doubt()
            sessions = {r.session_id for r in self.in_flight.values() if r.session_id}
            try:
                tasks = (await self.cc.user_tasks(sessions)).by_id() if sessions else {}
                ended = logic.ended_sessions(sessions, tasks)
                if quick and not ended:
                    return
                if ended:
                    # Our execution is over: what piled up behind it goes first, while Cruise Control is free, and
                    # the ended task's topics are looked at afterwards.
                    await self._submit_due_locked(ended_sessions=ended)
                actual = await self._actual_rf(logic.topics_to_check(self.in_flight, tasks, asked=sessions))
            except (CruiseControlError, AdminError) as exc:
                # Nothing is concluded from a failed poll: sessionIds stay as they are.
                log.warning("poll failed; will retry", error=str(exc))
                if not getattr(exc, "quiet", False):
                    await self._publish(logic.on_unreachable(self.in_flight, str(exc), utcnow()))
                return
            changed = logic.on_poll(self.in_flight, tasks, actual, utcnow(), asked=sessions, **self._retry)
            recorded = await self._send(changed)
            if any(r.state != logic.ONGOING for r in changed):
                # Changes back to pending (the target moved while the task ran, Cruise Control forgot it): send them
                # now if nothing of ours executes, before the outcome's records are even acknowledged (a crash
                # meanwhile only means polling that task again after the restart).
                await self._submit_due_locked()
            await asyncio.gather(*recorded)

    # -- helpers -----------------------------------------------------------------------------------------------

    def _scope(self, topics: Collection[str]) -> dict[str, Any]:
        return logic.optimization_params(topics, scope=self.tuning.optimization_scope, goals=self.tuning.batch_goals,
                                         rack_enabled=self.cc.settings.rack_enabled)

    def _remember(self, record: ReplicasChangeRecord) -> None:
        self.records[record.topic] = record
        if record.state == logic.COMPLETED:
            self.in_flight.pop(record.topic, None)
            self._asked_at.pop(record.topic, None)
            if (sent := self._sent_at.pop(record.topic, None)) is not None:
                observe_since("submission_to_completion", sent)
        else:
            self.in_flight[record.topic] = record

    async def _actual_rf(self, topics: list[str]) -> dict[str, int | None]:
        if not topics:
            return {}
        described = await self.admin.describe_topics(topics)
        # While Kafka still moves a topic's replicas its metadata lists old and new ones together (an RF raise looks
        # reached before the new replicas hold any data): nothing is concluded about it until the moves end.
        moving = {r.topic for r in await self.admin.list_reassignments(topics)}
        return {name: (d.replication_factor if d is not None else None) for name, d in described.items()
                if name not in moving}

    async def _publish(self, records: list[ReplicasChangeRecord]) -> None:
        """Remember the records and wait until the bus has them."""
        await asyncio.gather(*await self._send(records))

    async def _send(self, records: list[ReplicasChangeRecord]) -> list[asyncio.Future]:
        """Remember the records and hand them to the producer; the futures resolve once the bus has them."""
        futures = []
        for record in records:
            self._remember(record)
            futures.append(await self.outbox.publish(TOPICS.replicas_state, record,
                                                     correlation_id=self.correlations.get(record.topic)))
        return futures

