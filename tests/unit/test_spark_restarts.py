"""When the job's streaming query is started again (spark.restarts), on queries that fail as Spark's do. The
restart itself, with a real Python worker too late to connect back, is tests/integration/test_spark_source.py's."""

from __future__ import annotations

import pytest
from pyspark.errors import StreamingQueryException

from spark import restarts
from spark.restarts import QueryFailed, RestartingQuery

LATE = "org.apache.spark.SparkException: Python worker failed to connect back."
BROKEN = "[UNRESOLVED_COLUMN] A column named `valeu` cannot be resolved."


class Query:
    """A query that has read ``rows`` and then ended with ``error`` (or still runs, when ``error`` is absent)."""

    def __init__(self, rows: int = 0, error: str | None = None, running: bool = False) -> None:
        self.isActive = running
        self._error = RuntimeError(error) if error else None
        self.recentProgress = [{"numInputRows": rows}] if rows else []
        self.stopped = False

    def exception(self) -> Exception | None:
        return self._error

    def awaitTermination(self, _timeout_s: float) -> None:
        if self._error:
            raise StreamingQueryException(str(self._error))

    def stop(self) -> None:
        self.stopped, self.isActive = True, False


class Starts:
    """``start()``: each call the next query of the list, or raises the next error that is a string."""

    def __init__(self, *outcomes: Query | str) -> None:
        self.outcomes, self.calls = list(outcomes), 0

    def __call__(self) -> Query:
        self.calls += 1
        outcome = self.outcomes.pop(0)
        if isinstance(outcome, str):
            raise RuntimeError(outcome)
        return outcome


@pytest.fixture(autouse=True)
def no_waiting(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The delays slept, on a clock that only they move."""
    slept: list[float] = []
    monkeypatch.setattr(restarts.time, "sleep", slept.append)
    monkeypatch.setattr(restarts.time, "monotonic", lambda: sum(slept))
    return slept


def test_a_query_that_fails_for_a_late_worker_starts_again_and_keeps_counting_its_rows(no_waiting) -> None:
    starts = Starts(Query(rows=5, error=LATE), Query(rows=3, running=True))
    query = RestartingQuery(starts)
    assert query.check() is True
    assert (starts.calls, query.restarts, query.rows_read()) == (2, 1, 8)
    assert no_waiting == [2.0]


def test_a_start_refused_for_a_late_worker_is_tried_again_with_a_growing_delay(no_waiting) -> None:
    starts = Starts(LATE, LATE, Query(running=True))
    query = RestartingQuery(starts)
    assert query.check() and query.restarts == 2
    assert no_waiting == [2.0, 4.0]


def test_any_other_failure_ends_it() -> None:
    with pytest.raises(QueryFailed, match="UNRESOLVED_COLUMN"):
        RestartingQuery(Starts(BROKEN))
    query = RestartingQuery(Starts(Query(rows=2, error=BROKEN)))
    with pytest.raises(QueryFailed, match="UNRESOLVED_COLUMN"):
        query.check()


def test_late_starts_end_it_once_they_have_failed_in_a_row_for_the_patience_given(no_waiting) -> None:
    with pytest.raises(QueryFailed, match="4 times in a row over 14 s"):
        RestartingQuery(Starts(LATE, LATE, LATE, LATE), patience_s=10)
    assert no_waiting == [2.0, 4.0, 8.0]


def test_many_late_starts_are_tried_again_while_the_patience_lasts(no_waiting) -> None:
    starts = Starts(*[LATE] * 30, Query(running=True))
    query = RestartingQuery(starts)
    assert query.check() and query.restarts == 30
    assert sum(no_waiting) < restarts.PATIENCE_S


def test_a_start_that_read_something_begins_the_patience_again(no_waiting) -> None:
    late_at_once, late_after_a_read, running = Query(error=LATE), Query(rows=1, error=LATE), Query(running=True)
    query = RestartingQuery(Starts(late_at_once, LATE, late_after_a_read, LATE, running), patience_s=5)
    query.check()  # two failures in a row: 6 s of the 5 s patience once the next one fails, unless a read came
    assert query.query is late_after_a_read and no_waiting == [2.0, 4.0]
    assert query.check() is True, "two more after a read: a patience of their own, 2 s and 4 s"
    assert (query.query, query.restarts, query.rows_read()) == (running, 4, 1)


def test_a_stopped_query_is_not_started_again() -> None:
    starts = Starts(Query(running=True))
    query = RestartingQuery(starts)
    query.stop()
    assert query.check() is False and starts.calls == 1


def test_waiting_on_a_query_that_failed_leaves_the_failure_to_check(no_waiting) -> None:
    """PySpark's awaitTermination raises the query's failure; the job's loop waits, then checks (seen: the job
    ended on a late Python worker, raised from its wait, instead of starting the query again)."""
    starts = Starts(Query(error=LATE), Query(running=True))
    query = RestartingQuery(starts)
    query.wait(1)
    assert query.check() is True and query.restarts == 1
