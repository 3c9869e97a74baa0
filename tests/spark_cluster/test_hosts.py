"""The test hosts' namespaces: a run killed before its teardown leaves them behind, and the next run removes them,
processes included, without touching those of a run still going."""

from __future__ import annotations

import os
import subprocess
import time

import pytest

from tests.patience import WAIT_S
from tests.spark_cluster.hosts import PREFIX, namespaces, remove, remove_stale

pytestmark = pytest.mark.spark_cluster


def dead_pid() -> int:
    """The pid of a process that has just ended."""
    pid = int(subprocess.run(["sh", "-c", "echo $$"], capture_output=True, text=True, check=True).stdout)
    assert not os.path.exists(f"/proc/{pid}")
    return pid


def test_a_killed_runs_namespaces_are_removed_with_what_runs_in_them_and_a_live_runs_are_kept() -> None:
    # Under a prefix of this test's own: the cluster's module, in another worker, removes stale namespaces too.
    prefix = f"{PREFIX}hosts-"
    stale, live = f"{prefix}{dead_pid()}-abc123-worker", f"{prefix}{os.getpid()}-abc123-driver"
    sleeper = None
    try:
        for name in (stale, live):
            subprocess.run(["ip", "netns", "add", name], check=True)
        sleeper = subprocess.Popen(["ip", "netns", "exec", stale, "sleep", "600"])
        deadline = time.monotonic() + WAIT_S
        while str(sleeper.pid) not in subprocess.run(["ip", "netns", "pids", stale], capture_output=True,
                                                     text=True).stdout.split():
            assert time.monotonic() < deadline and sleeper.poll() is None, "the sleeper never ran in the namespace"
            time.sleep(0.05)
        assert stale in remove_stale(prefix)
        assert stale not in namespaces() and live in namespaces()
        assert sleeper.wait(timeout=30) == -9  # killed with its namespace
    finally:
        for name in (stale, live):
            if name in namespaces():
                remove(name)
        if sleeper and sleeper.poll() is None:
            sleeper.kill()
