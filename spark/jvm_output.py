"""The Spark JVM's output as the job's own JSON log lines.

PySpark starts its JVM with the job's stdout and stderr, and the JVM starts the Python workers with them: their lines
(the JVM's own warnings, Spark's log4j lines, a worker's traceback) would land in the job's log between its JSON
lines. While the session starts, the two descriptors the JVM inherits are a pipe instead; a thread turns each line into
a structlog event: Spark's log4j lines, JSON already (spark/log4j2.properties), keep their level, logger and
exception; anything else becomes a warning ``jvm output`` with the line. Each event is stamped when it is read, and
what this process itself prints while the session starts (a Python warning, say) is read back as ``jvm output`` too.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

LOG4J2_CONFIG = Path(__file__).with_name("log4j2.properties")
LEVELS = ("debug", "info", "warning", "error", "critical")


def java_options() -> str:
    return f"-Dlog4j2.configurationFile={LOG4J2_CONFIG.as_uri()}"


def event_of(line: str) -> tuple[str, str, dict[str, Any]]:
    """(level, event, fields) of one line of the JVM's output."""
    try:
        record = json.loads(line)
    except ValueError:
        record = None
    if not isinstance(record, dict) or not isinstance(record.get("event"), str):
        return "warning", "jvm output", {"line": line}
    level = record.pop("level", "warning")
    event = record.pop("event")
    fields = {key: value for key, value in record.items() if value not in ("", None)}
    return (level if level in LEVELS else "warning"), event, fields


class JvmOutput:
    """Logs what the JVM started inside :meth:`captured` writes, for as long as this process runs."""

    def __init__(self, log: Any) -> None:
        self._log = log
        self._last_line = time.monotonic()
        # While the pipe is this process's stderr, a line logged would come back through it: lines wait until then.
        self._lock = threading.Lock()
        self._held: list[str] | None = []
        self._thread: threading.Thread | None = None

    @contextmanager
    def captured(self) -> Iterator[None]:
        if self._thread is not None:
            raise RuntimeError("one JVM per JvmOutput: its output is captured once")
        read_end, write_end = os.pipe()
        self._thread = threading.Thread(target=self._forward, args=(read_end,), name="jvm-output", daemon=True)
        self._thread.start()
        sys.stdout.flush()
        sys.stderr.flush()
        saved = os.dup(1), os.dup(2)
        os.dup2(write_end, 1)
        os.dup2(write_end, 2)
        failed = True
        try:
            yield
            failed = False
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            for fd, original in zip((1, 2), saved, strict=True):
                os.dup2(original, fd)
                os.close(original)
            os.close(write_end)
            with self._lock:
                held, self._held = self._held or [], None
                for line in held:
                    self._emit(line)
            if failed:
                # A JVM that failed to start says why on its way out: read it to the end before the error ends
                # this process (a JVM still running keeps the pipe open: the wait is bounded).
                self._thread.join(timeout=5)

    def settle(self, quiet_s: float = 0.3, within_s: float = 3.0) -> None:
        """Waits, at most ``within_s``, until nothing has come for ``quiet_s``: the lines a stopping query writes
        (the JVM itself goes with this process, so its pipe never ends before)."""
        deadline = time.monotonic() + within_s
        while time.monotonic() < deadline and time.monotonic() - self._last_line < quiet_s:
            time.sleep(0.05)

    def _forward(self, read_end: int) -> None:
        with open(read_end, encoding="utf-8", errors="replace") as lines:
            for line in lines:
                self._last_line = time.monotonic()
                with self._lock:
                    if self._held is not None:
                        self._held.append(line)
                    else:
                        self._emit(line)

    def _emit(self, line: str) -> None:
        if not line.strip():
            return
        try:
            level, event, fields = event_of(line.rstrip("\n"))
            getattr(self._log, level)(event, **fields)
        except Exception:  # noqa: BLE001 - the thread must go on reading, or a full pipe would stall the JVM
            os.write(2, line.encode(errors="replace"))
