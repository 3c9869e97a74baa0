"""Creating a topic while a broker is down (seed 002), end to end on its own small stack: 3 brokers in 3 DCs,
under-replicated creation enabled. One broker down, an RF 3 topic is created with one placeholder per partition;
the broker returns and the placeholders are filled."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from events import TOPICS, PlaceholderRecord, ReplicasPlaced, TopicSpec, decode
from services.common import busio
from services.local.stack import LocalStack
from tests.integration.conftest import TEST_ENV
from tests.integration.harness import Ballast
from tests.patience import until

SMALL_ENV = {
    **TEST_ENV,
    "BALLAST_SIMULATOR__BROKERS": '["1:/dc1/r1", "2:/dc2/r1", "3:/dc3/r1"]',
    "BALLAST_PLACEMENT__UNDER_REPLICATED": "enabled",
    "BALLAST_PLACEMENT__OBSERVE_INTERVAL_S": "0.5",
}


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Ballast]:
    run_dir: Path = tmp_path_factory.mktemp("small-stack")
    stack = LocalStack(run_dir, env=SMALL_ENV)
    try:
        stack.start()
        client = Ballast(stack)
        yield client
        client.close()
    finally:
        stack.stop()


def placeholder_records(ballast: Ballast, topic: str) -> list[PlaceholderRecord]:
    records = []
    for record in busio.consume(ballast.settings.bus, [TOPICS.placeholders.name], follow=False, idle_s=0.7):
        event = decode(record.value, topic=TOPICS.placeholders).event
        assert isinstance(event, PlaceholderRecord)
        if event.topic == topic:
            records.append(event)
    return records


def placements(ballast: Ballast, topic: str) -> list[ReplicasPlaced]:
    found = []
    for record in busio.consume(ballast.settings.bus, [TOPICS.placements.name], follow=False, idle_s=0.7):
        event = decode(record.value, topic=TOPICS.placements).event
        if isinstance(event, ReplicasPlaced) and event.topic == topic:
            found.append(event)
    return found


def service_log(ballast: Ballast, service: str, topic: str) -> str:
    """The service's log lines that name the topic (the stack keeps one log per service)."""
    path = ballast.stack.logs / f"{service}.log"
    return "".join(line for line in path.read_text(errors="replace").splitlines(keepends=True) if topic in line)


def under_replicated(status) -> bool:  # noqa: ANN001 - a TopicStatus
    condition = status.condition("UnderReplicated")
    return status.ready and condition is not None and condition.status == "True"


def test_rf3_with_one_broker_down_gets_a_placeholder_that_is_filled_when_the_broker_returns(
        small: Ballast, name: str) -> None:
    topic = f"{name}-orders"
    small.stop_brokers(3)
    try:
        small.apply(TopicSpec(name=topic, partitions=3, replicas=3, config={"min.insync.replicas": "2"}))
        status = small.watcher.wait_status(topic, under_replicated, "created under-replicated")
        assert status.replicas == 2
        message = status.condition("UnderReplicated").message
        assert "under-replicated by design" in message and "3 placeholder replica(s) in 3 partition(s)" in message
        partitions = small.cluster_topic(topic)["partitions"]
        assert sorted(sorted(p["replicas"]) for p in partitions) == [[1, 2]] * 3
        (record,) = placeholder_records(small, topic)
        assert record.replication_factor == 3 and not record.filled
        assert all(sorted(r) == [-1, 1, 2] for r in record.assignment)

        # Creation needs min(min.insync.replicas, RF) replicas on alive brokers: 3 of them cannot be had now.
        strict = f"{name}-strict"
        small.apply(TopicSpec(name=strict, partitions=1, replicas=3, config={"min.insync.replicas": "3"}))
        refused = small.watcher.wait_status(strict, lambda s: not s.ready and s.condition("Ready").message,
                                            "creation refused")
        assert "needs at least 3 replica(s) on alive brokers" in refused.condition("Ready").message
        assert small.cluster_topic(strict) is None
    finally:
        small.start_brokers(3)

    filled = small.watcher.wait_rf(topic, 3)
    assert filled.condition("UnderReplicated") is None
    assert all(sorted(p["replicas"]) == [1, 2, 3] for p in small.cluster_topic(topic)["partitions"])
    small.watcher.wait_rf(strict, 3)  # created in full once the broker is back
    small.watcher.wait("placeholders closed", lambda: placeholder_records(small, topic)[-1].filled)
    # The bus saw each placement: two replicas per partition at creation, broker 3's when it returned. The fill's
    # placement is published after its placeholder record (the directories are chosen in between), so it is waited
    # for, not read once; the reconciler's account of the topic says why if it never comes.
    def placed() -> list[tuple[str, list[tuple[int, int]]]]:
        return [(e.reason, sorted((r.partition, r.broker) for r in e.placed)) for e in placements(small, topic)]

    try:
        seen = until("the fill's placement", lambda: found if len(found := placed()) >= 2 else None)
    except AssertionError as exc:
        raise AssertionError(f"{exc} (placed: {placed()}); the topic reconciler said:\n"
                             f"{service_log(small, 'topic-reconciler', topic)}") from exc
    assert seen == [("create", [(p, b) for p in range(3) for b in (1, 2)]),
                    ("fill-placeholders", [(p, 3) for p in range(3)])]


def test_the_registry_lists_every_broker_seen(small: Ballast) -> None:
    from typer.testing import CliRunner

    from services.cli.main import app

    result = CliRunner().invoke(app, ["brokers", "list"], env=small.stack.env)
    assert result.exit_code == 0, result.output
    for broker, rack in ((1, "/dc1/r1"), (2, "/dc2/r1"), (3, "/dc3/r1")):
        assert any(f" {broker} " in line and rack in line for line in result.output.splitlines()), result.output
