"""Reading a compacted topic to its end (busio.read_compacted) with a consumer that hands records over slowly, on a
clock that advances by itself: no wall-clock time is waited or asserted. Issue 52: at 100,000 topics a loaded
machine took longer than the read's 60 s to decode every record, and a read still progressing failed every start."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from events import TOPICS, TopicSpec, encode
from services.common import busio
from services.common.settings import BusSettings


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def monotonic(self) -> float:
        return self.now


class Message:
    def __init__(self, offset: int, spec: TopicSpec) -> None:
        self._offset, self._spec = offset, spec

    def error(self) -> None:
        return None

    def partition(self) -> int:
        return 0

    def offset(self) -> int:
        return self._offset

    def key(self) -> bytes:
        return self._spec.name.encode()

    def value(self) -> bytes:
        return encode(self._spec)


class SlowConsumer:
    """``records`` specs, one per call, each call taking ``step_s`` on the clock; ``high``: the watermark told."""

    def __init__(self, clock: Clock, records: int, step_s: float, high: int | None = None) -> None:
        self.clock, self.step_s = clock, step_s
        self.messages = [Message(i, TopicSpec(name=f"t-{i % 50}", partitions=1 + i // 50)) for i in range(records)]
        self.high = records if high is None else high

    def list_topics(self, name: str, timeout: float) -> SimpleNamespace:
        return SimpleNamespace(topics={name: SimpleNamespace(error=None, partitions={0: None})})

    def get_watermark_offsets(self, tp: object, timeout: float) -> tuple[int, int]:
        return 0, self.high

    def assign(self, partitions: object) -> None:
        pass

    def _next(self) -> list[Message]:
        self.clock.now += self.step_s
        return [self.messages.pop(0)] if self.messages else []

    def poll(self, timeout: float) -> Message | None:
        taken = self._next()
        return taken[0] if taken else None

    def consume(self, num_messages: int, timeout: float) -> list[Message]:
        return self._next()

    def close(self) -> None:
        pass


@pytest.fixture
def clock(monkeypatch) -> Clock:
    clock = Clock()
    monkeypatch.setattr(busio, "time", SimpleNamespace(monotonic=clock.monotonic))
    return clock


def test_a_read_that_keeps_progressing_reaches_the_end_however_long_it_takes(clock, monkeypatch) -> None:
    consumer = SlowConsumer(clock, records=200, step_s=1.0)  # 200 s on the clock, a record every second
    monkeypatch.setattr(busio, "Consumer", lambda config: consumer)
    latest = busio.read_compacted(BusSettings(), TOPICS.specs, timeout_s=10.0)
    assert len(latest) == 50 and latest["t-49"].offset == 199 and latest["t-49"].decoded.event.partitions == 4


def test_a_read_with_no_record_for_the_timeout_before_its_end_fails(clock, monkeypatch) -> None:
    consumer = SlowConsumer(clock, records=5, step_s=1.0, high=100)  # the watermark says more are coming
    monkeypatch.setattr(busio, "Consumer", lambda config: consumer)
    with pytest.raises(TimeoutError, match="could not read ballast.topic.specs to its end"):
        busio.read_compacted(BusSettings(), TOPICS.specs, timeout_s=10.0)


def test_a_topic_written_without_pause_is_read_a_little_past_its_watermark_then_left_to_the_live_consumer(
        clock, monkeypatch) -> None:
    consumer = SlowConsumer(clock, records=1000, step_s=0.1, high=10)  # never idle: a record every 0.1 s
    monkeypatch.setattr(busio, "Consumer", lambda config: consumer)
    latest = busio.read_compacted(BusSettings(), TOPICS.specs, idle_s=0.5, timeout_s=1000.0)
    assert latest["t-9"].offset >= 9
    assert consumer.messages, "the read ended before the writes did"
