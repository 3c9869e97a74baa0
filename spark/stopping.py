"""A stop that lands between two batches of a ``foreachBatch`` query.

``StreamingQuery.stop()`` cancels the Spark jobs of the batch being written. When the job is behind (a batch takes
longer than the trigger interval: seen on a loaded machine) there is no moment between batches to wait for, and the
cancelled batch ends in some thousand lines of traces: the sink's py4j error, and Spark's own check of it, whose
regex overflows the stream thread's stack on a long message. The gate makes the stop wait for the batch being
written, and holds the next one at its start until the stop has been asked; that batch then ends as Spark expects
an interrupted ``foreachBatch`` to (an ``InterruptedException`` through py4j, SPARK-39218) and is not committed, so
the next start writes it.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Iterator
from typing import Any

# A held batch waits this long for the query's stop to interrupt it; only a stop that never comes would end it.
HOLD_MS = 120_000


class BatchGate:
    def __init__(self, spark: Any) -> None:
        self._jvm = spark.sparkContext._jvm
        self.requested = threading.Event()
        self._stop_sent = threading.Event()
        self._writing = threading.Lock()
        # py4j logs the held batch's InterruptedException as a failed callback: it is the stop, said once by the job.
        for name in ("py4j.clientserver", "py4j.java_gateway"):
            logging.getLogger(name).addFilter(lambda _record: not self._stop_sent.is_set())

    @contextlib.contextmanager
    def batch(self) -> Iterator[None]:
        """Around a batch's writing, on the query's thread."""
        with self._writing:
            if not self.requested.is_set():
                yield
                return
        self._hold()

    def stop(self, query: Any) -> None:
        """Stops ``query`` once the batch being written (if any) is written."""
        self.requested.set()
        with self._writing:
            pass  # the batch being written ends; every later one holds at its start
        self._stop_sent.set()
        query.stop()

    def _hold(self) -> None:
        self._stop_sent.wait()
        # On the query's own JVM thread (PySpark pins a callback's calls to the thread that made it): interrupted by
        # the stop, this raises the InterruptedException that Spark takes for a stop, quietly.
        self._jvm.java.lang.Thread.sleep(HOLD_MS)
        raise RuntimeError(f"the query was not stopped within {HOLD_MS / 1000:.0f} s of being asked to")
