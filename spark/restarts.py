"""A streaming query started again from its checkpoint after a failure that passes.

Spark plans a Python data source's offsets (``ballast_bus``'s, for as long as the query runs) in a Python process it
starts at each query start (``PythonStreamingSourceRunner``), and gives that process ten seconds, a constant of
``PythonWorkerFactory.createSimpleWorker``, to connect back. On a machine short of CPU it does not (seen with two
suites side by side: the worker's imports alone took 10 s of wall time for 0.5 s of CPU), and the query fails before
it has read a record. Started again from its checkpoint it loses and repeats nothing, so the job does that, after
the project's one backoff (``services.common.retry``); any other failure ends the query, as before.

How long to keep trying is a time, not a count: a machine busy for long stays busy for many starts (seen with two
suites and a demo side by side, load 19 on two cores: twelve starts in a row failed over eleven minutes, where a
count of twelve gave up). The time starts again at every start that read something.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from services.common.retry import backoff

# What Spark says when a Python worker it started did not connect back in time (PythonWorkerFactory).
TEMPORARY = ("Python worker failed to connect back", "Timed out while waiting for the Python worker to connect back")
RESTARTING = "query failed; starting it again from its checkpoint"  # what the job logs then
# How long starts may keep failing so, with no row read in between, before the query is given up: a machine that
# busy for that long is not a moment.
PATIENCE_S = 1800.0


class QueryFailed(RuntimeError):
    """The query failed for good: a failure no restart cures, or too many in a row."""


def temporary(error: BaseException | str) -> bool:
    return any(marker in str(error) for marker in TEMPORARY)


def rows_read(query: Any) -> int:
    """Input rows over the batches a query has run (Spark keeps the last 100 progress reports)."""
    return sum(progress["numInputRows"] for progress in query.recentProgress)


class RestartingQuery:
    """``start()``'s query, started again whenever it fails for a temporary reason (``check``)."""

    def __init__(self, start: Callable[[], Any], log: Any = None, *, patience_s: float = PATIENCE_S,
                 initial_delay_s: float = 2.0, max_delay_s: float = 30.0) -> None:
        self._start, self._log, self._patience_s = start, log, patience_s
        self._delays = {"initial_s": initial_delay_s, "max_s": max_delay_s}
        self.restarts = 0  # over the query's life: what a status or a test can report
        self._failures = 0  # in a row, since a start that read something
        self._failing_since: float | None = None  # when the first of those failed
        self._earlier_rows = 0  # what the queries before this one read
        self.query = self._started()

    def check(self) -> bool:
        """Whether the query runs, once started again if it had failed for a temporary reason. Raises
        ``QueryFailed`` when it failed otherwise, or has failed so for ``patience_s`` with no row read."""
        if self.query.isActive:
            return True
        error = self.query.exception()
        if error is None:
            return False  # stopped
        read = rows_read(self.query)
        self._earlier_rows += read
        if read:
            self._failures, self._failing_since = 0, None
        self._failed(error)
        self.query = self._started()
        return self.query.isActive

    def wait(self, timeout_s: float) -> None:
        """Up to ``timeout_s`` for the query to end. A failure ends the wait without raising: ``check`` judges it."""
        from pyspark.errors import StreamingQueryException  # here, as spark.aggregates imports PySpark: when used

        try:
            self.query.awaitTermination(timeout_s)
        except StreamingQueryException:
            pass

    def rows_read(self) -> int:
        return self._earlier_rows + rows_read(self.query)

    def stop(self) -> None:
        self.query.stop()

    def _started(self) -> Any:
        while True:
            try:
                return self._start()
            except Exception as error:  # noqa: BLE001 - py4j and PySpark raise several kinds; the message tells
                self._failed(error)

    def _failed(self, error: BaseException) -> None:
        """Gives up unless ``error`` is temporary and the failures in a row began less than ``patience_s`` ago;
        otherwise waits the backoff of one more failure."""
        if not temporary(error):
            raise QueryFailed(f"the streaming query failed: {error}") from error
        self._failures += 1
        now = time.monotonic()
        self._failing_since = self._failing_since if self._failing_since is not None else now
        if now - self._failing_since >= self._patience_s:
            raise QueryFailed(f"the streaming query failed to start {self._failures} times in a row over "
                              f"{now - self._failing_since:.0f} s: {error}") from error
        delay = backoff(self._failures, **self._delays).total_seconds()
        self.restarts += 1
        if self._log:
            self._log.warning(RESTARTING, reason=str(error)[:300], attempt=self._failures, retry_in_s=delay)
        time.sleep(delay)
