"""Waits on a Structured Streaming query by what it has read, never by time.

Spark reports a micro-batch's progress (its ``numInputRows``) only after the batch has run, its sink included, so a
query that has reported N input rows has written everything those rows produce. A test that knows how many records it
put on the bus waits for exactly that many (and for their commit), and can then check that a restart reads no more
than the new ones. Its queries are the job's (``spark.restarts.RestartingQuery``): started again, as the job's are,
when a Python worker of Spark's was too slow to start."""

from __future__ import annotations

import time

from spark.restarts import RestartingQuery


def wait_for_rows(query: RestartingQuery, rows: int, timeout_s: float = 300) -> int:
    """Until the query has read and written at least ``rows`` input rows, and committed what it read (so a query
    started again from its checkpoint goes on after them); the rows read. Fails at once when the query fails for good,
    and after ``timeout_s`` with what it had read."""
    deadline = time.monotonic() + timeout_s
    while (read := query.rows_read()) < rows:
        assert query.check(), f"the query stopped after {read} of {rows} rows"
        assert time.monotonic() < deadline, f"the query read {read} of {rows} rows in {timeout_s:.0f} s"
        time.sleep(0.2)
    # A batch's progress is reported before its commit is written: a query stopped in between runs that batch again
    # when it restarts (seen on a loaded machine). Spark's own wait for everything available to be committed:
    query.query.processAllAvailable()
    return query.rows_read()
