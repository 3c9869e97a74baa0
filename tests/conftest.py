from __future__ import annotations

import atexit
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

from services.local.broker import port_range
from tests.scheduling import GroupScheduling, rank_of
from tests.tiers import tier_of

# `make test` (and CI) runs the property tests on a fixed set of examples, so a run is reproducible and a red build
# means a change, not a new random draw. To explore further: HYPOTHESIS_PROFILE=explore make test, or pytest
# --hypothesis-seed=N.
settings.register_profile("repeatable", derandomize=True)
settings.register_profile("explore", derandomize=False)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "repeatable"))

REPO = Path(__file__).resolve().parents[1]

# Pytest keeps the test modules it rewrites (their asserts) as bytecode only where Python may write bytecode. Where
# PYTHONDONTWRITEBYTECODE is set, as on this machine, each of a run's workers rewrote and compiled every test module
# again at every run: collecting the suite took 10-11.5 s of CPU per process, and 4.6-5.8 s with the rewritten modules
# kept (2026-12-02). Only this process: what the tests start runs on Ballast's modules compiled ahead (`make bytecode`).
sys.dont_write_bytecode = False

# The CLI uses the stack `ballast up` started when nothing else says where the bus is: tests never see a developer's
# stack (their own `ballast up` runs record theirs here, or in a directory of their own).
os.environ["BALLAST_STATE_DIR"] = tempfile.mkdtemp(prefix="ballast-test-state-")
atexit.register(shutil.rmtree, os.environ["BALLAST_STATE_DIR"], ignore_errors=True)
SHARED = REPO.parent / "shared" / "reference"
# The CLI's output is tested as a pipe gets it (no width limit); pytest-xdist's workers are started with COLUMNS=80 and
# LINES=24, which rich would take for a terminal's size.
for _size in ("COLUMNS", "LINES"):
    os.environ.pop(_size, None)


def _own_port_range() -> None:
    """Each of `make test`'s workers (pytest-xdist) picks its stacks' ports from a slice of its own, so that two workers
    starting stacks at once never pick the same port before either has bound it."""
    worker, count = os.environ.get("PYTEST_XDIST_WORKER"), os.environ.get("PYTEST_XDIST_WORKER_COUNT")
    if not worker or not count:
        return
    low, high = port_range()
    width = (high - low) // int(count)
    start = low + width * int(worker.removeprefix("gw"))
    os.environ["BALLAST_LOCAL_PORTS"] = f"{start}-{start + width}"


_own_port_range()
# The brokers, clusters and services the tests start yield to the tests and to Spark when the machine is crowded
# (services.local.broker.background_niceness).
os.environ.setdefault("BALLAST_LOCAL_NICE", "5")


def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> GroupScheduling:
    return GroupScheduling(config, log)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # Each test's tier (tests/tiers.py), which `make test-fast` and `make test-system` select (-m fast, -m system).
    for item in items:
        item.add_marker(tier_of(item.nodeid))
    # Only in workers: a serial run keeps the files' order. Either way the stack of tests/integration/shared_stack
    # and the cluster of tests/kafka are package fixtures, stopped as soon as their package's tests have run.
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return
    order = {item.nodeid: index for index, item in enumerate(items)}
    items.sort(key=lambda item: (rank_of(item.nodeid), order[item.nodeid]))


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    """One local Spark session per test process. Its JVM takes 20 to 40 s to start, so the modules that drive Spark in
    process are one scheduling group (tests/scheduling.py) and share it; it has Spark's Kafka source on its classpath
    when `make spark-kafka` has fetched it (spark.session.local_session)."""
    from spark.session import SMALL_JOB_JVM, local_session

    session = local_session("ballast-tests", jvm_options=SMALL_JOB_JVM)
    yield session
    session.stop()


@pytest.fixture(scope="session")
def recorded_dir() -> Path:
    path = SHARED / "cruise-control-recorded"
    if not path.is_dir():
        pytest.fail(f"{path} is missing: the tests read Cruise Control's recorded answers from ../shared")
    return path


@pytest.fixture(scope="session")
def openapi_dir() -> Path:
    return SHARED / "cruise-control-openapi"
