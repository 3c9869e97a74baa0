"""Disks (JBOD): the directories a remove-disks request names, the directories drained rebalances keep empty
(condition DisksEmpty), the brokers an intra-broker throttle goes on, and the automatic disk rebalance when a broker's
directories drift apart."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from pathlib import PurePosixPath

from events import (
    BrokerLogDirs,
    Condition,
    RebalanceMode,
    RebalanceRequest,
    RebalanceStatus,
)
from events.conditions import DISKS_EMPTY
from services.rebalancer.statuses import S, TERMINAL, update, without


def resolve_disk_removal(request: RebalanceRequest, dirs: Mapping[int, Iterable[str]]) -> list[BrokerLogDirs]:
    """The log directories a remove-disks request names, checked against each broker's directories (``dirs``).
    A volume id ``N`` is the directory with a path component ``data-N`` (Strimzi's JBOD layout). Raises
    ValueError with what is wrong."""
    resolved: dict[int, set[str]] = {}
    for entry in request.move_replicas_off_volumes:
        known = sorted(dirs.get(entry.broker_id, ()))
        if not known:
            raise ValueError(f"broker {entry.broker_id} is not in the cluster or reports no log directories")
        chosen = resolved.setdefault(entry.broker_id, set())
        for path in entry.log_dirs:
            if path not in known:
                raise ValueError(f"broker {entry.broker_id} has no log directory {path} (it has {', '.join(known)})")
            chosen.add(path)
        for volume in entry.volume_ids:
            matches = [d for d in known if f"data-{volume}" in PurePosixPath(d).parts]
            if len(matches) != 1:
                raise ValueError(f"broker {entry.broker_id}: volume {volume} matches "
                                 f"{'no' if not matches else len(matches)} log directories (a volume N is the "
                                 f"directory under data-N; the broker has {', '.join(known)})")
            chosen.add(matches[0])
        if chosen >= set(known):
            raise ValueError(f"broker {entry.broker_id} would have no log directory left")
    return [BrokerLogDirs(broker=b, log_dirs=sorted(d)) for b, d in sorted(resolved.items())]


def drained_log_dirs(statuses: Iterable[RebalanceStatus]) -> dict[int, set[str]]:
    """broker -> directories Ballast keeps empty: those of remove-disks rebalances executing or done, not
    released."""
    drained: dict[int, set[str]] = {}
    for status in statuses:
        if (status.request.mode == RebalanceMode.REMOVE_DISKS and not status.deleted and not status.released
                and status.state in (S.REBALANCING, S.READY)):
            for entry in status.removed_log_dirs:
                drained.setdefault(entry.broker, set()).update(entry.log_dirs)
    return drained


def disks_check(status: RebalanceStatus, hosted: Mapping[tuple[int, str], int], now: datetime
                ) -> RebalanceStatus | None:
    """For a Ready remove-disks rebalance: are its directories empty? ``hosted``: (broker, dir) -> replicas there."""
    if status.state != S.READY or status.request.mode != RebalanceMode.REMOVE_DISKS or status.released:
        return None
    busy = {(d.broker, path): hosted[(d.broker, path)] for d in status.removed_log_dirs for path in d.log_dirs
            if hosted.get((d.broker, path))}
    if not busy:
        condition = Condition(type=DISKS_EMPTY, status="True", reason="NoReplicas", last_transition_time=now,
                              message="The removed directories hold no replicas; Ballast keeps them empty until "
                                      "released (ballast log-dirs release).")
    else:
        where = "; ".join(f"broker {b} {path}: {n} replica(s)" for (b, path), n in sorted(busy.items()))
        condition = Condition(type=DISKS_EMPTY, status="False", reason="ReplicasLanded", last_transition_time=now,
                              message=f"Replicas landed on removed directories ({where}); moving them off.")
    old = status.condition(DISKS_EMPTY)
    if old is not None and (old.status, old.message) == (condition.status, condition.message):
        return None
    return update(status, now, conditions=[*without(status.conditions, DISKS_EMPTY), condition])


def intra_throttle_brokers(status: RebalanceStatus, alive: Iterable[int]) -> list[int]:
    """Brokers whose directories an execution moves replicas between: a remove-disks rebalance's, every alive one for
    a disk rebalance; none without an intra-broker throttle."""
    request = status.request
    if not request.intra_broker_throttle:
        return []
    if request.mode == RebalanceMode.REMOVE_DISKS:
        return sorted(d.broker for d in status.removed_log_dirs)
    return sorted(set(alive)) if request.rebalance_disk else []



AUTO_DISK_PREFIX = "auto-rebalance-disk-"


def disk_drift(usage: Mapping[int, Mapping[str, float]], excluded: Mapping[int, set[str]]
               ) -> dict[int, tuple[float, float]]:
    """Per broker with two or more directories that take replicas: (max - min MB, that as a share of the mean)."""
    drift = {}
    for broker, dirs in usage.items():
        values = [mb for path, mb in dirs.items() if path not in excluded.get(broker, set())]
        if len(values) < 2:
            continue
        spread_mb, mean = max(values) - min(values), sum(values) / len(values)
        drift[broker] = (spread_mb, spread_mb / mean if mean > 0 else 0.0)
    return drift


def disk_rebalance_request(drift: Mapping[int, tuple[float, float]], others: Iterable[RebalanceStatus], *,
                           threshold: float, min_mb: float, cooldown_s: float, template: Mapping[str, object],
                           now: datetime) -> RebalanceRequest | None:
    """A disk rebalance when some broker's directories drifted past both thresholds, no rebalance is under way and
    the last automatic one ended ``cooldown_s`` ago or more."""
    drifted = sorted(b for b, (mb, share) in drift.items() if share > threshold and mb >= min_mb)
    if not drifted:
        return None
    for other in others:
        if other.deleted:
            continue
        if other.state not in TERMINAL:
            return None
        if other.name.startswith(AUTO_DISK_PREFIX) and (now - other.updated_at).total_seconds() < cooldown_s:
            return None
    options = {k: v for k, v in template.items() if k not in ("autoApprove", "auto_approve")}
    approve = bool(template.get("autoApprove", template.get("auto_approve", False)))
    return RebalanceRequest.model_validate({**options, "name": f"{AUTO_DISK_PREFIX}{now:%Y%m%dt%H%M%S}",
                                            "rebalance_disk": True, "auto_approve": approve})
