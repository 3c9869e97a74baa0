"""Waits on a Structured Streaming query by what it has read, never by time.

Spark reports a micro-batch's progress (its ``numInputRows``) only after the batch has run, its sink included, so a
query that has reported N input rows has written everything those rows produce. A test that knows how many records it
put on the bus waits for exactly that many (and for their commit), and can then check that a restart reads no more
than the new ones."""

from __future__ import annotations

import time
from typing import Any


def rows_read(query: Any) -> int:
    """Input rows over every batch this query has run (Spark keeps the last 100 progress reports: plenty for a test)."""
    return sum(progress["numInputRows"] for progress in query.recentProgress)


def wait_for_rows(query: Any, rows: int, timeout_s: float = 300) -> int:
    """Until the query has read and written at least ``rows`` input rows, and committed what it read (so a query
    started again from its checkpoint goes on after them); the rows read. Fails at once when the query fails, and
    after ``timeout_s`` with what it had read."""
    deadline = time.monotonic() + timeout_s
    while (read := rows_read(query)) < rows:
        assert query.exception() is None, query.exception()
        assert time.monotonic() < deadline, f"the query read {read} of {rows} rows in {timeout_s:.0f} s"
        time.sleep(0.2)
    # A batch's progress is reported before its commit is written: a query stopped in between runs that batch again
    # when it restarts (seen on a loaded machine). Spark's own wait for everything available to be committed:
    query.processAllAvailable()
    return rows_read(query)
