"""Cordons (KIP-1066, Kafka 4.3): what a broker's ``cordoned.log.dirs`` becomes when directories are cordoned or
uncordoned (the rule `ballast brokers cordon|uncordon` applies), which brokers take no new replica, where a
rebalance may move replicas, and how far a decommission (`ballast brokers decommission`) has got."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol, TypeVar

from events import RebalanceState, RebalanceStatus
from events.conditions import BROKERS_REMOVABLE

ALL = "*"


def cordoned_dirs(value: str | None, broker_dirs: Sequence[str]) -> frozenset[str]:
    """The directories a value of ``cordoned.log.dirs`` cordons (``*``: all of the broker's)."""
    named = {d.strip() for d in (value or "").split(",") if d.strip()}
    return frozenset(broker_dirs) if ALL in named else frozenset(named)


def cordon_value(current: str | None, broker_dirs: Sequence[str], dirs: Sequence[str] = (), *,
                 cordon: bool) -> str | None:
    """``cordoned.log.dirs`` after cordoning (or uncordoning) ``dirs``, every directory of the broker when none is
    named; None: no directory cordoned (the config deleted). ``*`` when all are, so that a directory added to the
    broker later is cordoned too, as the operator meant. Raises ValueError for a directory the broker does not have."""
    if unknown := sorted(set(dirs) - set(broker_dirs)):
        raise ValueError(f"not a log directory of the broker: {', '.join(unknown)} (it has {', '.join(broker_dirs)})")
    now = cordoned_dirs(current, broker_dirs)
    wanted = set(dirs or broker_dirs)
    after = now | wanted if cordon else now - wanted
    if not after:
        return None
    return ALL if after >= set(broker_dirs) else ",".join(sorted(after))


class HasId(Protocol):
    @property
    def id(self) -> int: ...


B = TypeVar("B", bound=HasId)


class CordonedDir(Protocol):
    """One log directory as the admin port describes it (``LogDirInfo``): only what cordons need."""

    broker: int
    path: str
    cordoned: bool


@dataclass(frozen=True)
class Cordons:
    """Each broker's cordoned log directories, and all of its directories, as one look read them."""

    cordoned: Mapping[int, frozenset[str]] = field(default_factory=dict)
    dirs: Mapping[int, frozenset[str]] = field(default_factory=dict)

    @classmethod
    def of(cls, log_dirs: Iterable[CordonedDir]) -> Cordons:
        every: dict[int, set[str]] = {}
        cordoned: dict[int, set[str]] = {}
        for d in log_dirs:
            every.setdefault(d.broker, set()).add(d.path)
            if d.cordoned:
                cordoned.setdefault(d.broker, set()).add(d.path)
        return cls({b: frozenset(p) for b, p in cordoned.items()}, {b: frozenset(p) for b, p in every.items()})

    @property
    def fully_cordoned(self) -> frozenset[int]:
        """The brokers that take no new replica (Kafka's ``usableBrokers`` leaves them out): every directory is."""
        return frozenset(b for b, paths in self.cordoned.items() if paths and paths >= self.dirs.get(b, paths))

    @property
    def partly_cordoned(self) -> dict[int, frozenset[str]]:
        """Brokers that still take replicas but not in some of their directories: broker -> those directories."""
        return {b: paths for b, paths in self.cordoned.items() if paths and b not in self.fully_cordoned}

    def __bool__(self) -> bool:
        return any(self.cordoned.values())


def usable(brokers: Iterable[B], cordons: Cordons) -> list[B]:
    """The brokers a placer may see: not those whose every directory is cordoned (Kafka 4.3's
    ``ClusterControlManager.usableBrokers`` leaves them out the same way)."""
    unusable = cordons.fully_cordoned
    return [b for b in brokers if b.id not in unusable]


def rebalance_destinations(cordons: Cordons, alive: Iterable[int], leaving: Iterable[int] = ()) -> list[int] | None:
    """The brokers a rebalance may move replicas onto (Cruise Control's ``destination_broker_ids``): the alive ones
    that are neither fully cordoned nor leaving. None when no alive broker is fully cordoned: Cruise Control's
    default (every broker) is then the same, and the request stays as it always was."""
    alive = set(alive)
    if not alive & cordons.fully_cordoned:
        return None
    return sorted(alive - cordons.fully_cordoned - set(leaving))


def decommission_name(broker: int) -> str:
    """The remove-brokers rebalance that drains a decommissioned broker."""
    return f"decommission-{broker}"


def decommission_outcome(status: RebalanceStatus) -> tuple[bool, str] | None:
    """Where a decommission's rebalance has got: None while it goes on; (True, what to say) once its broker hosts no
    replica (condition BrokersRemovable); (False, why) when it has stopped short of that."""
    removable = status.condition(BROKERS_REMOVABLE)
    if status.state == RebalanceState.READY and removable is not None:
        return removable.status == "True", removable.message or ""
    if status.state in (RebalanceState.NOT_READY, RebalanceState.STOPPED):
        return False, status.message or status.state.value
    return None
