"""An agent's ``take_events`` (``BatchingStream``): batches as faust's, and no wake-ups while nothing arrives."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

import faust
import pytest

from events.bursts import HEADER, Burst
from services.common.bursts import BurstGathering
from services.common.faust_stream import BatchingStream


def _app() -> faust.App:
    return faust.App("batching-test", broker="kafka://127.0.0.1:9", store="memory://", Stream=BatchingStream,
                     web_enabled=False)


async def _until(check: Callable[[], bool], what: str) -> None:
    for _ in range(500):
        if check():
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.fixture
def counted_waits(monkeypatch: pytest.MonkeyPatch) -> list[float | None]:
    """Every wait the stream starts, with its timeout."""
    calls: list[float | None] = []
    original = BatchingStream.wait_for_stopped

    async def counting(self: Any, *coros: Any, timeout: float | None = None) -> bool:
        calls.append(timeout)
        return await original(self, *coros, timeout=timeout)

    monkeypatch.setattr(BatchingStream, "wait_for_stopped", counting)
    return calls


async def _taking(max_: int, within: float) -> tuple[Any, list[list[int]]]:
    app = _app()
    batches: list[list[int]] = []

    @app.agent()
    async def take(stream: faust.StreamT) -> AsyncIterator[None]:
        async for events in stream.take_events(max_, within=within):
            batches.append([event.value for event in events])
            yield None

    return take, batches


async def test_events_put_together_are_one_batch_and_a_full_batch_goes_at_once() -> None:
    take, batches = await _taking(3, within=0.2)
    async with take.test_context() as agent:
        for value in range(4):
            await agent.put(value, wait=False)
        await _until(lambda: sum(map(len, batches)) == 4, "four events")
    assert batches == [[0, 1, 2], [3]]


async def test_an_idle_stream_waits_once_instead_of_ticking(counted_waits: list[float | None]) -> None:
    take, batches = await _taking(100, within=0.02)
    async with take.test_context() as agent:
        await asyncio.sleep(0.5)
        # faust's own take_events starts a 20 ms wait again and again (25 here); this one waits for the first event.
        assert counted_waits == [None]
        await agent.put(7, wait=False)
        await _until(lambda: batches == [[7]], "the event")
    assert counted_waits[:2] == [None, pytest.approx(0.02, abs=0.02)]


async def _taking_quietly(within: float, quiet: float) -> tuple[Any, list[list[int]]]:
    app = _app()
    batches: list[list[int]] = []

    @app.agent()
    async def take(stream: faust.StreamT) -> AsyncIterator[None]:
        async for events in stream.take_events(1000, within=within, quiet=quiet):
            batches.append([event.value for event in events])
            yield None

    return take, batches


async def test_with_a_quiet_period_a_burst_that_comes_in_parts_is_one_batch() -> None:
    # The parts come further apart than a short fixed window (faust's within) would wait, closer than the quiet period.
    take, batches = await _taking_quietly(within=30.0, quiet=1.0)
    async with take.test_context() as agent:
        for part in ([0, 1], [2, 3, 4], [5]):
            for value in part:
                await agent.put(value, wait=False)
            await asyncio.sleep(0.1)
        await _until(lambda: sum(map(len, batches)) == 6, "six events")
    assert batches == [[0, 1, 2, 3, 4, 5]]


async def test_with_a_quiet_period_a_lone_event_waits_for_the_quiet_not_the_window(
        counted_waits: list[float | None]) -> None:
    take, batches = await _taking_quietly(within=30.0, quiet=0.05)
    async with take.test_context() as agent:
        await agent.put(7, wait=False)
        await _until(lambda: batches == [[7]], "the event")
    # It waited once for the first event, then once for the quiet period, never for the 30 s window.
    assert counted_waits[:2] == [None, pytest.approx(0.05, abs=0.01)]


async def test_a_steady_stream_still_goes_once_its_first_event_has_waited_the_window() -> None:
    take, batches = await _taking_quietly(within=0.3, quiet=10.0)
    async with take.test_context() as agent:
        for value in range(40):
            await agent.put(value, wait=False)
            await asyncio.sleep(0.05)
        await _until(lambda: sum(map(len, batches)) == 40, "forty events")
    assert len(batches) > 1 and [v for b in batches for v in b] == list(range(40))


async def _taking_bursts(within: float, quiet: float, burst_wait: float) -> tuple[Any, list[list[int]]]:
    app = _app()
    batches: list[list[int]] = []

    @app.agent()
    async def take(stream: faust.StreamT) -> AsyncIterator[None]:
        async for events in stream.take_events(1000, within=within, quiet=quiet,
                                               bursts=BurstGathering(burst_wait)):
            batches.append([event.value for event in events])
            yield None

    return take, batches


async def test_a_complete_burst_goes_without_waiting_for_the_quiet_period() -> None:
    # A 30 s quiet period and window: the batch can go within _until's 5 s only because the burst is complete.
    take, batches = await _taking_bursts(within=30.0, quiet=30.0, burst_wait=30.0)
    burst = Burst.new(3)
    async with take.test_context() as agent:
        for value in range(3):
            await agent.put(value, headers=[burst.header()], wait=False)
        await _until(lambda: sum(map(len, batches)) == 3, "the burst")
    assert batches == [[0, 1, 2]]


async def test_a_burst_whose_parts_come_further_apart_than_window_and_quiet_is_one_batch() -> None:
    take, batches = await _taking_bursts(within=0.1, quiet=0.05, burst_wait=30.0)
    burst = Burst.new(5)
    async with take.test_context() as agent:
        for part in ([0, 1], [2, 3], [4]):
            for value in part:
                await agent.put(value, headers=[burst.header()], wait=False)
            await asyncio.sleep(0.3)
        await _until(lambda: sum(map(len, batches)) == 5, "the burst")
    assert batches == [[0, 1, 2, 3, 4]]


async def test_a_burst_whose_rest_never_comes_goes_at_the_bursts_wait_and_unmarked_events_keep_the_quiet() -> None:
    take, batches = await _taking_bursts(within=0.1, quiet=0.05, burst_wait=1.5)
    burst = Burst.new(10)
    async with take.test_context() as agent:
        await agent.put(0, headers=[burst.header()], wait=False)
        await asyncio.sleep(0.3)  # past the window and the quiet period: held for the burst's rest
        await agent.put(1, headers=[burst.header()], wait=False)
        await _until(lambda: sum(map(len, batches)) == 2, "the part of the burst")
        await agent.put(7, wait=False)
        await _until(lambda: sum(map(len, batches)) == 3, "the unmarked event")
    # Two of ten came: held together until the bursts' wait, then the unmarked event alone after its quiet period.
    assert batches == [[0, 1], [7]]


async def test_a_hostile_burst_header_is_no_burst_and_the_stream_goes_on() -> None:
    take, batches = await _taking_bursts(within=0.1, quiet=0.05, burst_wait=30.0)
    async with take.test_context() as agent:
        await agent.put(0, headers=[(HEADER, b"x/" + b"9" * 5000)], wait=False)
        await _until(lambda: batches == [[0]], "the event with the hostile header, after its quiet period")
        for value in (1, 2):
            await agent.put(value, wait=False)
        await _until(lambda: sum(map(len, batches)) == 3, "the events after it")
    assert [v for b in batches for v in b] == [0, 1, 2]
