"""One bus for several clusters (issue 56, Strimzi's ``strimzi.io/cluster``): beside the shared stack's deployment,
one named ``west`` (BALLAST_CLUSTER) on the same bus with a simulated cluster of its own. Each reads and writes only its
own bus topics and consumer groups; one file holding several clusters' KafkaTopics is applied by each deployment's CLI
to its own cluster; a spec for another cluster that reaches a deployment's topic is dead-lettered, not acted on."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from events import TOPICS, DeadLetter, TopicSpec, encode
from events.topics import Topics
from services.common import busio
from services.local.stack import LocalStack
from tests.integration.conftest import TEST_ENV
from tests.integration.harness import Ballast
from tests.patience import WAIT_S

WEST = Topics.of("west")


@pytest.fixture(scope="module")
def west(stack: LocalStack, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalStack]:
    local = LocalStack(tmp_path_factory.mktemp("west"), env={**TEST_ENV, "BALLAST_CLUSTER": "west"},
                       services=("topic-reconciler",), bus=stack.env["BALLAST_BUS__BOOTSTRAP_SERVERS"])
    try:
        local.start()
        yield local
    finally:
        local.stop()


def cli(stack: LocalStack, *args: str) -> subprocess.CompletedProcess[str]:
    """The CLI as a user of ``stack``'s deployment runs it (its environment, BALLAST_CLUSTER included where named)."""
    env = {k: v for k, v in os.environ.items() if k != "BALLAST_CLUSTER"}
    return subprocess.run([sys.executable, "-m", "services.cli", *args], env={**env, **stack.env},
                          capture_output=True, text=True, timeout=WAIT_S)


def kafka_topics(name: str) -> str:
    def item(topic: str, cluster: str, partitions: int) -> str:
        return (f"  - apiVersion: kafka.strimzi.io/v1beta2\n    kind: KafkaTopic\n"
                f"    metadata: {{name: {topic}, labels: {{strimzi.io/cluster: {cluster}}}}}\n"
                f"    spec: {{partitions: {partitions}, replicas: 2}}\n")
    return ("apiVersion: v1\nkind: List\nitems:\n" + item(f"{name}-orders", "east", 3)
            + item(f"{name}-orders", "west", 6) + item(f"{name}-audit", "east", 1))


def described(stack: LocalStack, topic: str) -> dict | None:
    found = httpx.post(f"{stack.sim_url}/admin/topics/describe", json={"names": [topic]}, timeout=10).json()["topics"]
    return found[0] if found else None


def test_one_file_of_several_clusters_is_applied_by_each_deployment_to_its_own(
        ballast: Ballast, west: LocalStack, name: str, tmp_path: Path) -> None:
    manifests = tmp_path / "kafkatopics.yaml"
    manifests.write_text(kafka_topics(name))

    applied = cli(west, "apply", "-f", str(manifests), "--wait", "--timeout", str(WAIT_S))
    assert applied.returncode == 0, applied.stderr
    assert f"topic spec {name}-orders: partitions=6 replicas=2 applied" in applied.stdout
    assert applied.stderr.count("skipped:") == 2
    assert f"skipped: topic '{name}-audit' ({manifests}): it is for cluster 'east'" in applied.stderr
    assert len(described(west, f"{name}-orders")["partitions"]) == 6
    assert described(west, f"{name}-audit") is None
    # The shared stack's deployment (no name) saw none of it: its cluster, its specs and its statuses.
    assert ballast.cluster_topic(f"{name}-orders") is None
    assert f"{name}-orders" not in busio.latest(ballast.settings.bus, TOPICS.specs, timeout_s=30)

    shown = cli(west, "status", "-o", "json")
    statuses = [json.loads(line) for line in shown.stdout.splitlines()]
    assert [(s["topic"], s["ready"], s["partitions"]) for s in statuses] == [(f"{name}-orders", True, 6)], shown


def test_a_spec_for_another_cluster_on_a_deployments_topic_is_dead_lettered(
        ballast: Ballast, west: LocalStack, name: str) -> None:
    stray = TopicSpec(name=f"{name}-stray", partitions=1, replicas=1, cluster="east")
    busio.produce(ballast.settings.bus, [(WEST.specs.name, stray.key.encode(), encode(stray), None)])
    deadline = time.monotonic() + WAIT_S
    letters: dict[str, DeadLetter] = {}
    while f"{name}-stray" not in letters and time.monotonic() < deadline:
        letters = busio.latest(ballast.settings.bus, WEST.dead_letters, timeout_s=30)
        time.sleep(0.5)
    letter = letters[f"{name}-stray"]
    assert letter.source_topic == "ballast.west.topic.specs"
    assert "it is for cluster 'east' (strimzi.io/cluster), and this deployment manages 'west'" in letter.reason
    assert described(west, f"{name}-stray") is None
    assert ballast.cluster_topic(f"{name}-stray") is None


def test_each_deployment_keeps_to_its_own_bus_topics(ballast: Ballast, west: LocalStack) -> None:
    from confluent_kafka.admin import AdminClient

    names = set(AdminClient({"bootstrap.servers": west.env["BALLAST_BUS__BOOTSTRAP_SERVERS"]})
                .list_topics(timeout=30).topics)
    assert {t.name for t in WEST.all()} <= names
    assert {t.name for t in TOPICS.all()} <= names
