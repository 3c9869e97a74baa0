"""A restart of the simulator's Cruise Control whose warm-up the test moves through by hand: its phases are set, not
waited for, so that a loaded machine cannot shift them under the test."""

from __future__ import annotations

import asyncio
import time

import httpx

from services.cluster_sim.app import Simulator
from tests.patience import WAIT_S


async def restarted(sim: Simulator, *, down_s: float = 0.0, warmup_s: float = 1000.0) -> None:
    """Restarts it, and returns once it listens again, at the start of a warm-up (of 1,000 s by default: longer than
    any test, so that only ``at`` moves it on)."""
    await sim.restart_cruise_control(down_s=down_s, warmup_s=warmup_s)
    url = f"http://127.0.0.1:{sim.settings.cruise_control_port}/kafkacruisecontrol/state?json=true"
    deadline = time.monotonic() + WAIT_S
    async with httpx.AsyncClient() as probe:
        while True:
            try:
                await probe.get(url)
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline, "the simulator's Cruise Control did not come back"
                await asyncio.sleep(0.02)
    at(sim, 0.0)


def at(sim: Simulator, progress: float) -> None:
    """The warm-up at ``progress`` (0 to 1) of its length."""
    warm_up = sim.cruise_control.warm_up
    warm_up.started_at = time.monotonic() - progress * warm_up.length_s
