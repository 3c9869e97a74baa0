"""One look at the managed cluster, every ``interval_s``: what moves, how much traffic each broker and directory
carries besides, what rates that leaves, and the changes (the controller's own throttles only) that set them; the
ledger on the bus is written before each change, so a restart, a kill -9 included, finds and removes what is left.
The rules are ``moves``, ``traffic``, ``rates``, ``backoff``, ``decisions`` and ``ownership``'s."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any, Protocol

from events import TOPICS, BrokerLoadSample, RebalanceState, RebalanceStatus, ThrottleLedger, ThrottleRateChanged
from events.envelope import utcnow
from events.throttle import ThrottleKind, ThrottleStatus
from services.adapters.admin import AdminError, ClusterAdmin, PartitionInfo, UnknownTopic, answering_log_dirs
from services.common.logging import get_logger
from services.common.outbox import Outbox, send
from services.common.settings import ThrottleSettings
from services.throttle import backoff, ownership, traffic
from services.throttle.decisions import CONFIGS, Decision, Situation, decide
from services.throttle.moves import Moves, find_moves, throttled_items, union

log = get_logger(__name__)
EXECUTING = {RebalanceState.REBALANCING, RebalanceState.STOPPING}
HEARTBEAT_S = 30.0  # while moves are in flight, the status is published at least this often (its traffic age moves)


class Latency(Protocol):
    def p99_ms(self) -> float | None: ...


class ThrottleController:
    def __init__(self, settings: ThrottleSettings, admin: ClusterAdmin, outbox: Outbox,
                 latency: Latency | None = None, clock: Callable[[], datetime] = utcnow) -> None:
        self.settings = settings
        self.clock = clock
        self.admin = admin
        self.outbox = outbox
        self.latency = latency
        self.limits = settings.limits()
        self.ledger = ThrottleLedger()
        self.started = False
        self.looks = 0
        # What the ledger read at the start named and this instance has not decided on since: removed as leftovers.
        self.inherited: set[tuple[int, ThrottleKind]] = set()
        self.sizes: traffic.LogSizes | None = None
        self.building_before: Mapping[str, frozenset[tuple[int, int]]] = {}
        self.load: dict[int, BrokerLoadSample] = {}
        self.rebalances: dict[str, RebalanceStatus] = {}
        self.back_off: backoff.BackOff | None = None
        self.states_before: Mapping[str, tuple[PartitionInfo, ...]] = {}
        self.status = ThrottleStatus(message="starting")
        self.published: ThrottleStatus | None = None  # the last status the bus acknowledged
        self.published_at: datetime | None = None
        self.changes = 0

    # -- what the agents bring ---------------------------------------------------------------------------------

    def take_load(self, sample: BrokerLoadSample) -> None:
        current = self.load.get(sample.broker)
        if current is None or sample.sampled_at >= current.sampled_at:
            self.load[sample.broker] = sample

    def take_rebalance(self, status: RebalanceStatus) -> None:
        self.rebalances[status.name] = status

    def fixed_kinds(self) -> set[ThrottleKind]:
        """Kinds of throttle a running rebalance fixed: its own rate wins for as long as it executes (Cruise Control
        sets a replicationThrottle per batch of moves, and takes it off between them)."""
        fixed: set[ThrottleKind] = set()
        for s in self.rebalances.values():
            if s.deleted or s.state not in EXECUTING:
                continue
            if s.request.replication_throttle:
                fixed.add("inter-broker")
            if s.request.intra_broker_throttle:
                fixed.add("intra-broker")
        return fixed

    # -- the look ----------------------------------------------------------------------------------------------

    async def start(self) -> None:
        stored = await self.outbox.read_compacted(TOPICS.throttle_ledger)
        if (item := stored.get(ThrottleLedger().key)) is not None and isinstance(item.decoded.event, ThrottleLedger):
            self.ledger = item.decoded.event
        self.inherited = {(o.broker, kind) for o in self.ledger.broker_configs for kind, keys in CONFIGS.items()
                          if o.config in keys}
        self.started = True
        log.info("throttle ledger read", broker_configs=len(self.ledger.broker_configs),
                 topic_lists=len(self.ledger.topic_items))

    async def look(self) -> None:
        now = self.clock()
        try:
            await self._look(now)
        except AdminError as exc:
            # Temporary or permanent, the next look asks again: reading changes nothing, and a change not made is
            # planned afresh from what is in force then.
            message = f"could not read or change the cluster: {exc}"
            if message != self.status.message:
                log.warning("throttle look failed", error=str(exc), temporary=exc.temporary)
            await self._publish(self.status.model_copy(update={"message": message, "updated_at": now}), now)
        self.looks += 1

    async def _look(self, now: datetime) -> None:
        brokers = await self.admin.brokers()
        alive = {b.id for b in brokers if b.alive}
        racks = {b.id: b.rack for b in brokers}
        reassignments = await self.admin.list_reassignments()
        log_dirs = await answering_log_dirs(self.admin, sorted(alive))
        moves = find_moves(reassignments, [d for d in log_dirs if d.online])
        sizes = traffic.log_sizes(log_dirs, now)
        growth = (traffic.log_growth(self.sizes, sizes, union(self.building_before, moves.building))
                  if self.sizes is not None else traffic.NO_TRAFFIC)
        self.sizes, self.building_before = sizes, moves.building
        figures = traffic.choose(self.settings.traffic_source, traffic.cruise_control_load(self.load), growth, now,
                                 self.settings.traffic_max_age_s)
        lagging: list[str] = []
        if moves.in_flight:
            states = await self.admin.partition_states()
            lagging = backoff.lagging_partitions(states, self.states_before, moves.partitions, alive)
            self.states_before = states
        else:
            self.states_before = {}
        p99 = self.latency.p99_ms() if self.latency is not None else None
        self.back_off = backoff.back_off(self.back_off, lagging=lagging,
                                         latency_high=p99 is not None and p99 > self.settings.latency_limit_ms,
                                         now=now)
        if not moves.in_flight and self.ledger.empty:
            self._hold()  # no rate to set: the floor is trivially in force
            await self._publish(self._status(moves, Decision(), figures, p99, now, "no moves in flight"), now)
            return
        seen = await self._seen(moves, alive)
        ours, others = self._in_force(seen)
        decision = decide(Situation(moves, figures, alive, racks, ours, others, frozenset(self.fixed_kinds()),
                                    self.back_off),
                          self.settings.network_capacity.capacities(), self.settings.disk_capacity.capacities(),
                          self.limits)
        # The throttled-replicas items only on the brokers whose rate is the controller's.
        wanted_items = throttled_items(moves, {b for b, kind in _set_by(decision) if kind == "inter-broker"})
        plan = ownership.plan(decision.rates, wanted_items, seen, self.ledger)
        await self._apply(plan)  # also when nothing changes: the ledger may forget what a look read gone
        self._hold()
        await self._tell_changes(ours, decision, now)
        message = "moves in flight" if moves.in_flight else "no moves in flight"
        await self._publish(self._status(moves, decision, figures, p99, now, message), now)

    def _hold(self) -> None:
        """The back-off's hold starts now that its floor is in force: read from the clock again, not the look's start,
        since the reads and changes before may have taken longer than the hold itself (backoff.held)."""
        self.back_off = backoff.held(self.back_off, at=self.clock(), hold_s=self.settings.back_off_hold_s)

    async def _seen(self, moves: Moves, alive: set[int]) -> ownership.Seen:
        """What is in force on every broker and topic the moves or the ledger name."""
        brokers = (moves.inter_brokers | set(moves.dir_moves) | {o.broker for o in self.ledger.broker_configs}) & alive
        configs = {}
        for broker in sorted(brokers):
            try:
                in_force = await self.admin.broker_configs(broker)
            except AdminError as exc:
                # Gone since it was listed alive: left out of this look, so nothing of it is changed or forgotten.
                log.info("broker's configs not read; left out of this look", broker=broker, error=str(exc))
                continue
            configs[broker] = {k: v for k, v in in_force.items() if k in ownership.RATE_CONFIGS}
        topics = sorted(set(moves.sending) | {o.topic for o in self.ledger.topic_items})
        return ownership.Seen(configs, await self._topic_configs(topics))

    async def _topic_configs(self, topics: list[str]) -> dict[str, dict[str, str]]:
        try:
            return await self.admin.topic_configs(topics)
        except UnknownTopic:
            # One was deleted since its name was read: the others one by one; the deleted one is left out.
            found: dict[str, dict[str, str]] = {}
            for topic in topics:
                try:
                    found.update(await self.admin.topic_configs([topic]))
                except UnknownTopic:
                    continue
            return found

    def _in_force(self, seen: ownership.Seen) -> tuple[dict[tuple[int, ThrottleKind], int],
                                                        dict[tuple[int, ThrottleKind], int]]:
        ours: dict[tuple[int, ThrottleKind], int] = {}
        others: dict[tuple[int, ThrottleKind], int] = {}
        for broker, configs in seen.broker_configs.items():
            for kind, keys in CONFIGS.items():
                for key in keys:
                    if key not in configs:
                        continue
                    whose = ownership.owner(self.ledger, seen, broker, key)
                    rate = _rate(configs[key])
                    if whose == "ballast" and rate is not None:
                        ours[(broker, kind)] = min(rate, ours.get((broker, kind), rate))
                    elif whose == "other":
                        others[(broker, kind)] = rate if rate is not None else 0
        return ours, others

    async def _apply(self, plan: ownership.Plan) -> None:
        if not ownership.same(plan.before, self.ledger):
            await self._write_ledger(plan.before)
        for broker, changes in sorted(plan.broker_changes.items()):
            await self.admin.alter_broker_configs(broker, changes)
        for (topic, config), items in sorted(plan.add_items.items()):
            await self.admin.alter_list_config(topic, config, add=items)
        for (topic, config), items in sorted(plan.remove_items.items()):
            await self.admin.alter_list_config(topic, config, remove=items)
        if not ownership.same(plan.after, self.ledger):
            await self._write_ledger(plan.after)

    async def _write_ledger(self, ledger: ThrottleLedger) -> None:
        await send(self.outbox, TOPICS.throttle_ledger, ledger)
        self.ledger = ledger

    async def _tell_changes(self, before: Mapping[tuple[int, ThrottleKind], int], decision: Decision,
                            now: datetime) -> None:
        after = {(b, kind): rate for b, kind in decision.reasons
                 if (rate := _rate(decision.rates.get(b, {}).get(CONFIGS[kind][0]))) is not None}
        for key in sorted(set(before) | set(after)):
            old, new = before.get(key), after.get(key)
            if old == new:
                continue
            broker, kind = key
            reason = decision.reasons.get(key) if new is not None else (
                "leftover" if key in self.inherited else "moves-ended")
            event = ThrottleRateChanged(broker=broker, kind=kind, from_bytes_per_s=old, to_bytes_per_s=new,
                                        reason=reason or "moves-ended", at=now)
            await send(self.outbox, TOPICS.throttle_changes, event)
            self.changes += 1
            log.info("throttle rate changed", broker=broker, kind=kind, from_bytes_per_s=old, to_bytes_per_s=new,
                     reason=event.reason)
        self.inherited -= set(before) | set(after)  # decided on by this instance: kept or removed

    def _status(self, moves: Moves, decision: Decision, figures: traffic.Traffic, p99: float | None, now: datetime,
                message: str) -> ThrottleStatus:
        age = figures.age_s(now)
        return ThrottleStatus(
            moving_partitions=len(moves.partitions), moving_log_dirs=moves.moving_log_dirs,
            brokers=decision.brokers, log_dirs=decision.log_dirs, traffic_source=figures.source,
            traffic_age_s=round(age, 1) if age is not None else None,
            back_off=self.back_off.reason if self.back_off else None,
            back_off_until=self.back_off.until if self.back_off else None,
            # The partitions that caused the back-off, in every status while it holds: the look that saw them may
            # have failed before its status went out.
            lagging_partitions=list(self.back_off.lagging[:50]) if self.back_off else [],
            latency_p99_ms=round(p99, 1) if p99 is not None else None,
            message=message, updated_at=now)

    async def _publish(self, status: ThrottleStatus, now: datetime) -> None:
        volatile = {"updated_at", "traffic_age_s", "latency_p99_ms"}
        # Compared with the last status the bus took, not the last one built: a send that failed (its partition's
        # leader died with a broker) is made again at the next look, though nothing changed since.
        changed = self.published is None or (
            status.model_dump(exclude=volatile) != self.published.model_dump(exclude=volatile))
        due = (status.moving_partitions or status.moving_log_dirs) and (
            self.published_at is None or (now - self.published_at).total_seconds() >= HEARTBEAT_S)
        self.status = status
        if changed or due:
            await send(self.outbox, TOPICS.throttle_status, status)
            self.published, self.published_at = status, now

    def health(self) -> dict[str, Any]:
        return {"ready": self.started, "looks": self.looks, "changes": self.changes,
                "moving": self.status.moving_partitions + self.status.moving_log_dirs, "message": self.status.message}


def _rate(value: str | None) -> int | None:
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


def _set_by(decision: Decision) -> set[tuple[int, ThrottleKind]]:
    return {(b, kind) for b, kind in decision.reasons if CONFIGS[kind][0] in decision.rates.get(b, {})}
