"""The Spark JVM's output becomes the job's JSON log lines (spark.jvm_output): issue 29, the job's log is JSON only."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from typing import Any

import pytest

from spark.jvm_output import JvmOutput, event_of
from tests.patience import WAIT_S

LOG4J_LINE = json.dumps({"event": "Lost executor 1", "logger": "org.apache.spark.scheduler.TaskSchedulerImpl",
                         "level": "error", "exception": ""})


def test_a_log4j_line_keeps_its_level_logger_and_message_and_drops_empty_fields() -> None:
    assert event_of(LOG4J_LINE) == ("error", "Lost executor 1",
                                    {"logger": "org.apache.spark.scheduler.TaskSchedulerImpl"})


def test_any_other_line_is_a_warning_that_carries_it() -> None:
    assert event_of("WARNING: Using incubator modules: jdk.incubator.vector") == (
        "warning", "jvm output", {"line": "WARNING: Using incubator modules: jdk.incubator.vector"})
    assert event_of('["a", "list"]') == ("warning", "jvm output", {"line": '["a", "list"]'})
    assert event_of('{"event": "odd", "level": "loud"}') == ("warning", "odd", {})


class Recorder:
    def __init__(self) -> None:
        self.lines: list[tuple[str, str, dict[str, Any]]] = []

    def __getattr__(self, level: str) -> Any:
        return lambda event, **fields: self.lines.append((level, event, fields))


def test_what_a_child_started_inside_writes_to_stdout_and_stderr_is_logged_and_the_streams_come_back() -> None:
    log = Recorder()
    output = JvmOutput(log)
    streams = [os.fstat(fd) for fd in (1, 2)]
    with output.captured():
        # Written while the pipe is this process's stderr: held, and logged once the streams are back.
        os.write(2, b"during the start\n")
        child = subprocess.Popen([sys.executable, "-c", f"import sys; print('to stdout'); "
                                                        f"print({LOG4J_LINE!r}, file=sys.stderr)"])
    assert [(s.st_dev, s.st_ino) for s in map(os.fstat, (1, 2))] == [(s.st_dev, s.st_ino) for s in streams]
    # The child keeps the pipe after the window: what it writes later is logged too.
    assert child.wait(timeout=WAIT_S) == 0
    deadline = time.monotonic() + WAIT_S
    while len(log.lines) < 3 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert sorted(log.lines, key=repr) == sorted([("warning", "jvm output", {"line": "during the start"}),
                                                  ("warning", "jvm output", {"line": "to stdout"}),
                                                  ("error", "Lost executor 1",
                                                   {"logger": "org.apache.spark.scheduler.TaskSchedulerImpl"})],
                                                 key=repr)
    with pytest.raises(RuntimeError, match="captured once"), output.captured():
        pass


def test_a_line_the_log_cannot_take_is_written_as_it_came_and_reading_goes_on() -> None:
    """A logger that fails must not stop the thread: the JVM would block on a full pipe."""
    class Failing(Recorder):
        def __getattr__(self, level: str) -> Any:
            def log(event: str, **fields: Any) -> None:
                if fields.get("line") == "bad":
                    raise ValueError("cannot log this")
                self.lines.append((level, event, fields))
            return log

    log = Failing()
    output = JvmOutput(log)
    with output.captured():
        child = subprocess.Popen([sys.executable, "-c", "print('bad'); print('good')"])
    assert child.wait(timeout=WAIT_S) == 0
    deadline = time.monotonic() + WAIT_S
    while not log.lines and time.monotonic() < deadline:
        time.sleep(0.05)
    assert log.lines == [("warning", "jvm output", {"line": "good"})]
