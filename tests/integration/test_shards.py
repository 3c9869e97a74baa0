"""The topic reconciler scales out by shards (issue 12, item 4): with the bus topics in four partitions, three
instances act at once, each on its own shards; an instance killed (-9) or joining hands its shards over without
two instances ever acting on one, and every change converges with one Cruise Control session."""

from __future__ import annotations

import json
import signal
import time
from collections import Counter
from collections.abc import Iterator

import httpx
import pytest

from events import TOPICS
from services.common import busio
from services.common.shards import shard_of
from services.local.stack import LocalStack
from tests.integration.conftest import TEST_ENV
from tests.integration.harness import Ballast, change_sessions, spec

SHARDS = 4
SERVICE = "topic-reconciler"


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalStack]:
    local = LocalStack(tmp_path_factory.mktemp("shards"), env={**TEST_ENV, "BALLAST_BUS__TOPIC_PARTITIONS": "4"},
                       services=(SERVICE, "replicas-change"))
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


def shards_held(stack: LocalStack) -> dict[str, list[int]]:
    """Per running instance of the topic reconciler that is ready, the shards it acts on."""
    held = {}
    for name, process in stack.processes.items():
        if name.split("#")[0] == SERVICE and process.poll() is None:
            try:
                answer = stack.http.get(stack.health_url(name), timeout=5)
            except httpx.HTTPError:
                continue
            if answer.status_code == 200 and answer.json().get("role") == "active":
                held[name] = answer.json()["shards"]
    return held


def settled(stack: LocalStack, instances: int, timeout: float = 60) -> dict[str, list[int]]:
    """Once ``instances`` instances are ready and their shards are all the shards, each held once."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        held = shards_held(stack)
        every = sorted(s for shards in held.values() for s in shards)
        if len(held) == instances and every == list(range(SHARDS)) and all(held.values()):
            return held
        time.sleep(0.2)
    raise AssertionError(f"shards not settled on {instances} instances: {shards_held(stack)}")


def converge(ballast: Ballast, topics: list[str], rf: int, timeout: float = 120) -> None:
    for topic in topics:
        ballast.watcher.wait_rf(topic, rf, timeout=timeout)


def create(ballast: Ballast, topics: list[str], rf: int) -> dict[str, int]:
    """Per topic, the generation of its spec once created (generations are offsets in the spec's partition)."""
    ballast.apply(*[spec(t, rf, partitions=1) for t in topics])
    converge(ballast, topics, rf)
    return {t: ballast.watcher.latest[t].generation for t in topics}


def one_session_each(ballast: Ballast, topics: list[str], generation_after: dict[str, int]) -> None:
    counts = {t: len(s) for t, s in change_sessions(ballast.settings, topics,
                                                     after_generation=generation_after).items()}
    assert set(counts.values()) == {1}, {t: n for t, n in counts.items() if n != 1}


def commands_per_topic(ballast: Ballast, topics: list[str], target: int) -> Counter[str]:
    wanted, found = set(topics), Counter[str]()
    for command in busio.events(ballast.settings.bus, TOPICS.replicas_commands, follow=False, idle_s=1.0):
        if command.topic in wanted and command.target_replicas == target:
            found[command.topic] += 1
    return found


def requests_logged(stack: LocalStack, name: str) -> set[str]:
    """Topics for which this instance logged a replication-factor change request."""
    topics = set()
    for line in (stack.logs / f"{name}.log").read_text().splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if entry.get("event") == "requesting replicas change":
            topics.add(entry.get("topic"))
    return topics


def test_three_instances_act_at_once_each_on_its_own_shards(stack: LocalStack, ballast: Ballast) -> None:
    for index in (2, 3):
        stack.start_instance(SERVICE, index)
    held = settled(stack, 3)
    topics = [f"spread-{i}" for i in range(40)]
    before = create(ballast, topics, 2)
    ballast.apply(*[spec(t, 3, partitions=1) for t in topics])
    converge(ballast, topics, 3)
    one_session_each(ballast, topics, before)
    assert set(commands_per_topic(ballast, topics, 3).values()) == {1}, "each change requested once"
    for name, shards in held.items():
        mine = {t for t in topics if shard_of(t.encode(), SHARDS) in shards}
        assert mine and requests_logged(stack, name) & set(topics) == mine, name


def test_kill_9_of_an_instance_mid_change_hands_its_shards_to_the_others(stack: LocalStack,
                                                                           ballast: Ballast) -> None:
    held = settled(stack, 3)
    victim = max(held, key=lambda n: len(held[n]))
    topics = [f"handed-{i}" for i in range(40)]
    before = create(ballast, topics, 2)
    ballast.apply(*[spec(t, 3, partitions=1) for t in topics])
    stack.kill(victim, signal.SIGKILL)
    after = settled(stack, 2)
    assert victim not in after
    converge(ballast, topics, 3)
    one_session_each(ballast, topics, before)


def test_an_instance_joining_mid_change_takes_shards_without_a_second_session(stack: LocalStack,
                                                                              ballast: Ballast) -> None:
    settled(stack, 2)
    topics = [f"joined-{i}" for i in range(60)]
    before = create(ballast, topics, 2)
    ballast.apply(*[spec(t, 3, partitions=1) for t in topics])
    stack.start_instance(SERVICE, 4)
    held = settled(stack, 3)
    assert held[f"{SERVICE}#4"], "the newest instance takes shards from one holding several"
    converge(ballast, topics, 3)
    one_session_each(ballast, topics, before)
