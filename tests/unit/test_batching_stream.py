"""An agent's ``take_events`` (``BatchingStream``): batches as faust's, and no wake-ups while nothing arrives."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

import faust
import pytest

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
