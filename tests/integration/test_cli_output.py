"""What the CLI prints into a pipe, on the real local broker (issue 18, defects 3, 4 and 6): tables whole, the reasons
in them, --output for scripts, and a watch that says when the bus went away."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from confluent_kafka.admin import AdminClient, NewTopic

from events import (
    TOPICS,
    Condition,
    RebalanceRequest,
    RebalanceState,
    RebalanceStatus,
    TopicSpec,
    TopicSpecDeleted,
    TopicStatus,
    decode,
)
from services.common import busio
from services.common.settings import BusSettings
from services.local.broker import free_port, start_tansu
from tests.patience import WAIT_S

LONG = "payments.settlement.eu-west.reconciliation-ledger-entries-v2-compacted-with-a-name-longer-than-eighty-chars"


def _start(tmp: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    process = start_tansu(port, tmp / "broker.log")
    bootstrap = f"127.0.0.1:{port}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for topic in (TOPICS.status.name, TOPICS.rebalance_status.name, TOPICS.specs.name):
        admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(timeout=30)
    return process, bootstrap


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=10)


@pytest.fixture(scope="module")
def bootstrap(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    process, bootstrap = _start(tmp_path_factory.mktemp("tansu"))
    try:
        publish(bootstrap, TopicStatus(topic=LONG, ready=True, partitions=3, replicas=3),
                TopicStatus(topic="too-many-replicas", ready=False, conditions=[Condition(
                    type="Ready", status="False", reason="ReconcileError",
                    message="target replication factor 12 cannot be reached because only 6 broker(s) are "
                            "registered")]))
        busio.publish(BusSettings(bootstrap_servers=bootstrap), TOPICS.rebalance_status, [
            RebalanceStatus(name="done", state=RebalanceState.READY, request=RebalanceRequest(name="done")),
            RebalanceStatus(name="proposed", state=RebalanceState.PROPOSAL_READY,
                            request=RebalanceRequest(name="proposed"))])
        yield bootstrap
    finally:
        _stop(process)


def publish(bootstrap: str, *statuses: TopicStatus) -> None:
    busio.publish(BusSettings(bootstrap_servers=bootstrap), TOPICS.status, statuses)


def _env(bootstrap: str) -> dict[str, str]:
    # No COLUMNS: the width is what the CLI decides for a pipe.
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    return {**env, "BALLAST_BUS__BOOTSTRAP_SERVERS": bootstrap}


def cli(bootstrap: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "services.cli", *args], capture_output=True, text=True,
                          env=_env(bootstrap), timeout=WAIT_S)


def test_a_piped_table_keeps_every_name_whole_on_its_line(bootstrap: str) -> None:
    shown = cli(bootstrap, "status")
    assert shown.returncode == 0, shown.stderr
    lines = [line for line in shown.stdout.splitlines() if LONG in line]
    assert len(lines) == 1, shown.stdout
    assert "yes" in lines[0] and "too-many-replicas" in shown.stdout


def test_the_table_says_why_a_topic_is_not_ready(bootstrap: str) -> None:
    shown = cli(bootstrap, "status", "too-many-replicas")
    assert shown.returncode == 0, shown.stderr
    row = next(line for line in shown.stdout.splitlines() if "too-many-replicas" in line)
    assert "not ready (ReconcileError): target replication factor 12 cannot be reached because only 6 broker(s)" \
        in row


def test_output_json_and_yaml_parse_back_to_the_statuses(bootstrap: str) -> None:
    as_json = cli(bootstrap, "status", "--output", "json")
    assert as_json.returncode == 0, as_json.stderr
    topics = {json.loads(line)["topic"]: json.loads(line) for line in as_json.stdout.splitlines()}
    assert topics[LONG]["ready"] is True and topics["too-many-replicas"]["conditions"][0]["reason"] == "ReconcileError"
    assert cli(bootstrap, "status", "--json").stdout == as_json.stdout
    as_yaml = cli(bootstrap, "status", "-o", "yaml")
    assert as_yaml.returncode == 0, as_yaml.stderr
    documents = list(yaml.safe_load_all(as_yaml.stdout))
    assert {d["topic"]: d for d in documents} == topics
    clash = cli(bootstrap, "status", "--json", "-o", "yaml")
    assert clash.returncode == 2 and "--json contradicts --output yaml" in clash.stderr


def test_watch_says_the_bus_went_away_and_exits_non_zero(tmp_path: Path) -> None:
    process, bootstrap = _start(tmp_path)
    watcher = None
    try:
        # Asked every second, given 2 s to answer (5 s and 10 s by default).
        quick = {**_env(bootstrap), "BALLAST_BUS__LIVENESS_CHECK_S": "1", "BALLAST_BUS__ANSWER_TIMEOUT_S": "2"}
        watcher = subprocess.Popen([sys.executable, "-m", "services.cli", "status", "--watch", "-o", "json"],
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=quick)
        publish(bootstrap, TopicStatus(topic="watched", ready=True))
        assert watcher.stdout is not None
        assert json.loads(watcher.stdout.readline())["topic"] == "watched"  # following the live bus now
        _stop(process)
        code = watcher.wait(timeout=WAIT_S)
        stderr = watcher.stderr.read() if watcher.stderr else ""
        assert code == 1, stderr
        assert stderr.startswith("error: stopped watching: the bus stopped answering: no broker answered for 2 s"), \
            stderr
        assert len(stderr.strip().splitlines()) == 1
    finally:
        if watcher is not None and watcher.poll() is None:
            watcher.kill()
            watcher.wait()
        _stop(process)


def test_acting_on_a_rebalance_that_does_not_exist_fails_and_sends_nothing(bootstrap: str) -> None:
    refused = cli(bootstrap, "rebalance", "approve", "no-such-rebalance")
    assert refused.returncode == 1
    assert refused.stderr.strip() == "error: no rebalance named 'no-such-rebalance' (there are: done, proposed)"
    assert refused.stdout == ""
    assert _actions(bootstrap) == []


def test_an_action_the_rebalance_would_ignore_is_refused_before_it_is_sent(bootstrap: str) -> None:
    refused = cli(bootstrap, "rebalance", "approve", "done")
    assert refused.returncode == 1
    # A full rebalance has no directories to release (issue 30, defect 6: release was suggested, sent and ignored).
    assert refused.stderr.strip() == "error: rebalance done: cannot approve now, it is Ready (possible now: refresh)"
    assert _actions(bootstrap) == []
    sent = cli(bootstrap, "rebalance", "approve", "proposed")
    assert sent.returncode == 0, sent.stderr
    assert _actions(bootstrap) == [("proposed", "approve")]


def _actions(bootstrap: str) -> list[tuple[str, str]]:
    records = busio.consume(BusSettings(bootstrap_servers=bootstrap), [TOPICS.rebalance_actions.name], follow=False)
    return [(d["payload"]["name"], d["payload"]["action"]) for d in (json.loads(r.value) for r in records)]


def test_recording_a_topic_that_does_not_exist_fails(bootstrap: str) -> None:
    refused = cli(bootstrap, "record", TOPICS.status.name, "no.such.topic")
    assert refused.returncode == 1
    assert refused.stderr.strip() == "error: no topic 'no.such.topic' on the bus"
    assert refused.stdout == ""
    recorded = cli(bootstrap, "record", TOPICS.status.name)
    assert recorded.returncode == 0 and len(recorded.stdout.splitlines()) >= 2


def test_produce_takes_a_plain_spec_and_adds_the_envelope(bootstrap: str, tmp_path: Path) -> None:
    lines = tmp_path / "specs.jsonl"
    lines.write_text('{"name": "orders", "partitions": 3, "replicas": 2}\n\n'
                     '{"schema": "ballast.TopicSpecDeleted", "version": 1, "payload": {"name": "old"}}\n')
    produced = cli(bootstrap, "produce", "-f", str(lines))
    assert produced.returncode == 0, produced.stderr
    assert produced.stdout.strip() == f"produced 2 record(s) to {TOPICS.specs.name}"
    records = list(busio.consume(BusSettings(bootstrap_servers=bootstrap), [TOPICS.specs.name], follow=False))
    decoded = [(r.key, decode(r.value, topic=TOPICS.specs).event) for r in records]
    assert decoded == [(b"orders", TopicSpec(name="orders", partitions=3, replicas=2)),
                       (b"old", TopicSpecDeleted(name="old"))]

    lines.write_text('{"name": "orders", "partitions": 0}\n')
    refused = cli(bootstrap, "produce", "-f", str(lines))
    assert refused.returncode == 1
    assert refused.stderr.strip() == ("error: line 1: not a valid TopicSpec nor an envelope: partitions: Input should "
                                      "be greater than or equal to 1")
    status = TopicStatus(topic="x", ready=True).model_dump_json()
    lines.write_text(f'{{"schema": "ballast.TopicStatus", "version": 1, "payload": {status}}}\n')
    misplaced = cli(bootstrap, "produce", "-f", str(lines))
    assert misplaced.returncode == 1 and "does not belong on this topic" in misplaced.stderr
