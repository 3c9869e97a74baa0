"""Drained directories kept empty. Kafka puts a new replica in the directory with the fewest partitions, which a
drained one is: whatever lands in a directory a Ready remove-disks rebalance emptied moves to the broker's best other
directory (never a cordoned one)."""

from __future__ import annotations

from events.envelope import utcnow
from services.adapters.admin import AdminError, LogDirInfo
from services.common.logging import get_logger
from services.placement.disk_balance import Directory, NoDirectory, choose_dir
from services.rebalancer import disks
from services.rebalancer.observers.look import ClusterLook
from services.rebalancer.observers.shared import Shared
from services.rebalancer.statuses import S

log = get_logger(__name__)

Moves = dict[str, dict[tuple[int, int], str]]  # topic -> (partition, broker) -> the directory it goes to


async def observe(shared: Shared, look: ClusterLook) -> None:
    if look.log_dirs is None:
        return
    done = [s for s in shared.statuses.values() if s.state == S.READY]
    drained = disks.drained_log_dirs(done)
    if not drained:
        return
    if not (brokers := [b for b in look.alive if b in drained]):
        return
    try:
        dirs = await shared.admin.describe_log_dirs(brokers)  # the look's have no replicas
    except AdminError as exc:
        log.info("log directories of the drained brokers not described", error=str(exc))
        return
    hosted: dict[tuple[int, str], int] = {}
    moves: Moves = {}
    for broker, paths in drained.items():
        _plan_moves(broker, paths, [d for d in dirs if d.broker == broker], hosted, moves)
    for topic, chosen in moves.items():
        try:
            await shared.admin.alter_replica_log_dirs(topic, chosen)
            log.info("replicas moved off drained directories", topic=topic, replicas=len(chosen))
        except AdminError as exc:
            log.warning("cannot move replicas off a drained directory", topic=topic, error=str(exc))
    for status in done:
        await shared.change(status.name, lambda s: disks.disks_check(s, hosted, utcnow()))


def _plan_moves(broker: int, paths: set[str], dirs: list[LogDirInfo], hosted: dict[tuple[int, str], int],
                moves: Moves) -> None:
    """Counts what landed in the broker's drained ``paths`` into ``hosted`` and chooses, into ``moves``, where each
    replica not already on its way out goes."""
    moving = {(r.topic, r.partition) for d in dirs for r in d.replicas if r.is_future}
    planned: dict[str, float] = {}
    directories = [Directory(d.path, capacity_mb=(d.total_bytes or 1e12) / 1e6, used_mb=d.size_bytes / 1e6,
                             online=d.online, draining=d.path in paths, cordoned=d.cordoned) for d in dirs]
    for d in dirs:
        if d.path not in paths:
            continue
        landed = [r for r in d.replicas if not r.is_future]
        hosted[(broker, d.path)] = len(landed)
        for replica in landed:
            if (replica.topic, replica.partition) in moving:
                continue  # already on its way out
            try:
                destination = choose_dir(directories, planned_mb=planned)
            except NoDirectory:
                log.warning("no directory can take a replica off a drained one", broker=broker, dir=d.path)
                break
            planned[destination] = planned.get(destination, 0.0) + replica.size_bytes / 1e6
            moves.setdefault(replica.topic, {})[(replica.partition, broker)] = destination
