"""The rate each broker taking part in a move should have now, and why. Pure."""

from __future__ import annotations

from collections.abc import Mapping, Set
from dataclasses import dataclass, field

from events import BrokerThrottle, LogDirThrottle
from events.throttle import ThrottleKind, ThrottleReason
from services.domain.throttle_limits import Capacities, Limits
from services.throttle.backoff import BackOff
from services.throttle.moves import Moves
from services.throttle.ownership import INTER_BROKER_RATES, INTRA_BROKER_THROTTLE
from services.throttle.rates import headroom, next_rate, target, worth_changing
from services.throttle.traffic import Traffic

CONFIGS: dict[ThrottleKind, tuple[str, ...]] = {"inter-broker": INTER_BROKER_RATES,
                                                "intra-broker": (INTRA_BROKER_THROTTLE,)}


@dataclass(frozen=True)
class Situation:
    """Everything a decision depends on, read in one look."""

    moves: Moves
    traffic: Traffic
    alive: Set[int]
    racks: Mapping[int, str | None]
    ours: Mapping[tuple[int, ThrottleKind], int]  # the controller's rates in force
    others: Mapping[tuple[int, ThrottleKind], int]  # someone else's rates in force
    fixed: Set[ThrottleKind] = frozenset()  # kinds a running rebalance fixed (its replicationThrottle, ...)
    back_off: BackOff | None = None


@dataclass(frozen=True)
class Decision:
    rates: dict[int, dict[str, str]] = field(default_factory=dict)  # broker -> config -> value, for ownership.plan
    reasons: dict[tuple[int, ThrottleKind], ThrottleReason] = field(default_factory=dict)
    brokers: list[BrokerThrottle] = field(default_factory=list)
    log_dirs: list[LogDirThrottle] = field(default_factory=list)


def decide(s: Situation, network: Capacities, disks: Capacities, limits: Limits) -> Decision:
    decision = Decision()
    for broker in sorted(s.moves.inter_brokers & s.alive):
        capacity = network.of_broker(broker, s.racks.get(broker))
        live = s.traffic.brokers.get(broker) if s.traffic.source != "none" else None
        _one(decision, s, broker, "inter-broker", capacity, live, limits)
    for broker in sorted(set(s.moves.dir_moves) & s.alive):
        dirs = []
        for path in sorted(s.moves.dir_moves[broker]):
            capacity = disks.of_log_dir(broker, s.racks.get(broker), path)
            live = s.traffic.log_dirs.get((broker, path)) if s.traffic.source != "none" else None
            room = headroom(capacity, live) if capacity is not None and live is not None else None
            dirs.append(LogDirThrottle(broker=broker, log_dir=path, capacity_bytes_per_s=capacity,
                                       live_bytes_per_s=_whole(live), headroom_bytes_per_s=room))
        decision.log_dirs.extend(dirs)
        # One rate per broker covers all its directories' moves: the tightest directory taking part decides.
        capacities = [d.capacity_bytes_per_s for d in dirs if d.capacity_bytes_per_s is not None]
        lives = [d.live_bytes_per_s for d in dirs if d.capacity_bytes_per_s is not None]
        rooms = [d.headroom_bytes_per_s for d in dirs if d.headroom_bytes_per_s is not None]
        capacity = min(capacities) if capacities else None
        live = float(sum(x for x in lives if x is not None)) if rooms else None
        _one(decision, s, broker, "intra-broker", capacity, live, limits,
             room=min(rooms) if rooms else None)
    return decision


def _one(decision: Decision, s: Situation, broker: int, kind: ThrottleKind, capacity: int | None,
         live: float | None, limits: Limits, room: int | None = None) -> None:
    def status(reason: ThrottleReason, rate: int | None, owner: str) -> None:
        decision.reasons[(broker, kind)] = reason
        decision.brokers.append(BrokerThrottle(
            broker=broker, kind=kind, bytes_per_s=rate, owner=owner, reason=reason,  # type: ignore[arg-type]
            capacity_bytes_per_s=capacity, live_bytes_per_s=_whole(live),
            headroom_bytes_per_s=room if room is not None else (
                headroom(capacity, live) if capacity is not None and live is not None else None)))

    other = s.others.get((broker, kind))
    if kind in s.fixed or other is not None:
        status("fixed", other, "other" if other is not None else "none")
        return
    if capacity is None:
        status("no-capacity", None, "none")
        return
    reason: ThrottleReason = "headroom"
    if s.back_off is not None:
        wanted, reason = limits.floor, s.back_off.reason
    elif live is None:
        wanted = limits.floor  # no traffic figures yet (the first look): start low, ramp up from there
    else:
        wanted = target(room if room is not None else headroom(capacity, live), limits)
    in_force = s.ours.get((broker, kind))
    rate = next_rate(in_force, wanted, limits)
    if in_force is not None and not worth_changing(in_force, rate, limits):
        rate = in_force
    decision.rates.setdefault(broker, {}).update({config: str(rate) for config in CONFIGS[kind]})
    status(reason, rate, "ballast")


def _whole(value: float | None) -> int | None:
    return None if value is None else int(value)
