"""Balancing the log directories of one broker (JBOD): where a new replica goes, and which replicas move between
directories to even them out.

Kafka puts a new replica in the directory with the fewest partitions, blind to their sizes, to growth and to disk
capacity; Cruise Control never rebalances disks unless asked. The planner here works in bytes against capacity:

- ``choose_dir``: the directory whose utilization, projected ``horizon_days`` (30 by default) ahead at its measured growth rate and
  counting what was already sent there, is lowest. Never an offline or draining directory.
- ``plan_moves``: the moves that bring every online directory within ``tolerance`` of the broker's mean
  utilization (a draining directory to empty), moving as few bytes as it can: the worst violation is served first,
  each time with the largest replica that does not overshoot the gap (best fit decreasing).
- ``bytes_lower_bound``: no plan can move fewer bytes than the surplus above the allowed band (or the deficit
  below it).

Pure functions over plain data; the simulator's intra-broker goals, Ballast's placement and the benchmark call them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace


# How far ahead a directory's growth counts: about the time between disk rebalances. Shorter horizons let a fast
# growing directory keep taking replicas until it has pulled ahead (bench/disk_balance.py compares).
HORIZON_DAYS = 30.0


@dataclass(frozen=True)
class Directory:
    path: str
    capacity_mb: float
    used_mb: float = 0.0
    growth_mb_per_day: float = 0.0
    online: bool = True
    draining: bool = False  # being emptied, or emptied and kept so until released
    # KIP-1066: takes no new replica (Kafka refuses a move into it); what it holds may stay, so a balance plan is not
    # told of it: only the choice of a directory for one replica (choose_dir) is.
    cordoned: bool = False

    @property
    def accepts(self) -> bool:
        return self.online and not self.draining

    @property
    def takes_new(self) -> bool:
        return self.accepts and not self.cordoned

    def utilization(self) -> float:
        return self.used_mb / self.capacity_mb if self.capacity_mb > 0 else float("inf")


@dataclass(frozen=True)
class Replica:
    topic: str
    partition: int
    size_mb: float
    log_dir: str


@dataclass(frozen=True)
class DirMove:
    topic: str
    partition: int
    source: str
    destination: str
    size_mb: float


class NoDirectory(Exception):
    """The broker has no directory that may take a replica (all offline, draining or cordoned)."""


def choose_dir(dirs: Sequence[Directory], *, horizon_days: float = HORIZON_DAYS,
               planned_mb: Mapping[str, float] | None = None) -> str:
    """The directory for one new replica. ``planned_mb``: bytes already sent to each directory and not yet in
    ``used_mb`` (earlier choices of the same decision, moves in flight)."""
    planned = planned_mb or {}
    candidates = [d for d in dirs if d.takes_new and d.capacity_mb > 0]
    if not candidates:
        raise NoDirectory("no online directory that is neither drained nor cordoned can take a replica")

    def projected(d: Directory) -> tuple[float, str]:
        return (d.used_mb + planned.get(d.path, 0.0) + d.growth_mb_per_day * horizon_days) / d.capacity_mb, d.path

    return min(candidates, key=projected).path


def place_new(dirs: Sequence[Directory], count: int, *, expected_mb: float, horizon_days: float = HORIZON_DAYS) -> list[str]:
    """Directories for ``count`` new replicas in a row, each counted as ``expected_mb`` (the broker's mean replica
    size, say) so that a burst spreads instead of all landing in the emptiest directory."""
    planned: dict[str, float] = {}
    chosen = []
    for _ in range(count):
        path = choose_dir(dirs, horizon_days=horizon_days, planned_mb=planned)
        planned[path] = planned.get(path, 0.0) + expected_mb
        chosen.append(path)
    return chosen


def targets(dirs: Sequence[Directory]) -> dict[str, float]:
    """The bytes each directory would hold with the broker's bytes spread in proportion to capacity over the
    directories that accept replicas (draining ones: 0). Offline directories keep what they hold (it cannot be
    read)."""
    receiving = [d for d in dirs if d.accepts]
    movable = sum(d.used_mb for d in dirs if d.online)
    capacity = sum(d.capacity_mb for d in receiving)
    result = {d.path: d.used_mb for d in dirs if not d.online}
    for d in dirs:
        if d.online:
            result[d.path] = movable * d.capacity_mb / capacity if d.accepts and capacity > 0 else 0.0
    return result


def bytes_lower_bound(dirs: Sequence[Directory], tolerance: float = 0.05) -> float:
    """What any plan must move: the bytes above the directories' bands (all of a draining one's) must leave, and the
    bytes missing below them must arrive."""
    goal = targets(dirs)
    leaving = sum(max(0.0, d.used_mb - (goal[d.path] + tolerance * d.capacity_mb if d.accepts else 0.0))
                  for d in dirs if d.online)
    arriving = sum(max(0.0, goal[d.path] - tolerance * d.capacity_mb - d.used_mb) for d in dirs if d.accepts)
    return max(leaving, arriving)


@dataclass
class _Dir:
    spec: Directory
    used: float
    replicas: list[Replica] = field(default_factory=list)


def plan_moves(dirs: Sequence[Directory], replicas: Sequence[Replica], *, tolerance: float = 0.05,
               max_moves: int | None = None) -> list[DirMove]:
    """Moves between the directories of one broker so that each online directory's utilization ends within
    ``tolerance`` (a fraction of its capacity) of its share and draining directories end empty. ``replicas``: those
    on the broker, with their directory. Raises NoDirectory when replicas must leave a draining directory and no
    directory may take them.

    Each step fixes the worst violation: a directory above its band gives to the one with the most room, a directory
    below its band takes from the fullest; the replica is the largest that does not overshoot the gap (else the
    smallest that keeps both directories inside their bands)."""
    state = {d.path: _Dir(d, d.used_mb) for d in dirs}
    for r in replicas:
        if r.log_dir in state:
            state[r.log_dir].replicas.append(r)
    goal = targets(dirs)
    receivers = [s for s in state.values() if s.spec.accepts]
    moves: list[DirMove] = []
    stuck: set[str] = set()  # violations no single move can reduce any more

    def upper(s: _Dir) -> float:
        return goal[s.spec.path] + tolerance * s.spec.capacity_mb if s.spec.accepts else 0.0

    def lower(s: _Dir) -> float:
        return goal[s.spec.path] - tolerance * s.spec.capacity_mb if s.spec.accepts else 0.0

    def violation(s: _Dir) -> float:
        if not s.spec.online:
            return 0.0
        over = s.used - upper(s) if s.replicas else 0.0
        if not s.spec.accepts:  # draining: every replica leaves, empty ones (no bytes yet) too
            return max(over, 0.0) + (1.0 if s.replicas else 0.0)
        return max(over, lower(s) - s.used, 0.0)

    while max_moves is None or len(moves) < max_moves:
        worst = [s for s in state.values() if violation(s) > 1e-9 and s.spec.path not in stuck]
        if not worst:
            break
        target = max(worst, key=lambda s: (not s.spec.accepts, violation(s), s.spec.path))
        if target.used > upper(target) or not target.spec.accepts:
            giver = target
            others = [s for s in receivers if s is not giver]
            if not others:
                if not giver.spec.accepts:
                    raise NoDirectory(f"no directory can take the replicas of {giver.spec.path}")
                break
            receiver = max(others, key=lambda s: (upper(s) - s.used, s.spec.path))
            gap = min(giver.used - upper(giver) if giver.spec.accepts else giver.used, upper(receiver) - receiver.used)
        else:
            receiver = target
            others = [s for s in state.values() if s is not receiver and s.spec.online and s.replicas]
            if not others:
                stuck.add(receiver.spec.path)
                continue
            giver = max(others, key=lambda s: (s.used / s.spec.capacity_mb, s.spec.path))
            gap = min(lower(receiver) - receiver.used, giver.used - lower(giver))
        replica = _pick(giver, receiver, gap, upper(receiver), lower(giver))
        if replica is None:
            stuck.add(target.spec.path)
            continue
        giver.replicas.remove(replica)
        giver.used -= replica.size_mb
        receiver.replicas.append(replace(replica, log_dir=receiver.spec.path))
        receiver.used += replica.size_mb
        moves.append(DirMove(replica.topic, replica.partition, giver.spec.path, receiver.spec.path, replica.size_mb))
    return moves


def _pick(giver: _Dir, receiver: _Dir, gap: float, receiver_upper: float, giver_lower: float) -> Replica | None:
    """The largest replica of ``giver`` not larger than ``gap``; failing that, the smallest that keeps the receiver
    under its upper bound and the giver over its lower one. A draining giver gives everything, biggest first."""
    if not giver.spec.accepts:
        return max(giver.replicas, key=lambda r: (r.size_mb, r.topic, r.partition))
    if gap <= 1e-9:
        return None
    under = [r for r in giver.replicas if r.size_mb <= gap + 1e-9]
    if under:
        return max(under, key=lambda r: (r.size_mb, r.topic, r.partition))
    keeping = [r for r in giver.replicas if receiver.used + r.size_mb <= receiver_upper + 1e-9
               and giver.used - r.size_mb >= giver_lower - 1e-9]
    return min(keeping, key=lambda r: (r.size_mb, r.topic, r.partition)) if keeping else None


def spread(dirs: Sequence[Directory]) -> float:
    """Max minus min utilization over the directories that accept replicas, in percent of capacity."""
    utilizations = [100.0 * d.utilization() for d in dirs if d.accepts]
    return max(utilizations) - min(utilizations) if len(utilizations) > 1 else 0.0


def after(dirs: Sequence[Directory], moves: Sequence[DirMove]) -> list[Directory]:
    """The directories once ``moves`` are done."""
    used = {d.path: d.used_mb for d in dirs}
    for m in moves:
        used[m.source] -= m.size_mb
        used[m.destination] += m.size_mb
    return [replace(d, used_mb=used[d.path]) for d in dirs]
