"""The reliability run of ``bench.reliability`` at a size that fits the suite: hostile records on every topic an
agent reads, each one a dead letter, none lost, no crash, every service back after kill -9."""

from __future__ import annotations

from bench.reliability import READ_BY_AGENTS, run
from tests.integration.harness import Ballast


def test_hostile_records_on_every_topic_are_dead_letters_and_nothing_crashes(ballast: Ballast) -> None:
    outcome = run(ballast.stack, 200, seed=3, timeout_s=180)
    assert outcome.sent == {topic: 200 for topic in READ_BY_AGENTS}
    assert outcome.dead_lettered == outcome.sent, f"lost {outcome.lost}"
    assert outcome.crashes == []
    assert outcome.valid_sent == 2 and outcome.valid_converged == 2
    assert outcome.restarts_healthy == 3
