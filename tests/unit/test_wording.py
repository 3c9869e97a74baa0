"""How statuses are said, in the CLI and the dashboard alike (services/common/wording.py)."""

from __future__ import annotations

from datetime import UTC, datetime

from events import RebalanceRequest, RebalanceState, RebalanceStatus
from events.rebalance import RebalanceProgress
from services.common.wording import progress_text


def executing(**progress: float) -> RebalanceStatus:
    return RebalanceStatus(name="r", state=RebalanceState.REBALANCING, request=RebalanceRequest(name="r"),
                           updated_at=datetime(2026, 11, 26, tzinfo=UTC),
                           progress=RebalanceProgress(executor_state="INTER_BROKER_REPLICA_MOVEMENT_TASK_IN_PROGRESS",
                                                      **progress))


def test_progress_in_mb_and_partitions() -> None:
    status = executing(finishedDataMovementMB=50, totalDataToMoveMB=200, percent_data_moved=25,
                       finished_partition_movements=1, total_partition_movements=4)
    assert progress_text(status) == "25% of 200 MB moved (1/4 partitions)"


def test_no_data_to_copy_is_not_said_as_zero_percent_of_zero_mb() -> None:
    """Issue 30, defect 10: "0% of 0 MB moved (5/5 partitions)"."""
    status = executing(finishedDataMovementMB=0, totalDataToMoveMB=0, finished_partition_movements=5,
                       total_partition_movements=5)
    assert progress_text(status) == "5/5 partitions moved (no data to copy)"


def test_nothing_is_said_before_the_executor_reports_what_it_moves() -> None:
    assert progress_text(executing(finishedDataMovementMB=0, totalDataToMoveMB=0)) == ""
