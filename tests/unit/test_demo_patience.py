"""The demo waits as long as something moves (issue 29: a fixed 300 s budget failed on a loaded machine), and its
section lines fit a terminal when piped."""

from __future__ import annotations

import io
from pathlib import Path

from rich.console import Console

from services.cli.demo.patience import Patience
from services.cli.output import _Console, section


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_wait_gives_up_only_after_the_stall_limit_without_progress() -> None:
    clock = Clock()
    patience = Patience(60, logs=Path("/tmp/run/logs"), clock=clock)
    for _ in range(10):  # ten minutes of slow progress: a status change every 50 s
        clock.now += 50
        assert patience.waiting
        patience.moved()
    clock.now += 59
    assert patience.waiting and patience.deadline() == clock.now + 1
    clock.now += 1
    assert not patience.waiting


def test_an_observed_value_is_progress_only_when_it_changes() -> None:
    clock = Clock()
    patience = Patience(60, logs=Path("/tmp/run/logs"), clock=clock)
    patience.observe("replicas in d0", 3)
    clock.now += 40
    patience.observe("replicas in d0", 3)  # the same count: nothing moved
    clock.now += 20
    assert not patience.waiting
    patience.observe("replicas in d0", 4)
    assert patience.waiting


def test_giving_up_says_what_was_awaited_where_the_logs_are_and_how_to_wait_longer() -> None:
    out = io.StringIO()
    patience = Patience(180, logs=Path("/tmp/run/logs"), command="ballast demo --kafka")
    assert patience.give_up(Console(file=out, width=300), "the disk rebalance") is False
    said = out.getvalue()
    assert "nothing moved for 180 s while waiting for the disk rebalance" in said
    assert "/tmp/run/logs" in said and "ballast demo --kafka --timeout 360" in said


def test_a_failed_step_says_why_and_where_the_logs_are() -> None:
    out = io.StringIO()
    patience = Patience(180, logs=Path("/tmp/run/logs"))
    assert patience.failed(Console(file=out, width=300), "the drain", "Not enough remaining capacity") is False
    assert out.getvalue().strip() == "the drain failed: Not enough remaining capacity; the logs are in /tmp/run/logs"


def test_a_section_line_piped_is_a_little_wider_than_its_title() -> None:
    out = io.StringIO()
    section(_Console(file=out), "[bold]1. create 6 topics")
    (line,) = out.getvalue().splitlines()
    assert "1. create 6 topics" in line and len(line) == 80
    out = io.StringIO()
    title = "4. scale-up: brokers 7, 8, 9 join; an add-brokers rebalance moves replicas onto them only, step " * 2
    section(_Console(file=out), title)
    (line,) = out.getvalue().splitlines()
    assert title.strip() in line and len(line) <= len(title) + 8
