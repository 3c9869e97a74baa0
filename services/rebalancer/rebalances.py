"""The rebalancer's shared state and its step timer: requests, actions and scaling signals taken in, every rebalance
moved one step at a tick (``logic.next_move``); statuses rebuilt from the compacted status topic. The brokers timer
(``observers``) works on the same state. Decisions are ``logic``'s; this executes them against Cruise Control, the
cluster and the bus.
"""

from __future__ import annotations

import asyncio
import time
from collections import defaultdict
from datetime import timedelta
from collections.abc import Callable, Sequence
from typing import Any

from events import conditions
from events import (
    TOPICS,
    BrokerRemovalRequested,
    BrokerStatus,
    KnownBrokers,
    RebalanceAction,
    RebalanceMode,
    RebalanceRequest,
    RebalanceStatus,
    ThrottleStatus,
)
from events import InvalidEvent, decode
from events.envelope import utcnow
from events.throttle import BrokerThrottle
from events.topics import not_ours
from services.adapters.admin import INTRA_BROKER_THROTTLE, AdminError, ClusterAdmin, Unsupported
from services.adapters.admin.port import answering_log_dirs
from services.common.bus import DeadLetters, raw_bytes
from services.adapters.cruise_control import CruiseControlClient, CruiseControlError
from services.adapters.cruise_control.client import Submission
from services.adapters.cruise_control.models import OptimizationResult
from services.adapters.cruise_control.options import OptimizationOptions
from services.common.logging import correlation, get_logger
from services.common.outbox import Outbox, send
from services.common.recent_load import RecentLoad
from services.common.settings import RebalancerSettings
from services.common.cordons import read_cordons
from services.domain.cordons import Cordons
from services.rebalancer import (
    cordon_check,
    disks,
    execution,
    logic,
    proposals,
    replication_throttle,
    scale_down,
    scaling,
)
from services.rebalancer.statuses import EXECUTING, TERMINAL, S, with_throttles
from services.rebalancer.logic import Step
from services.rebalancer.observers import removal_check

log = get_logger(__name__)



def options_of(request: RebalanceRequest, *, dryrun: bool, reason: str | None = None,
               destinations: tuple[int, ...] = ()) -> OptimizationOptions:
    return OptimizationOptions(destination_broker_ids=destinations,
        goals=tuple(request.goals), skip_hard_goal_check=request.skip_hard_goal_check,
        excluded_topics=request.excluded_topics,
        concurrent_partition_movements_per_broker=request.concurrent_partition_movements_per_broker,
        concurrent_leader_movements=request.concurrent_leader_movements,
        replication_throttle=request.replication_throttle, rebalance_disk=request.rebalance_disk,
        concurrent_intra_broker_partition_movements=request.concurrent_intra_broker_partition_movements,
        # The dry run asks for the load before the proposal too (per-broker load before / after in the status); a
        # throttled execution for its moves, which say where Cruise Control puts the throttle (replication_throttle).
        verbose=dryrun or bool(request.replication_throttle), reason=reason)


class Rebalances:
    def __init__(self, tuning: RebalancerSettings, *, admin: ClusterAdmin, cruise_control: CruiseControlClient,
                 outbox: Outbox, dead_letters: DeadLetters) -> None:
        self.tuning = tuning
        self.admin = admin
        self.cc = cruise_control
        self.outbox = outbox
        self.dead_letters = dead_letters
        self.statuses: dict[str, RebalanceStatus] = {}
        self.correlations: dict[str, str] = {}
        self.known_brokers: list[int] | None = None
        self.broker_statuses: dict[int, BrokerStatus] = {}
        self.recent_load = RecentLoad(timedelta(minutes=5))
        self.throttles: list[BrokerThrottle] = []  # the throttle controller's latest rates
        # Set by the service's start once the memory is rebuilt and the brokers looked at a first time.
        self.ready = asyncio.Event()
        # One lock per rebalance: an action never interleaves with a step on the same rebalance.
        self._locks: defaultdict[str, asyncio.Lock] = defaultdict(asyncio.Lock)
        # Rebalances whose next step waits after a failure retried without a word (a full servlet): until when.
        self._quiet_until: dict[str, float] = {}

    # -- timers --------------------------------------------------------------------------------------------------

    async def tick_when_ready(self) -> None:
        if self.ready.is_set():
            await self.tick()

    # -- agents' handlers: each takes a batch of records and may be called again on any part of it ------------

    async def on_request_events(self, events: Sequence[Any]) -> None:
        for event in events:
            decoded = await self.dead_letters.decode_or_reject(event, TOPICS.rebalance_requests)
            if decoded is not None and (reason := not_ours(decoded.event)):
                await self.dead_letters.reject(event, reason)
            elif decoded is not None:
                self.correlations[decoded.event.name] = decoded.envelope.correlation_id
                await self.on_request(decoded.event)

    async def on_action_events(self, events: Sequence[Any]) -> None:
        for event in events:
            decoded = await self.dead_letters.decode_or_reject(event, TOPICS.rebalance_actions)
            if decoded is None:
                continue
            if decoded.event.name not in self.statuses:
                await self.dead_letters.reject(event, f"no rebalance named {decoded.event.name!r}")
                continue
            await self.on_action(decoded.event)

    async def on_scaling_events(self, events: Sequence[Any]) -> None:
        for event in events:
            decoded = await self.dead_letters.decode_or_reject(event, TOPICS.scaling)
            if decoded is not None and isinstance(decoded.event, BrokerRemovalRequested):
                await self.on_removal_requested(decoded.event)

    async def on_throttle_events(self, events: Sequence[Any]) -> None:
        """The throttle controller's rates: shown in the status of every rebalance that executes. Its topic is the
        controller's: a record that is not its status is skipped, not dead-lettered."""
        for event in events:
            raw = raw_bytes(event.value)
            try:
                decoded = decode(raw, topic=TOPICS.throttle_status) if raw is not None else None
            except InvalidEvent:
                continue
            if decoded is not None and isinstance(decoded.event, ThrottleStatus):
                self.throttles = decoded.event.brokers
        for name, status in list(self.statuses.items()):
            if with_throttles(status, self.throttles) is not None:
                await self.change(name, lambda s: with_throttles(s, self.throttles))

    # -- memory ------------------------------------------------------------------------------------------------

    async def rebuild(self) -> None:
        stored = await self.outbox.read_compacted(TOPICS.rebalance_status)
        for name, item in stored.items():
            self.statuses[name] = item.decoded.event
            self.correlations[name] = item.decoded.envelope.correlation_id
        scaling = await self.outbox.read_compacted(TOPICS.scaling)
        for item in (await self.outbox.read_compacted(TOPICS.broker_status)).values():
            if isinstance(item.decoded.event, BrokerStatus):
                self.broker_statuses[item.decoded.event.broker] = item.decoded.event
        known = scaling.get(KnownBrokers().key)
        if known is not None and isinstance(known.decoded.event, KnownBrokers):
            self.known_brokers = known.decoded.event.brokers
        log.info("rebuilt state", rebalances=len(self.statuses),
                 in_flight=sum(1 for s in self.statuses.values() if s.state not in TERMINAL))

    # -- what the observers share (observers.shared.Shared) -----------------------------------------------------

    def lock(self, name: str) -> asyncio.Lock:
        return self._locks[name]

    async def publish(self, status: RebalanceStatus | None) -> None:
        if status is None:
            return
        status = with_throttles(status, self.throttles) or status
        self.statuses[status.name] = status
        await send(self.outbox, TOPICS.rebalance_status, status, correlation_id=self.correlations.get(status.name))
        log.info("rebalance status", rebalance=status.name, state=status.state.value, message=status.message)

    async def change(self, name: str, change: Callable[[RebalanceStatus], RebalanceStatus | None]) -> None:
        async with self._locks[name]:
            current = self.statuses.get(name)
            if current is not None:
                await self.publish(change(current))

    # -- inputs ------------------------------------------------------------------------------------------------

    async def on_request(self, request: RebalanceRequest) -> None:
        with correlation(self.correlations.get(request.name), rebalance=request.name):
            async with self._locks[request.name]:
                await self.publish(logic.on_request(self.statuses.get(request.name), request, utcnow()))

    async def on_action(self, action: RebalanceAction) -> None:
        with correlation(self.correlations.get(action.name), rebalance=action.name):
            log.info("rebalance action", action=action.action)
            default = self.tuning.approval_max_drift_percent
            await self.change(action.name, lambda s: logic.on_action(
                s, action, utcnow(), max_drift_percent=logic.drift_limit(s.request, default)))

    async def on_removal_requested(self, removal: BrokerRemovalRequested) -> None:
        auto = self.tuning.auto
        request = scaling.scaling_request("down", removal.brokers, auto.remove_brokers, auto_approve=auto.enabled)
        if request.name not in self.statuses:
            log.info("brokers announced for removal", brokers=removal.brokers, auto_approve=auto.enabled)
            await send(self.outbox, TOPICS.rebalance_requests, request)

    # -- the step timer ----------------------------------------------------------------------------------------

    async def tick(self) -> None:
        for name in list(self.statuses):
            if self._quiet_until.get(name, 0.0) > time.monotonic():
                continue
            if not self.cc.can_ask_now:
                return  # the service's share of Cruise Control's tasks is in use: the next tick goes on
            async with self._locks[name]:
                status = self.statuses[name]
                with correlation(self.correlations.get(name), rebalance=name):
                    try:
                        await self._step(status)
                    except (CruiseControlError, AdminError) as exc:
                        # Caught here so one rebalance's trouble never stops the others' steps.
                        log.warning("rebalance step failed", error=str(exc))
                    except Exception:  # noqa: BLE001 - a bug in one rebalance's step must not stop the others'
                        log.exception("rebalance step failed unexpectedly; retried at the next tick")

    async def _step(self, status: RebalanceStatus) -> None:
        if status.cruise_control_throttle is not None and status.state not in EXECUTING:
            status = await self._clear_replication_throttle(status)
        if status.state in TERMINAL and status.intra_throttled_brokers:
            await self._clear_intra_throttle(status)
            return
        move = logic.next_move(status, [s for s in self.statuses.values() if s.name != status.name], utcnow())
        if move.step is None:
            await self.publish(move.status)
            return
        steps = {Step.PROPOSE: self._propose, Step.CHECK: self._check, Step.EXECUTE: self._execute,
                 Step.POLL: self._poll, Step.STOP: self._stop}
        await steps[move.step](status)

    def _retry(self, status: RebalanceStatus, error: CruiseControlError) -> RebalanceStatus | None:
        """The status after a failed request; None when it is retried without a word (the step only waits)."""
        if logic.quiet(status, error):
            log.info("Cruise Control request failed; asking again shortly", error=error.message,
                     state=status.state.value)
            self._quiet_until[status.name] = time.monotonic() + self.tuning.retry_initial_s
            return None
        log.warning("Cruise Control request failed", error=error.message, state=status.state.value)
        return logic.on_failure(status, error, utcnow(), initial_s=self.tuning.retry_initial_s,
                                max_s=self.tuning.retry_max_s)

    async def _cordons(self, status: RebalanceStatus) -> tuple[Cordons, list[int]] | None:
        """The cluster's cordons and its alive brokers, read now; None when the request cannot be met without a
        cordoned place (then refused: published here)."""
        alive = [b.id for b in await self.admin.brokers() if b.alive]
        cordons = await read_cordons(self.admin, alive)
        if (refused := cordon_check.refusal(status.request, cordons, alive)) is not None:
            await self.publish(logic.refused(status, refused, utcnow()))
            return None
        return cordons, alive

    async def _crossings(self, result: OptimizationResult | None, cordons: Cordons) -> list[str]:
        """Where the proposal crosses cordons (``cordon_check``), with the cordoned directories' replicas read from
        the cluster when it moves replicas between a broker's directories."""
        if result is None:
            return []
        counts: dict[tuple[int, str], int] = {}
        if cordon_check.needs_dir_figures(result, cordons):
            described = await answering_log_dirs(self.admin, sorted(cordons.partly_cordoned))  # with the replicas
            counts = {(d.broker, d.path): sum(1 for r in d.replicas if not r.is_future) for d in described}
        return cordon_check.crossings(result, cordons, counts)

    async def _submit(self, status: RebalanceStatus, *, dryrun: bool, brokers: list[int] | None = None,
                      reason: str | None = None, cordons: tuple[Cordons, list[int]] | None = None) -> Submission:
        request = status.request
        destinations = cordon_check.destinations(request, *cordons) if cordons is not None else ()
        options = options_of(request, dryrun=dryrun, reason=reason, destinations=destinations)
        task_id = status.session_id if dryrun else None
        if request.mode == RebalanceMode.FULL:
            return await self.cc.rebalance(options, dryrun=dryrun, task_id=task_id)
        chosen = brokers if brokers is not None else request.brokers
        if request.mode == RebalanceMode.ADD_BROKERS:
            return await self.cc.add_broker(chosen, options, dryrun=dryrun, task_id=task_id)
        if request.mode == RebalanceMode.FIX_OFFLINE_REPLICAS:
            return await self.cc.fix_offline_replicas(options, dryrun=dryrun, task_id=task_id)
        if request.mode == RebalanceMode.REMOVE_DISKS:
            return await self.cc.remove_disks({d.broker: d.log_dirs for d in status.removed_log_dirs},
                                              dryrun=dryrun, reason=reason, task_id=task_id)
        return await self.cc.remove_broker(chosen, options, dryrun=dryrun, task_id=task_id)

    async def _propose(self, status: RebalanceStatus) -> None:
        begun = proposals.begin_proposal(status, utcnow())
        await self.publish(begun)
        status = begun or status
        if status.request.mode == RebalanceMode.REMOVE_DISKS and not status.removed_log_dirs:
            resolved = await self._resolve_disks(status)
            if resolved is None:
                return
            status = resolved
        if (cordons := await self._cordons(status)) is None:
            return
        try:
            submission = await self._submit(status, dryrun=True, cordons=cordons)
        except CruiseControlError as exc:
            await self.publish(self._retry(status, exc))
            return
        crossed = await self._crossings(submission.result, cordons[0])
        await self.publish(proposals.on_proposal(status, submission.task_id, submission.result, utcnow(), crossed))

    async def _check(self, status: RebalanceStatus) -> None:
        """An approved proposal asked again (or, after Cruise Control forgot an execution, a new one for what is
        left): the approval stands only if it has not drifted past the limit."""
        brokers = await self._brokers_still_there(status)
        if brokers == []:
            return
        if (cordons := await self._cordons(status)) is None:
            return
        try:
            submission = await self._submit(status, dryrun=True, brokers=brokers, cordons=cordons)
        except CruiseControlError as exc:
            await self.publish(self._retry(status, exc))
            return
        limit = logic.drift_limit(status.request, self.tuning.approval_max_drift_percent)
        crossed = await self._crossings(submission.result, cordons[0])
        checked = proposals.on_check(status, submission.task_id, submission.result, utcnow(),
                                     max_drift_percent=limit if limit is not None else float("inf"), crossed=crossed)
        if checked.condition(conditions.PROPOSAL_CHANGED) is not None:
            log.warning("approval refused: the proposal drifted", message=checked.message)
        await self.publish(checked)

    async def _resolve_disks(self, status: RebalanceStatus) -> RebalanceStatus | None:
        """The directories a remove-disks request names, from the brokers' own list; None when refused."""
        brokers = [d.broker_id for d in status.request.move_replicas_off_volumes]
        described = await self.admin.describe_log_dirs(brokers)
        dirs: dict[int, list[str]] = {}
        for d in described:
            dirs.setdefault(d.broker, []).append(d.path)
        try:
            removed = disks.resolve_disk_removal(status.request, dirs)
        except ValueError as exc:
            await self.publish(logic.refused(status, str(exc), utcnow()))
            return None
        resolved = status.model_copy(update={"removed_log_dirs": removed, "updated_at": utcnow()})
        await self.publish(resolved)
        return resolved

    async def _set_intra_throttle(self, status: RebalanceStatus) -> RebalanceStatus:
        alive = [b.id for b in await self.admin.brokers() if b.alive]
        brokers = disks.intra_throttle_brokers(status, alive)
        if not brokers:
            return status
        # Recorded before it is set: a crash in between still takes it off afterwards.
        if set(brokers) - set(status.intra_throttled_brokers):
            status = status.model_copy(update={
                "intra_throttled_brokers": sorted(set(brokers) | set(status.intra_throttled_brokers)),
                "updated_at": utcnow()})
            await self.publish(status)
        rate = str(status.request.intra_broker_throttle)
        try:
            for broker in brokers:
                await self.admin.alter_broker_configs(broker, {INTRA_BROKER_THROTTLE: rate})
        except Unsupported as exc:  # the simulator's cluster: nothing to throttle, moves take simulated time
            log.info("intra-broker throttle not supported by this cluster", reason=str(exc))
            return status
        log.info("intra-broker throttle set", brokers=brokers, bytes_per_s=rate)
        return status

    async def _clear_intra_throttle(self, status: RebalanceStatus) -> None:
        alive = {b.id for b in await self.admin.brokers() if b.alive}
        for broker in status.intra_throttled_brokers:
            if broker in alive:  # a broker gone took its dynamic config with it
                try:
                    await self.admin.alter_broker_configs(broker, {INTRA_BROKER_THROTTLE: None})
                except Unsupported:
                    break
        log.info("intra-broker throttle removed", brokers=status.intra_throttled_brokers)
        await self.publish(status.model_copy(update={"intra_throttled_brokers": [], "updated_at": utcnow()}))

    async def _clear_replication_throttle(self, status: RebalanceStatus) -> RebalanceStatus:
        """What Cruise Control's replication throttle left for this rebalance, removed once nothing may still use it
        (``replication_throttle``); returns the status as it now is."""
        throttle = status.cruise_control_throttle
        assert throttle is not None
        executing = [s.name for s in self.statuses.values()
                     if s.name != status.name and s.state in EXECUTING and not s.deleted]
        if replication_throttle.why_wait(throttle, executing=executing) is not None:
            return status  # looked at once that one has finished (reading the cluster every tick till then: no)
        alive = {b.id: b.alive for b in await self.admin.brokers()}
        try:
            brokers = {b: await self.admin.broker_configs(b) for b in throttle.brokers if alive.get(b)}
            topics = await self.admin.topic_configs(replication_throttle.topics(throttle))
        except Unsupported:  # the simulator's cluster keeps no throttles
            return await self._published(status, replication_throttle.not_supported(status, utcnow()))
        controllers = {t.broker for t in self.throttles if t.kind == "inter-broker" and t.owner == "ballast"}
        left = replication_throttle.removal(throttle, brokers, topics, controllers)
        if not left.empty:
            moving = {(r.topic, r.partition)
                      for r in await self.admin.list_reassignments(replication_throttle.topics(throttle))}
            reason = replication_throttle.why_wait(throttle, moving=moving)
            if reason is None:
                try:
                    executor = (await self.cc.state("executor")).executor
                except CruiseControlError as exc:
                    log.info("Cruise Control not asked about its executor; the throttle waits", error=exc.message)
                    return status
                reason = replication_throttle.why_wait(throttle, executor_state=executor.state if executor else "")
            if reason is not None:
                return await self._published(status, replication_throttle.waiting(status, left, reason, utcnow()))
            for broker, configs in left.rates.items():
                await self.admin.alter_broker_configs(broker, dict.fromkeys(configs))
            for (topic, key), items in left.items.items():
                await self.admin.alter_list_config(topic, key, remove=items)
            log.info("Cruise Control's replication throttle removed", brokers=sorted(left.rates),
                     topics=sorted({t for t, _ in left.items}))
        down = [b for b in throttle.brokers if b in alive and not alive[b]]
        return await self._published(status, replication_throttle.cleaned(status, left, down, utcnow()))

    async def _published(self, status: RebalanceStatus, changed: RebalanceStatus | None) -> RebalanceStatus:
        await self.publish(changed)
        return self.statuses.get(status.name, status) if changed is not None else status

    async def _execute(self, status: RebalanceStatus) -> None:
        status = await self._set_intra_throttle(status)
        # A request that carried this reason may have reached Cruise Control before a crash or a timeout.
        try:
            tasks = await self.cc.user_tasks()
        except CruiseControlError as exc:
            await self.publish(self._retry(status, exc))
            return
        if (task := execution.find_execution(status, tasks.user_tasks)) is not None:
            await self.publish(execution.on_execution_started(status, task.user_task_id, utcnow()))
            return
        brokers = await self._brokers_still_there(status)
        if brokers == [] or (cordons := await self._cordons(status)) is None:
            return
        try:
            submission = await self._submit(status, dryrun=False, brokers=brokers, reason=status.execution_reason,
                                            cordons=cordons)
        except CruiseControlError as exc:
            await self.publish(self._retry(status, exc))
            return
        log.info("rebalance execution started", session_id=submission.task_id, brokers=brokers)
        await self.publish(execution.on_execution_started(status, submission.task_id, utcnow(), submission.result))

    async def _brokers_still_there(self, status: RebalanceStatus) -> list[int] | None:
        """For add / remove: the brokers an execution may name (those still in the cluster), [] when none is left
        (then the rebalance is done: published here); None for the other modes."""
        if status.request.mode not in (RebalanceMode.ADD_BROKERS, RebalanceMode.REMOVE_BROKERS):
            return None
        brokers = execution.execution_brokers(status, [b.id for b in await self.admin.brokers()])
        if not brokers:
            await self.publish(logic.nothing_left(
                status, utcnow(), f"Brokers {', '.join(map(str, status.request.brokers))} are no longer in the "
                                  "cluster; nothing left to move"))
        return brokers

    async def _poll(self, status: RebalanceStatus) -> None:
        """One look at the executor (one request while it works on this rebalance); the task itself only when the
        executor is not on it, or when the executed proposal is still to be learnt (after a 202)."""
        try:
            executor = (await self.cc.state("executor")).executor
            task = None
            if not execution.executor_on(status, executor) or (status.executed_summary is None
                                                            and status.state == S.REBALANCING):
                tasks = (await self.cc.user_tasks([status.session_id], fetch_completed_task=True)).by_id() \
                    if status.session_id else {}
                task = tasks.get(status.session_id or "")
            elif status.state == S.REBALANCING:
                await self.publish(execution.on_executing(status, executor, utcnow()))
                return
        except CruiseControlError as exc:
            if logic.quiet(status, exc):
                return
            message = f"{exc.message}; retrying"
            if status.message != message:
                await self.publish(status.model_copy(update={"message": message, "updated_at": utcnow()}))
            return
        after = execution.on_poll(status, task, executor, utcnow())
        await self.publish(after)
        if after is not None and after.state == S.READY:
            await self._check_removal(after)  # say at once whether its brokers may go, not at the next look

    async def _check_removal(self, status: RebalanceStatus) -> None:
        """For a Ready remove-brokers rebalance; the caller holds its lock."""
        if status.request.mode != RebalanceMode.REMOVE_BROKERS:
            return
        try:
            topics = await self.admin.list_topics()
        except AdminError as exc:
            log.warning("cannot read the cluster's topics", error=str(exc))
            return
        await self.publish(scale_down.removal_check(self.statuses[status.name], removal_check.hosted(topics), utcnow()))

    async def _stop(self, status: RebalanceStatus) -> None:
        try:
            await self.cc.stop_proposal_execution()
        except CruiseControlError as exc:
            await self.publish(self._retry(status, exc))
            return
        log.info("rebalance execution stopping", then=status.stopping)
        await self.publish(execution.on_stop_sent(status, utcnow()))
