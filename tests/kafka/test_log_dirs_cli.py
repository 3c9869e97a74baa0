"""``ballast log-dirs`` on the real cluster: ``describe --json`` is kafka-log-dirs.sh's own document, and ``move``
puts replicas in the directories a kafka-reassign-partitions.sh file names, under the intra-broker throttle."""

from __future__ import annotations

import asyncio
import json
import re
import os
import subprocess
import sys
import threading
import time
from pathlib import Path


from services.adapters.admin import INTRA_BROKER_THROTTLE
from services.adapters.admin.kafka import KafkaClusterAdmin
from services.local.kafka_cluster import LocalKafka
from services.local.stack import LocalStack
from tests.integration.harness import scrape, serving_dashboard, value
from tests.kafka.conftest import eventually, fill


def ballast(stack: LocalStack, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    result = subprocess.run([sys.executable, "-m", "services.cli", *args], env={**os.environ, **stack.env},
                            capture_output=True, text=True, timeout=300)
    if check:
        assert result.returncode == 0, result.stderr + result.stdout
    return result


async def test_describe_json_is_kafka_log_dirs_own_document(kafka_stack: LocalStack, kafka: LocalKafka,
                                                            admin: KafkaClusterAdmin, name: str) -> None:
    await admin.create_topic(name, 2, 2, assignment=[[1, 2], [2, 1]])
    fill(kafka.bootstrap_servers, name, 2, 0.3)
    ours = json.loads(ballast(kafka_stack, "log-dirs", "describe", "--json", "--topic", name,
                              "--broker", "1", "--broker", "2").stdout)
    printed = kafka.tool_output("org.apache.kafka.tools.LogDirsCommand", "--bootstrap-server",
                                kafka.bootstrap_servers, "--describe", "--topic-list", name, "--broker-list", "1,2")
    theirs = json.loads(printed.strip().splitlines()[-1])
    # The same document; Kafka lists directories and partitions in its hash maps' order, Ballast sorted.
    assert _ordered(ours) == _ordered(theirs)
    assert ours == _ordered(ours), "Ballast's own lists are sorted"
    sizes = [p["size"] for b in ours["brokers"] for d in b["logDirs"] for p in d["partitions"]]
    assert len(sizes) == 4 and all(s > 300_000 for s in sizes)

    table = ballast(kafka_stack, "log-dirs", "describe", "--broker", "1", "--topic", name).stdout
    assert "online" in table and f"{name}-0" in table and f"{name}-1" in table


async def test_move_between_directories_and_brokers_under_the_throttle(
        kafka_stack: LocalStack, kafka: LocalKafka, admin: KafkaClusterAdmin, name: str, tmp_path: Path) -> None:
    await admin.create_topic(name, 2, 2, assignment=[[1, 2], [2, 1]])
    fill(kafka.bootstrap_servers, name, 2, 3)
    dirs = {d.path for d in await admin.describe_log_dirs([1]) if d.online}
    assert len(dirs) == 2
    now = {(r.partition, d.broker): d.path for d in await admin.describe_log_dirs([1, 2, 3])
           for r in d.replicas if r.topic == name and not r.is_future}
    other = (dirs - {now[(0, 1)]}).pop()
    three = sorted(d.path for d in await admin.describe_log_dirs([3]))[1]
    plan = tmp_path / "reassignment.json"
    plan.write_text(json.dumps({"version": 1, "partitions": [
        # Partition 0 stays on brokers 1 and 2; its replica on broker 1 changes directory.
        {"topic": name, "partition": 0, "replicas": [1, 2], "log_dirs": [other, "any"]},
        # Partition 1 moves from broker 1 to broker 3, into a directory named here.
        {"topic": name, "partition": 1, "replicas": [2, 3], "log_dirs": ["any", three]},
    ]}))

    seen: set[str] = set()
    stop = threading.Event()

    def watch() -> None:
        probe = KafkaClusterAdmin({"bootstrap_servers": kafka.bootstrap_servers}, 10)
        loop = asyncio.new_event_loop()
        while not stop.is_set():
            try:
                seen.update(loop.run_until_complete(probe.broker_configs(1)))
            except Exception:  # noqa: BLE001 -- a probe; the assertions come after
                pass
            time.sleep(0.2)
        loop.run_until_complete(probe.aclose())
        loop.close()

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    started = time.monotonic()
    try:
        result = ballast(kafka_stack, "log-dirs", "move", "-f", str(plan), "--throttle", "1000000", "--timeout", "120")
    finally:
        stop.set()
        watcher.join(5)
    assert "every replica is in the directory asked for" in result.stdout
    assert INTRA_BROKER_THROTTLE in seen, "the intra-broker throttle was set on broker 1 during the move"
    assert time.monotonic() - started > 1.5, "3 MB at 1 MB/s takes a few seconds"

    after = {(r.partition, d.broker): d.path for d in await admin.describe_log_dirs([1, 2, 3])
             for r in d.replicas if r.topic == name and not r.is_future}
    assert after[(0, 1)] == other and after[(1, 3)] == three and (1, 1) not in after
    assert INTRA_BROKER_THROTTLE not in await eventually(
        lambda: _without(admin, 1, INTRA_BROKER_THROTTLE), "the throttle cleared")

    verified = ballast(kafka_stack, "log-dirs", "move", "--verify", "-f", str(plan))
    assert verified.stdout.count("done") == 4

    plan.write_text('{"version": 1, "partitions": [{"topic": "t", "partition": 0, "replicas": [1], '
                    '"log_dirs": ["data-0"]}]}')
    refused = ballast(kafka_stack, "log-dirs", "move", "-f", str(plan), check=False)
    assert refused.returncode == 1 and "absolute path" in refused.stderr and "Traceback" not in refused.stderr


async def _without(admin: KafkaClusterAdmin, broker: int, key: str) -> dict[str, str] | None:
    configs = await admin.broker_configs(broker)
    return configs if key not in configs else None


def _ordered(document: dict) -> dict:
    return {**document, "brokers": [
        {**b, "logDirs": sorted(({**d, "partitions": sorted(d["partitions"], key=lambda p: p["partition"])}
                                 for d in b["logDirs"]), key=lambda d: d["logDir"])}
        for b in sorted(document["brokers"], key=lambda b: b["broker"])]}


async def test_place_with_log_dirs_then_move_puts_each_replica_where_it_was_placed(
        kafka_stack: LocalStack, admin: KafkaClusterAdmin, name: str, tmp_path: Path) -> None:
    cluster = tmp_path / "cluster.json"
    cluster.write_text(json.dumps({"brokers": [{"id": b, "rack": r} for b, r in
                                               {1: "/dc1/r1", 2: "/dc1/r2", 3: "/dc2/r1", 4: "/dc2/r2"}.items()]}))
    placed = json.loads(ballast(kafka_stack, "place", "--cluster", str(cluster), "--partitions", "4",
                                "--replication-factor", "2", "--placer", "multi-level", "--topic", name,
                                "--log-dirs").stdout)
    real = {(d.broker, d.path) for d in await admin.describe_log_dirs() if d.online}
    for entry in placed["partitions"]:
        assert all((b, d) in real for b, d in zip(entry["replicas"], entry["log_dirs"])), entry
    await admin.create_topic(name, 4, 2, assignment=[p["replicas"] for p in placed["partitions"]])
    plan = tmp_path / "placed.json"
    plan.write_text(json.dumps(placed))
    ballast(kafka_stack, "log-dirs", "move", "-f", str(plan), "--timeout", "60")
    now = {(r.partition, d.broker): d.path for d in await admin.describe_log_dirs()
           for r in d.replicas if r.topic == name and not r.is_future}
    assert now == {(p["partition"], b): d for p in placed["partitions"] for b, d in zip(p["replicas"], p["log_dirs"])}


async def test_describe_a_topic_shows_what_kafka_describes(kafka_stack: LocalStack, kafka: LocalKafka,
                                                           admin: KafkaClusterAdmin, name: str) -> None:
    """Issue 18, item 13, on the real cluster: `ballast describe` against kafka-topics.sh --describe and
    DescribeLogDirs (a topic Ballast does not manage: the cluster side alone)."""
    await admin.create_topic(name, 2, 2, assignment=[[1, 3], [3, 2]], config={"retention.ms": "120000"})
    described = json.loads(ballast(kafka_stack, "describe", name, "-o", "json").stdout)
    assert described["spec"] is None and described["status"] is None
    printed = kafka.tool_output("org.apache.kafka.tools.TopicCommand", "--bootstrap-server", kafka.bootstrap_servers,
                                "--describe", "--topic", name)
    # kafka-topics.sh: "Topic: T  Partition: 0  Leader: 1  Replicas: 1,3  Isr: 1,3  Elr:  LastKnownElr: "
    theirs = {}
    for line in printed.splitlines():
        fields = dict(re.findall(r"(\w+): (\S*)", line))
        if "Partition" in fields:
            theirs[int(fields["Partition"])] = (int(fields["Leader"]), fields["Replicas"], fields["Isr"])
    ours = {p["partition"]: (p["leader"], ",".join(map(str, p["replicas"])), ",".join(map(str, p["isr"])))
            for p in described["cluster"]["partitionDetails"]}
    assert ours == theirs
    assert described["cluster"]["config"]["retention.ms"] == "120000"
    where = {(r.partition, d.broker): d.path for d in await admin.describe_log_dirs([1, 2, 3])
             for r in d.replicas if r.topic == name and not r.is_future}
    racks = {b.id: b.rack for b in await admin.brokers()}
    for p in described["cluster"]["partitionDetails"]:
        assert [(r["broker"], r["rack"], r["logDir"]) for r in p["replicaDetails"]] == [
            (b, racks[b], where[(p["partition"], b)]) for b in p["replicas"]]
    table = ballast(kafka_stack, "describe", name).stdout
    assert "no spec: Ballast does not manage this topic" in table and f"1 {racks[1]} {where[(0, 1)]}" in table


async def test_diff_and_apply_wait_on_the_real_cluster(kafka_stack: LocalStack, admin: KafkaClusterAdmin, name: str,
                                                       tmp_path: Path) -> None:
    """Issue 18, item 12, on the real cluster: diff, apply --wait, then nothing left to change."""
    manifest = tmp_path / "topic.yaml"
    manifest.write_text(f"name: {name}\npartitions: 2\nreplicas: 3\nconfig: {{retention.ms: 120000}}\n")
    before = ballast(kafka_stack, "diff", "-f", str(manifest), check=False)
    assert before.returncode == 1 and before.stdout.splitlines()[0] == f"{name}: create", before.stderr
    applied = ballast(kafka_stack, "apply", "-f", str(manifest), "--wait", "--timeout", "120")
    assert applied.stdout.splitlines()[-1] == f"{name}: ready"
    described = (await admin.describe_topics([name]))[name]
    assert described is not None and described.replication_factor == 3

    async def unchanged() -> bool | None:
        # DescribeConfigs may answer from a broker a moment behind the controller.
        after = ballast(kafka_stack, "diff", "-f", str(manifest), check=False)
        return True if after.returncode == 0 and after.stdout.splitlines() == [f"{name}: unchanged"] else None

    await eventually(unchanged, "diff: unchanged", timeout_s=30)
    # /metrics on the real-Kafka stack too (issue 18, item 14).
    scraped = scrape(kafka_stack.health_url("topic-reconciler").replace("/health", "/metrics"))
    assert value(scraped, "ballast_events_in_total", topic="ballast.topic.specs") >= 1
    assert value(scraped, "ballast_topics", ready="true") >= 1


def test_the_dashboard_shows_the_real_clusters_topics_and_brokers(kafka_stack: LocalStack, kafka: LocalKafka,
                                                                  name: str, tmp_path: Path) -> None:
    """Issue 18, item 15, on the real-Kafka stack: what the page is fed (its /api/state, as the browser test on the
    simulator reads it rendered): the applied topic ready at its RF, the brokers with their racks."""
    spec = tmp_path / "spec.yaml"
    spec.write_text(f"name: {name}\npartitions: 2\nreplicas: 2\n")
    with serving_dashboard(kafka_stack.env, tmp_path / "dashboard.log") as url:
        ballast(kafka_stack, "apply", "-f", str(spec), "--wait", "--timeout", "120")
        deadline = time.monotonic() + 180  # generous: the page follows the status topic, a loaded machine lags
        while True:
            state = kafka_stack.http.get(f"{url}api/state", timeout=30).json()
            topic = next((t for t in state["topics"] if t["topic"] == name), None)
            if topic is not None and topic["ready"] and topic["replicas"] == 2:
                break
            assert time.monotonic() < deadline, state
            time.sleep(0.5)
    shown = {b["id"]: b["rack"] for b in state["brokers"]}
    assert {b: shown.get(b) for b in (1, 2, 3, 4)} == {b: kafka.racks()[b] for b in (1, 2, 3, 4)}, shown
