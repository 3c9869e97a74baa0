"""Ballast makes its own topics, and waits for a bus that is not up yet instead of exiting (issue 31: a service or
an init container started before its Kafka)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

from confluent_kafka.admin import AdminClient, ConfigResource

from events import TOPICS
from services.local.broker import free_port, start_tansu
from tests.patience import WAIT_S


def test_init_bus_waits_for_the_bus_then_creates_every_topic_once_with_its_configs(tmp_path: Path) -> None:
    port = free_port()
    bootstrap = f"127.0.0.1:{port}"
    env = {**os.environ, "BALLAST_BUS__BOOTSTRAP_SERVERS": bootstrap, "BALLAST_BUS__TOPIC_PARTITIONS": "3"}
    init = subprocess.Popen([sys.executable, "-m", "services.cli", "init-bus"], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    lines: list[dict[str, object]] = []
    waited = threading.Event()

    def read_log() -> None:
        assert init.stderr is not None
        for line in init.stderr:
            lines.append(json.loads(line))
            if lines[-1]["event"] == "waiting for the bus":
                waited.set()

    reader = threading.Thread(target=read_log, daemon=True)
    reader.start()
    broker = None
    try:
        assert waited.wait(WAIT_S), f"no 'waiting for the bus' line: {lines}"
        assert init.poll() is None  # still waiting, not exited
        broker = start_tansu(port, tmp_path / "broker.log")
        assert init.wait(WAIT_S) == 0
        reader.join(WAIT_S)
        admin = AdminClient({"bootstrap.servers": bootstrap})
        metadata = admin.list_topics(timeout=WAIT_S)
        assert {t.name: len(metadata.topics[t.name].partitions) for t in TOPICS.all()} == {
            t.name: 3 for t in TOPICS.all()}
        resources = [ConfigResource(ConfigResource.Type.TOPIC, t.name) for t in TOPICS.all() if t.compacted]
        for resource, future in admin.describe_configs(resources).items():
            assert future.result(timeout=WAIT_S)["cleanup.policy"].value == "compact", resource
        again = subprocess.run([sys.executable, "-m", "services.cli", "init-bus"], env=env, capture_output=True,
                               text=True, timeout=WAIT_S)
    finally:
        init.kill()
        init.wait()
        if broker is not None:
            broker.terminate()
            broker.wait(WAIT_S)
    assert lines[0]["reason"] and lines[0]["bootstrap_servers"] == bootstrap
    assert lines[-1]["event"] == "the bus holds Ballast's topics"
    assert {line["topic"] for line in lines if line["event"] == "created bus topic"} == {
        topic.name for topic in TOPICS.all()}
    # Run again on a bus that has them: nothing created, nothing waited for.
    assert again.returncode == 0, again.stderr
    assert [json.loads(line)["event"] for line in again.stderr.splitlines()] == ["the bus holds Ballast's topics"]
