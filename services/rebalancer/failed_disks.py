"""Failed disks (KIP-112): a broker's status from its log directories (condition LogDirsOffline), and the
fix-offline-replicas request that moves a failed disk's replicas to healthy brokers."""

from __future__ import annotations

import zlib
from collections.abc import Collection, Iterable, Mapping
from datetime import datetime

from events import (
    BrokerStatus,
    Condition,
    LogDirState,
    RebalanceMode,
    RebalanceRequest,
)
from events.conditions import LOG_DIRS_CORDONED, LOG_DIRS_OFFLINE


def broker_status(broker: int, dirs: Iterable[tuple[str, str | None]], drained_by: Mapping[str, str],
                  previous: BrokerStatus | None, now: datetime, cordoned: Collection[str] = ()) -> BrokerStatus | None:
    """A broker's status from its log directories (path, error or None when online), the directories drained
    by remove-disks rebalances (path -> rebalance) and those cordoned; None when nothing changed since ``previous``."""
    states = [LogDirState(path=path, online=error is None, error=error, drained_by=drained_by.get(path),
                          cordoned=path in cordoned)
              for path, error in sorted(dirs)]
    offline = [d for d in states if not d.online]
    if offline:
        names = ", ".join(f"{d.path} ({d.error})" for d in offline)
        condition = Condition(type=LOG_DIRS_OFFLINE, status="True", reason="LogDirFailure", last_transition_time=now,
                              message=f"{len(offline)} of {len(states)} log directories offline: {names}. The "
                                      "broker serves the replicas on the others; those in the failed directories are "
                                      "offline until moved (fix-offline-replicas) or the disk is replaced.")
    else:
        condition = Condition(type=LOG_DIRS_OFFLINE, status="False", reason="AllOnline", last_transition_time=now,
                              message=f"all {len(states)} log directories online")
    if previous is not None and previous.log_dirs == states:
        old = previous.condition(LOG_DIRS_OFFLINE)
        if old is not None and (old.status, old.message) == (condition.status, condition.message):
            return None
    return BrokerStatus(broker=broker, log_dirs=states, conditions=[condition, _cordons(states, now)], updated_at=now)


def _cordons(states: list[LogDirState], now: datetime) -> Condition:
    cordoned = [d.path for d in states if d.cordoned]
    if not cordoned:
        return Condition(type=LOG_DIRS_CORDONED, status="False", reason="NoneCordoned", last_transition_time=now,
                         message="no log directory cordoned")
    every = len(cordoned) == len(states)
    return Condition(type=LOG_DIRS_CORDONED, status="True", reason="AllCordoned" if every else "SomeCordoned",
                     last_transition_time=now,
                     message=f"{len(cordoned)} of {len(states)} log directories cordoned: {', '.join(cordoned)}; "
                             + ("the broker takes no new replica" if every else "they take no new replica"))


def fix_offline_request(statuses: Iterable[BrokerStatus], template: Mapping[str, object]) -> RebalanceRequest | None:
    """The remediation for failed disks: a fix-offline-replicas rebalance, auto-approved, named after the failed
    directories (a disk failing later gets a rebalance of its own); None when every directory is online."""
    failed = sorted(f"{s.broker}:{d.path}" for s in statuses for d in s.log_dirs if not d.online)
    if not failed:
        return None
    suffix = f"{zlib.crc32(','.join(failed).encode()):08x}"
    return RebalanceRequest.model_validate({**template, "name": f"auto-fix-offline-replicas-{suffix}",
                                            "mode": RebalanceMode.FIX_OFFLINE_REPLICAS, "auto_approve": True})
