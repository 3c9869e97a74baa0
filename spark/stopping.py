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
import time
from collections.abc import Iterator
from typing import Any

# A held batch waits this long for the query's stop to interrupt it; only a stop that never comes would end it.
HOLD_MS = 120_000
# A stop waits at most this long for the query to be between two triggers, or for its next batch to be held.
IDLE_WAIT_S = 60.0


def _trigger_active(query: Any) -> bool:
    from py4j.protocol import Py4JError

    try:
        return bool(query.status["isTriggerActive"])
    except Py4JError:  # a JVM going down has no trigger left to wait for
        return False


class BatchGate:
    def __init__(self, spark: Any) -> None:
        self._jvm = spark.sparkContext._jvm
        self.requested = threading.Event()
        self._stop_sent = threading.Event()
        self._held = threading.Event()
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

    def stop(self, query: Any, settle_s: float = IDLE_WAIT_S) -> None:
        """Stops ``query`` once the batch being written (if any) is written, and then where Spark takes a stop
        quietly: between two triggers, or with the next batch held at its start. A stop while Spark plans a batch
        (its offsets, broadcasts) cuts into that work, which Spark logs as an error (seen: "Store broadcast ...
        fail"). ``settle_s``: how long to wait for either before stopping anyway."""
        self.requested.set()
        with self._writing:
            pass  # the batch being written ends; every later one holds at its start
        deadline = time.monotonic() + settle_s
        while not self._held.is_set() and time.monotonic() < deadline and _trigger_active(query):
            time.sleep(0.05)
        self._stop_sent.set()
        query.stop()

    def _hold(self) -> None:
        self._held.set()
        self._stop_sent.wait()
        # On the query's own JVM thread (PySpark pins a callback's calls to the thread that made it): interrupted by
        # the stop, this raises the InterruptedException that Spark takes for a stop, quietly.
        self._jvm.java.lang.Thread.sleep(HOLD_MS)
        raise RuntimeError(f"the query was not stopped within {HOLD_MS / 1000:.0f} s of being asked to")


class StopRequest:
    """A stop asked by a signal to this process, or by the JVM as it shuts down.

    Under ``ballast run`` this process is the parent and PySpark's JVM ignores SIGINT: a signal reaches the handler
    here. Under spark-submit the JVM is the parent: Ctrl-C (or a SIGTERM to spark-submit) runs its shutdown hooks,
    which stop the SparkContext under the query. So the job also hooks into Hadoop's shutdown manager, which Spark's
    hooks run inside, at a higher priority: it asks for the stop and holds the JVM's shutdown until the query is
    stopped, or ``timeout_s`` has passed."""

    # Hadoop's ShutdownHookManager runs higher priorities first; Spark's own hooks (the SparkContext's stop among
    # them) run inside one at FileSystem.SHUTDOWN_HOOK_PRIORITY (10) + 30.
    PRIORITY = 100

    def __init__(self) -> None:
        self.asked = threading.Event()
        self.done = threading.Event()
        self.by_jvm = False
        self._hook: Any = None

    def on_signals(self) -> None:
        import signal

        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, lambda *_: self.asked.set())

    def on_jvm_shutdown(self, spark: Any, timeout_s: float) -> None:
        from pyspark.java_gateway import ensure_callback_server_started

        request = self

        class StopFirst:
            def run(self) -> None:
                request.by_jvm = True
                request.asked.set()
                request.done.wait(timeout_s)

            # Hadoop keeps its hooks in a set: a Python object standing for a Java one answers these too.
            def hashCode(self) -> int:  # noqa: N802 -- Java's name
                return id(self) & 0x7FFFFFFF

            def equals(self, other: Any) -> bool:
                return other is self

            def toString(self) -> str:  # noqa: N802 -- Java's name
                return "ballast: stop the query first"

            class Java:
                implements = ["java.lang.Runnable"]

        gateway = spark.sparkContext._gateway
        ensure_callback_server_started(gateway)
        self._hook = StopFirst()
        jvm = spark.sparkContext._jvm
        jvm.org.apache.hadoop.util.ShutdownHookManager.get().addShutdownHook(
            self._hook, self.PRIORITY, int(timeout_s * 1000), jvm.java.util.concurrent.TimeUnit.MILLISECONDS)

    def finish(self, spark: Any) -> None:
        """The query is stopped: a shutting-down JVM goes on; otherwise the hook is removed, so that the JVM's end
        after this process's does not call back into it."""
        self.done.set()
        if self._hook is not None and not self.by_jvm:
            spark.sparkContext._jvm.org.apache.hadoop.util.ShutdownHookManager.get().removeShutdownHook(self._hook)
