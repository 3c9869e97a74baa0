"""How many of Cruise Control's user tasks one client may hold at once.

Cruise Control makes every request a user task, GETs included, and refuses a request with 500 "servlet capacity"
while ``max.active.user.tasks`` (5 by default) are active. A task counts as active from its request until Cruise
Control's task scanner, which runs every 5 s, finds it finished; a proposal answered 202 stays active until it is
computed. So the budget is counted the same way: a slot is taken before a request and given back a scanner period
after the task ended. Each service holds its own share (``CruiseControlSettings.user_task_shares``); the shares
together stay below Cruise Control's limit, so Ballast's services never refuse each other, and people keep room.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from prometheus_client import Histogram

from services.adapters.cruise_control.errors import ShareHeldByComputingTasks
from services.common.logging import get_logger

log = get_logger(__name__)

BUDGET_WAIT_SECONDS = Histogram("ballast_cruise_control_budget_wait_seconds", "Time a request to Cruise Control "
                                "waited for a user-task slot of its service's share",
                                buckets=(0.001, 0.01, 0.1, 0.5, 1, 2.5, 5, 10, 30, 60))


class TaskBudget:
    def __init__(self, slots: int, *, retention_s: float, max_hold_s: float = 180.0) -> None:
        """``retention_s``: how long Cruise Control keeps a finished task active (its scanner period);
        ``max_hold_s``: a task answered 202 that nobody asks about again frees its slot after this long."""
        self.slots = slots
        self.retention_s = retention_s
        self.max_hold_s = max_hold_s
        self._free = asyncio.Semaphore(slots)
        # Tasks still computing (answered 202): their slot stays taken until their answer comes.
        self._computing: dict[str, asyncio.TimerHandle] = {}

    @property
    def in_use(self) -> int:
        return self.slots - self._free._value  # noqa: SLF001 - asyncio exposes no public count

    @property
    def free(self) -> bool:
        """A request now would not wait for a slot."""
        return not self._free.locked()

    @asynccontextmanager
    async def new_task(self) -> AsyncIterator[_Slot]:
        """Around one request that creates a task. Call ``computing(task_id)`` on the yielded slot when Cruise
        Control answered 202: the task stays active in Cruise Control, and its slot stays taken here."""
        started = time.monotonic()
        while True:
            if self._free.locked() and len(self._computing) >= self.slots:
                # Only an answer frees a slot now: waiting here could wait on the caller itself (it follows them).
                raise ShareHeldByComputingTasks(
                    f"this service's {self.slots} user task(s) of Cruise Control are held by tasks still computing")
            try:
                # Re-checked every second: a slot held by a request in flight may become a computing task's.
                await asyncio.wait_for(self._free.acquire(), timeout=1.0)
                break
            except TimeoutError:
                continue
        BUDGET_WAIT_SECONDS.observe(time.monotonic() - started)
        slot = _Slot()
        try:
            yield slot
        finally:
            if slot.computing_task is not None:
                self._hold(slot.computing_task)
            else:
                self._release_later()

    def holds(self, task_id: str) -> bool:
        """The task answered 202 and still holds its slot (neither answered since nor given up)."""
        return task_id in self._computing

    def answered(self, task_id: str) -> None:
        """The final answer of a task that was computing: its slot is given back a scanner period later."""
        handle = self._computing.pop(task_id, None)
        if handle is not None:
            handle.cancel()
            self._release_later()

    def _hold(self, task_id: str) -> None:
        if task_id in self._computing:  # the same task answered 202 again: it holds one slot, not two
            self._release_later()
            return
        loop = asyncio.get_running_loop()
        self._computing[task_id] = loop.call_later(self.max_hold_s, self._abandon, task_id)

    def _abandon(self, task_id: str) -> None:
        if self._computing.pop(task_id, None) is not None:
            log.info("a computing task was never asked about again; its user-task slot is free", task=task_id)
            self._free.release()

    def _release_later(self) -> None:
        asyncio.get_running_loop().call_later(self.retention_s, self._free.release)


class _Slot:
    def __init__(self) -> None:
        self.computing_task: str | None = None

    def computing(self, task_id: str) -> None:
        self.computing_task = task_id
