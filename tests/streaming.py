"""Waits on a Structured Streaming query by what it has read, never by time.

Spark reports a micro-batch's progress (its ``numInputRows``) only after the batch has run, its sink included, so a
query that has reported N input rows has written everything those rows produce. A test that knows how many records it
put on the bus waits for exactly that many (and for their commit), and can then check that a restart reads no more
than the new ones. Its queries are the job's (``spark.restarts.RestartingQuery``): started again, as the job's are,
when a Python worker of Spark's was too slow to start."""

from __future__ import annotations

import time

from spark.restarts import RestartingQuery


def wait_for_rows(query: RestartingQuery, rows: int, stall_s: float = 300) -> int:
    """Until the query has read and written at least ``rows`` input rows, and committed what it read (so a query
    started again from its checkpoint goes on after them); the rows read. Fails at once when the query fails for good,
    and once nothing has moved for ``stall_s``: no row read, no restart, no new step of the query's own status
    (initializing its sources, getting offsets, processing). A loaded machine is slow, not stuck (seen beside another
    suite: four minutes for the Spark session, five more for the first batch)."""
    moved, seen = time.monotonic(), None
    while (read := query.rows_read()) < rows:
        assert query.check(), f"the query stopped after {read} of {rows} rows"
        now = (read, query.restarts, query.query.status["message"])
        if now != seen:
            moved, seen = time.monotonic(), now
        assert time.monotonic() - moved < stall_s, \
            f"the query read {read} of {rows} rows, and nothing moved for {stall_s:.0f} s: {query.query.status}"
        time.sleep(0.2)
    # A batch's progress is reported before its commit is written: a query stopped in between runs that batch again
    # when it restarts (seen on a loaded machine). Spark's own wait for everything available to be committed:
    query.query.processAllAvailable()
    return query.rows_read()
