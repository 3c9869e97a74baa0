"""Two "hosts" for a Spark cluster test: network namespaces of the test's own, joined by a veth pair.

The driver's host (the bus, the Spark master, the job's driver) and the worker's host get private addresses inside
their namespaces only; nothing outside them changes, and the machine's own network keeps its loopback-only rule.
Every process runs under ``ip netns exec``; the worker's also sees Ballast's packages hidden under empty read-only
mounts (its own mount namespace), so its executors can only import Ballast from what the job ships them.

A run killed before its teardown leaves named namespaces behind: the next run removes those whose test process is
gone (the pid is in the name), with everything still running inside them.
"""

from __future__ import annotations

import os
import re
import secrets
import shlex
import signal
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from services.local.broker import popen

PREFIX = "ballast-test-"
DRIVER_ADDRESS = "10.213.0.1"
WORKER_ADDRESS = "10.213.0.2"


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["ip", *args], capture_output=True, text=True, timeout=30, check=check)


def namespaces() -> list[str]:
    return [line.split()[0] for line in _ip("netns", "list").stdout.splitlines() if line.strip()]


def kill_inside(namespace: str) -> None:
    """Every process in ``namespace``, at once: only what a test started runs there."""
    for pid in _ip("netns", "pids", namespace, check=False).stdout.split():
        try:
            os.kill(int(pid), signal.SIGKILL)
        except ProcessLookupError:
            pass


def remove(namespace: str) -> None:
    kill_inside(namespace)
    deadline = time.monotonic() + 30
    while _ip("netns", "pids", namespace, check=False).stdout.split() and time.monotonic() < deadline:
        time.sleep(0.2)
    _ip("netns", "delete", namespace, check=False)


def remove_stale(prefix: str = PREFIX) -> list[str]:
    """The namespaces of earlier runs whose test process is gone; those of live runs are theirs."""
    removed = []
    for name in namespaces():
        match = re.fullmatch(rf"{re.escape(prefix)}(\d+)-[0-9a-f]+-(driver|worker)", name)
        if match and not Path(f"/proc/{match.group(1)}").exists():
            remove(name)
            removed.append(name)
    return removed


class Hosts:
    def __init__(self) -> None:
        stem = f"{PREFIX}{os.getpid()}-{secrets.token_hex(3)}"
        self.driver = f"{stem}-driver"
        self.worker = f"{stem}-worker"
        self.processes: list[subprocess.Popen[bytes]] = []

    def create(self) -> None:
        for namespace in (self.driver, self.worker):
            _ip("netns", "add", namespace)
            _ip("-n", namespace, "link", "set", "lo", "up")
        # Made inside the driver's namespace and its peer put straight into the worker's: no name of it ever exists in
        # the machine's own namespace.
        _ip("-n", self.driver, "link", "add", "veth0", "type", "veth", "peer", "name", "veth0", "netns", self.worker)
        for namespace, address in ((self.driver, DRIVER_ADDRESS), (self.worker, WORKER_ADDRESS)):
            _ip("-n", namespace, "addr", "add", f"{address}/30", "dev", "veth0")
            _ip("-n", namespace, "link", "set", "veth0", "up")

    def start(self, namespace: str, command: list[str], log: Path, *, env: dict[str, str] | None = None,
              cwd: Path | None = None, hide: list[Path] = ()) -> subprocess.Popen[bytes]:
        """``command`` in ``namespace``, in a process group of its own, with ``hide``'s folders under empty mounts."""
        if hide:
            mounts = "; ".join(f"mount -t tmpfs -o ro,size=4k ballast-hidden {shlex.quote(str(p))}" for p in hide)
            command = ["sh", "-c", f"{mounts} && exec {shlex.join(command)}"]
        with log.open("ab") as out:
            process = popen(["ip", "netns", "exec", namespace, *command], stdout=out, stderr=subprocess.STDOUT,
                            env=env, cwd=cwd)
        self.processes.append(process)
        return process

    def run(self, namespace: str, command: list[str], *, env: dict[str, str] | None = None, cwd: Path | None = None,
            input: str | None = None, timeout: float = 180) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["ip", "netns", "exec", namespace, *command], capture_output=True, text=True, env=env,
                              cwd=cwd, input=input, timeout=timeout)

    def stop(self) -> None:
        for process in self.processes:
            if process.poll() is None:
                try:
                    os.killpg(process.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
        deadline = time.monotonic() + 20
        for process in self.processes:
            try:
                process.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
        for namespace in (self.driver, self.worker):
            remove(namespace)
        for process in self.processes:
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass


@contextmanager
def two_hosts() -> Iterator[Hosts]:
    remove_stale()
    hosts = Hosts()
    try:
        hosts.create()
        yield hosts
    finally:
        hosts.stop()
