"""Several instances of each service (issue 12, item 4): one owner per service acts, the others stand by; when the
owner is killed (-9) or a rolling restart replaces every instance, every change converges with one Cruise Control
session per change."""

from __future__ import annotations

import signal
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from services.local.stack import LocalStack
from tests.integration.conftest import TEST_ENV
from tests.integration.harness import Ballast, change_sessions, spec

SERVICES = ("topic-reconciler", "replicas-change", "rebalancer")


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalStack]:
    local = LocalStack(tmp_path_factory.mktemp("instances"), env=TEST_ENV, services=SERVICES)
    try:
        local.start()
        yield local
    finally:
        local.stop()


@pytest.fixture(scope="module")
def ballast(stack: LocalStack) -> Iterator[Ballast]:
    client = Ballast(stack)
    yield client
    client.close()


def roles(stack: LocalStack, service: str) -> dict[str, str]:
    found = {}
    for name, process in stack.processes.items():
        if name.split("#")[0] == service and process.poll() is None:
            found[name] = stack.http.get(stack.health_url(name), timeout=5).json().get("role", "?")
    return found


def owner(stack: LocalStack, service: str, timeout: float = 60) -> str:
    """The instance that owns ``service`` once exactly one does and it is ready."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            current = roles(stack, service)
            active = [n for n, role in current.items() if role == "active"]
            if len(active) == 1 and stack.http.get(stack.health_url(active[0]), timeout=5).status_code == 200:
                return active[0]
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise AssertionError(f"no single ready owner of {service}: {roles(stack, service)}")


def converge(ballast: Ballast, topics: list[str], rf: int, timeout: float = 120) -> None:
    for topic in topics:
        ballast.watcher.wait_rf(topic, rf, timeout=timeout)


def sessions_per_change(ballast: Ballast, topics: list[str], generation_after: int) -> dict[str, int]:
    """Per topic, how many Cruise Control sessions its change (specs of generations after the given one) went
    through, as the replicas-change service recorded them."""
    found = change_sessions(ballast.settings, topics, after_generation=generation_after)
    return {t: len(sessions) for t, sessions in found.items()}


def create(ballast: Ballast, topics: list[str], rf: int) -> int:
    ballast.apply(*[spec(t, rf, partitions=1) for t in topics])
    converge(ballast, topics, rf)
    return max(ballast.watcher.latest[t].generation for t in topics)


def test_one_owner_among_three_instances_of_each_service(stack: LocalStack, ballast: Ballast) -> None:
    for service in SERVICES:
        for index in (2, 3):
            stack.start_instance(service, index)
    for service in SERVICES:
        owner(stack, service)
        current = roles(stack, service)
        assert sorted(current.values()) == ["active", "standby", "standby"], current
        assert current[service] == "active", "an instance joining takes nothing from the owner"
        # Every instance is a Prometheus target: a standby answers /metrics too (it answered 404, a target down).
        for name in current:
            scraped = stack.http.get(stack.health_url(name).removesuffix("/health") + "/metrics", timeout=5)
            assert scraped.status_code == 200 and "process_cpu_seconds_total" in scraped.text, (name, scraped)
    topics = [f"three-{i}" for i in range(10)]
    before = create(ballast, topics, 2)
    ballast.apply(*[spec(t, 3, partitions=1) for t in topics])
    converge(ballast, topics, 3)
    assert set(sessions_per_change(ballast, topics, before).values()) == {1}


@pytest.mark.parametrize("service", SERVICES)
def test_kill_9_of_the_owner_mid_change_hands_over_to_a_standby(stack: LocalStack, ballast: Ballast,
                                                                  service: str) -> None:
    topics = [f"kill-{service}-{i}" for i in range(30)]
    before = create(ballast, topics, 2)
    if len(roles(stack, service)) < 2:
        stack.start_instance(service, 9)
    victim = owner(stack, service)
    ballast.apply(*[spec(t, 3, partitions=1) for t in topics])
    stack.kill(victim, signal.SIGKILL)
    # A standby takes over within owner()'s deadline (session timeout 6 s, the group's rebalance, the start).
    assert owner(stack, service) != victim
    converge(ballast, topics, 3)
    assert set(sessions_per_change(ballast, topics, before).values()) == {1}


def test_a_rolling_restart_of_every_service_during_300_changes(stack: LocalStack, ballast: Ballast,
                                                               tmp_path: Path) -> None:
    topics = [f"rolling-{i}" for i in range(300)]
    before = create(ballast, topics, 2)
    ballast.apply(*[spec(t, 3, partitions=1) for t in topics])
    index = 20
    for service in SERVICES:
        # As Kubernetes' RollingUpdate does: a new instance first, then the old ones go (SIGTERM, gracefully).
        old = list(roles(stack, service))
        index += 1
        stack.start_instance(service, index)
        for name in old:
            stack.kill(name, signal.SIGTERM)
            assert stack.processes[name].returncode == 0
        assert owner(stack, service) == f"{service}#{index}"
    converge(ballast, topics, 3, timeout=180)
    counts = sessions_per_change(ballast, topics, before)
    assert set(counts.values()) == {1}, {t: n for t, n in counts.items() if n != 1}
