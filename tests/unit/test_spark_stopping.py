"""Where the job's stop lands (spark.stopping.BatchGate): after the batch being written, and then between two
triggers or with the next batch held at its start, never while Spark plans a batch (a stop there cut into Spark's
broadcast of the next batch, which Spark logged as an error: seen under spark-submit in tests/spark_cluster)."""

from __future__ import annotations

import threading
from types import SimpleNamespace

import pytest

from spark.stopping import BatchGate


class FakeQuery:
    """A query whose trigger is active for the first ``active_polls`` looks at its status (None: always)."""

    def __init__(self, active_polls: int | None) -> None:
        self.active_polls = active_polls
        self.polls = 0
        self.stopped_after: int | None = None
        self.stopped = threading.Event()

    @property
    def status(self) -> dict:
        self.polls += 1
        return {"isTriggerActive": self.active_polls is None or self.polls <= self.active_polls}

    def stop(self) -> None:
        self.stopped_after = self.polls
        self.stopped.set()


def gate_for(query: FakeQuery) -> BatchGate:
    def sleep(_ms: int) -> None:  # the held batch's sleep, which the query's stop interrupts
        assert query.stopped.wait(10)

    jvm = SimpleNamespace(java=SimpleNamespace(lang=SimpleNamespace(Thread=SimpleNamespace(sleep=sleep))))
    return BatchGate(SimpleNamespace(sparkContext=SimpleNamespace(_jvm=jvm)))


def test_a_stop_while_spark_plans_a_batch_waits_for_the_trigger_to_end() -> None:
    query = FakeQuery(active_polls=3)
    gate_for(query).stop(query, settle_s=30)
    assert query.stopped_after == 4  # the first look that found the query between two triggers


def test_a_stop_lands_at_once_when_the_next_batch_is_held_at_its_start() -> None:
    query = FakeQuery(active_polls=None)  # batches back to back: never between two triggers
    gate = gate_for(query)
    gate.requested.set()
    held = threading.Thread(target=lambda: pytest.raises(RuntimeError, lambda: gate.batch().__enter__()))
    held.start()  # the next batch reaches the sink and is held
    assert gate._held.wait(10)
    gate.stop(query, settle_s=30)
    held.join(10)
    assert query.stopped_after == 0  # no look at the trigger: the held batch is where the stop lands
    assert not held.is_alive()


def test_a_query_that_never_goes_idle_is_stopped_anyway_after_the_wait() -> None:
    query = FakeQuery(active_polls=None)
    gate_for(query).stop(query, settle_s=0.2)
    assert query.stopped.is_set()
