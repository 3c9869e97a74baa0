"""How far two proposals for the same rebalance differ, and why, in words an operator can act on.

Cruise Control has no "execute this proposal": an execution request computes a proposal again, from the load it
sees at that moment (or from its proposal cache while the load model is unchanged). Partitions grow and rates move
between the dry run an operator approved and the execution, so the figures differ (Strimzi #12199). Ballast asks
for the proposal again before executing an approved one and refuses the approval when it drifted past a limit; the
proposal actually executed is recorded beside the approved one.
"""

from __future__ import annotations

from dataclasses import dataclass

from events import ProposalSummary, RebalanceProgress


@dataclass(frozen=True)
class Figure:
    name: str
    approved: float
    now: float
    unit: str = ""

    @property
    def percent(self) -> float:
        """The change relative to the approved figure; a figure that was zero counts from one unit."""
        return 100.0 * abs(self.now - self.approved) / max(abs(self.approved), 1.0)

    def text(self) -> str:
        if round(self.approved) == round(self.now):
            return f"{self.name} {self.now:,.0f}{self.unit} (unchanged)"
        sign = "+" if self.now >= self.approved else "-"
        return f"{self.name} {self.approved:,.0f} -> {self.now:,.0f}{self.unit} ({sign}{self.percent:.1f}%)"


def data_mb(s: ProposalSummary) -> float:
    return s.data_to_move_mb + s.intra_broker_data_to_move_mb


def replica_movements(s: ProposalSummary) -> int:
    return s.num_replica_movements + s.num_intra_broker_replica_movements


def figures(approved: ProposalSummary, now: ProposalSummary) -> list[Figure]:
    """What an operator approves: the data to move and the replica movements (between brokers and directories).
    Leader movements are left out: they move no data."""
    return [Figure("data to move", data_mb(approved), data_mb(now), " MB"),
            Figure("replica movements", replica_movements(approved), replica_movements(now))]


def drift_percent(approved: ProposalSummary, now: ProposalSummary) -> float:
    return max(f.percent for f in figures(approved, now))


def why(approved: ProposalSummary, now: ProposalSummary) -> str:
    """The likely cause, from which figures moved."""
    same_moves = (approved.num_replica_movements, approved.num_intra_broker_replica_movements) == \
        (now.num_replica_movements, now.num_intra_broker_replica_movements)
    if same_moves:
        return f"the same movements; the partitions {'grew' if data_mb(now) >= data_mb(approved) else 'shrank'} " \
               "since the proposal"
    return "the load changed since the proposal, and Cruise Control's goals chose other movements"


def comparison(approved: ProposalSummary, now: ProposalSummary) -> str:
    """``data to move 36,024 -> 41,115 MB (+14.1%), replica movements 48 (unchanged)``."""
    return ", ".join(f.text() for f in figures(approved, now))


def differs(approved: ProposalSummary, now: ProposalSummary) -> bool:
    return any(round(f.approved) != round(f.now) for f in figures(approved, now))


def describe(s: ProposalSummary) -> str:
    """``41,115 MB to move, 96 replica movements``; movements between a broker's directories are named as such
    (``157 MB to move, 40 between directories``)."""
    kinds = ((s.num_replica_movements, "replica movements"), (s.num_intra_broker_replica_movements,
                                                               "between directories"))
    moves = [f"{n} {kind}" for n, kind in kinds if n] or ["0 replica movements"]
    return ", ".join([f"{data_mb(s):,.0f} MB to move", *moves])


def left_after(executing: ProposalSummary | None, progress: RebalanceProgress | None) -> ProposalSummary | None:
    """What was left of an execution at its last progress figures (None when nothing is known of it)."""
    if executing is None:
        return None
    if progress is None:
        return executing
    return executing.model_copy(update={
        "data_to_move_mb": max(0.0, executing.data_to_move_mb - progress.finished_data_mb),
        "num_replica_movements": max(0, executing.num_replica_movements - progress.finished_partition_movements),
        "intra_broker_data_to_move_mb": max(0.0, executing.intra_broker_data_to_move_mb
                                            - progress.finished_intra_broker_data_mb),
        "num_intra_broker_replica_movements": max(0, executing.num_intra_broker_replica_movements
                                                  - progress.finished_intra_broker_partition_movements)})


def moved_and_left(progress: RebalanceProgress | None) -> str:
    """What a stopped execution moved and left, from its last progress figures (those in flight then finish)."""
    if progress is None:
        return "no movement was reported before the stop; movements already made stay"
    done = progress.finished_partition_movements + progress.finished_intra_broker_partition_movements
    flying = progress.in_progress_partition_movements
    total = progress.total_partition_movements + progress.total_intra_broker_partition_movements
    moved = progress.finished_data_mb + progress.finished_intra_broker_data_mb
    whole = progress.total_data_mb + progress.total_intra_broker_data_mb
    in_flight = f" and {flying} in flight, let finish" if flying else ""
    return (f"{done} of {total} partition movements made ({moved:,.0f} of {whole:,.0f} MB){in_flight}; the other "
            f"{max(0, total - done - flying)} were not started. Movements already made stay")
