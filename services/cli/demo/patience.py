"""How long the demo waits: as long as something moves.

A fixed time budget for the whole demo failed on a loaded machine while every step was still making progress, only
slowly. So each wait gives up only when nothing has moved for ``--timeout`` seconds (a status that changed, a count
that went up), and then says what it waited for, where the logs are and how to wait longer.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable
from pathlib import Path

from rich.console import Console


class Patience:
    def __init__(self, stall_s: float, *, logs: Path, command: str = "ballast demo",
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.stall_s = stall_s
        self.logs = logs
        self.command = command
        self._clock = clock
        self._last = clock()
        self._seen: dict[str, Hashable] = {}

    def moved(self) -> None:
        """Something progressed: the wait starts over."""
        self._last = self._clock()

    def observe(self, what: str, value: Hashable) -> None:
        """The current value of something a wait watches (a count, a state): progress when it changed."""
        if self._seen.get(what, _UNSEEN) != value:
            self._seen[what] = value
            self.moved()

    def deadline(self) -> float:
        """When the current wait gives up unless something moves first (a ``time.monotonic()`` value)."""
        return self._last + self.stall_s

    @property
    def waiting(self) -> bool:
        return self._clock() < self.deadline()

    def gave_up(self, awaited: str) -> str:
        return (f"nothing moved for {self.stall_s:.0f} s while waiting for {awaited}; the logs are in {self.logs}. "
                f"On a slow or busy machine, `{self.command} --timeout {self.stall_s * 2:.0f}` waits longer.")

    def give_up(self, console: Console, awaited: str) -> bool:
        """Say why the demo stops (``gave_up``); False, for the step to return."""
        console.print(f"[red]{self.gave_up(awaited)}[/red]", soft_wrap=True)
        return False

    def failed(self, console: Console, what: str, reason: str | None) -> bool:
        """Say that a step ended in failure, and why, rather than waiting on; False, for the step to return."""
        console.print(f"[red]{what} failed: {reason}; the logs are in {self.logs}[/red]", soft_wrap=True)
        return False


_UNSEEN = object()
