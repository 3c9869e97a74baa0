"""What the local stack starts stops with it, even when the process that started it is killed (-9), as a test run
can be; ``ballast up`` (detached) is the one exception."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

STARTER = """
import json, sys, time
from pathlib import Path
from services.local.stack import LocalStack
stack = LocalStack(Path(sys.argv[1]), services=("replicas-change",)).start()
print("PIDS " + json.dumps({name: p.pid for name, p in stack.processes.items()}), flush=True)
time.sleep(600)
"""


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    status = Path(f"/proc/{pid}/status")
    return status.exists() and "State:\tZ" not in status.read_text()


def test_a_killed_starter_takes_its_broker_and_services_with_it(tmp_path: Path) -> None:
    starter = subprocess.Popen([sys.executable, "-c", STARTER, str(tmp_path)], stdout=subprocess.PIPE, text=True)
    try:
        assert starter.stdout is not None
        line = next(line for line in starter.stdout if line.startswith("PIDS "))
        pids = json.loads(line.removeprefix("PIDS "))
        assert set(pids) == {"broker", "cluster-sim", "replicas-change"} and all(alive(p) for p in pids.values())
    finally:
        starter.send_signal(signal.SIGKILL)
        starter.wait(timeout=10)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and any(alive(p) for p in pids.values()):
        time.sleep(0.2)
    left = {name: pid for name, pid in pids.items() if alive(pid)}
    for pid in left.values():
        os.killpg(pid, signal.SIGKILL)
    assert left == {}, f"still running after their starter was killed: {left}"
