"""Faults the tests inject into the simulated Cruise Control: error answers and added latency per endpoint."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field


@dataclass
class InjectedError:
    endpoint: str  # "topic_configuration", "user_tasks", ... or "*" for every endpoint
    status: int
    message: str
    remaining: int  # how many requests still get it; -1 = until cleared


@dataclass
class FaultPlan:
    errors: list[InjectedError] = field(default_factory=list)
    latency_s: dict[str, float] = field(default_factory=dict)
    # Endpoints whose latency comes after the request is handled (the task exists; only the answer is late), as when
    # Cruise Control is slow to answer, rather than before it (the request may never be handled).
    latency_after: set[str] = field(default_factory=set)
    # Basic-auth credentials Cruise Control requires (None: no authentication). Settable at run time.
    credentials: tuple[str, str] | None = None
    # Answers of the admin API (what the cluster-admin port reads) replaced by plain-text errors, as a proxy or an
    # overloaded server sends them; ``endpoint`` matches a path fragment ("topics/describe") or "*".
    admin_errors: list[InjectedError] = field(default_factory=list)
    # A batch creation cut short in its middle, as by a controller failing over during a CreateTopics request: once
    # this many more topics are made, a request makes nothing more (one that has made none yet makes one first) and
    # holds its answer until the fault is cleared (None: no cut). ``cut_held``: the requests held now, and the topics
    # they made.
    cut_after: int | None = None
    cut_held: int = 0
    cut_held_made: int = 0
    _cut_released: asyncio.Event = field(default_factory=asyncio.Event)

    def cut_batches(self, after_topics: int) -> None:
        self.cut_after = after_topics
        self._cut_released = asyncio.Event()

    def cut_here(self, made_in_request: int) -> bool:
        """Whether a batch creation that has made ``made_in_request`` topics stops before its next one."""
        if self.cut_after is None:
            return False
        if self.cut_after > 0 or made_in_request == 0:
            self.cut_after = max(self.cut_after - 1, 0)
            return False
        return True

    async def held_at_cut(self, made_in_request: int) -> None:
        """Hold a request cut short until the fault is cleared."""
        self.cut_held += 1
        self.cut_held_made += made_in_request
        try:
            await self._cut_released.wait()
        finally:
            self.cut_held -= 1
            self.cut_held_made -= made_in_request

    def take_error(self, endpoint: str) -> tuple[int, str] | None:
        for error in self.errors:
            if error.endpoint in (endpoint, "*") and error.remaining != 0:
                if error.remaining > 0:
                    error.remaining -= 1
                return error.status, error.message
        return None

    def take_admin_error(self, path: str) -> tuple[int, str] | None:
        for error in self.admin_errors:
            if (error.endpoint == "*" or error.endpoint in path) and error.remaining != 0:
                if error.remaining > 0:
                    error.remaining -= 1
                return error.status, error.message
        return None

    def latency_for(self, endpoint: str) -> float:
        return self.latency_s.get(endpoint, self.latency_s.get("*", 0.0))

    def clear(self) -> None:
        self.errors.clear()
        self.admin_errors.clear()
        self.latency_s.clear()
        self.latency_after.clear()
        self.cut_after = None
        self._cut_released.set()
