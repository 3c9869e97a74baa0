"""Agents lose nothing: a failing batch is handled record by record, a record that fails alone is a dead letter
with the error, and an agent that goes down turns the service unhealthy."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pytest

from services.common.agents import Supervisor


@dataclass
class Message:
    topic: str = "in"
    partition: int = 0
    offset: int = 0


@dataclass
class Event:
    key: bytes
    value: bytes
    message: Message


class Letters:
    def __init__(self) -> None:
        self.rejected: list[tuple[bytes, str]] = []
        self.flushes = 0

    async def reject(self, event: Event, reason: str) -> None:
        self.rejected.append((event.key, reason))

    async def flush(self) -> None:
        self.flushes += 1


class App:
    def __init__(self) -> None:
        self.agents: dict[str, Any] = {}

    def agent(self, topic: object, name: str) -> Any:
        def register(fun: Any) -> Any:
            self.agents[name] = fun
            return fun
        return register


def events(*keys: str) -> list[Event]:
    return [Event(k.encode(), b"v", Message(offset=i)) for i, k in enumerate(keys)]


async def test_one_failing_record_costs_no_other_record() -> None:
    letters, handled = Letters(), []
    supervisor = Supervisor(App(), letters)  # type: ignore[arg-type]

    async def handler(batch: Sequence[Event]) -> None:
        if any(e.key == b"bad" for e in batch):
            raise ValueError("record too large")
        handled.extend(e.key for e in batch)

    await supervisor.handle(events("a", "bad", "c", "d"), handler)  # type: ignore[arg-type]
    assert handled == [b"a", b"c", b"d"]
    assert letters.rejected == [(b"bad", "Ballast failed on this record (ValueError: record too large); it was not "
                                        "applied: replay it once the cause is fixed")]
    assert letters.flushes == 1 and supervisor.healthy


async def test_an_agent_that_goes_down_makes_the_service_unhealthy() -> None:
    app = App()
    supervisor = Supervisor(app, Letters())  # type: ignore[arg-type]

    async def consume(stream: Any) -> None:
        raise ConnectionError("bus gone")

    supervisor.agent(object(), consume)
    (registered,) = app.agents.values()
    with pytest.raises(ConnectionError):
        await registered(None)
    assert not supervisor.healthy and "bus gone" in supervisor.down["consume"]


async def test_cancellation_is_not_a_crash() -> None:
    app = App()
    supervisor = Supervisor(app, Letters())  # type: ignore[arg-type]

    async def consume(stream: Any) -> None:
        raise asyncio.CancelledError

    supervisor.agent(object(), consume)
    with pytest.raises(asyncio.CancelledError):
        await next(iter(app.agents.values()))(None)
    assert supervisor.healthy
