"""Prometheus metrics scraped from the live services (issue 18, item 14), after a replication-factor change went
through Cruise Control and a bad record was dead-lettered; and the Grafana dashboard charts only metrics that are
there."""

from __future__ import annotations

import json
import re
from pathlib import Path

from events import TOPICS, TopicSpec
from tests.integration.harness import Ballast, scrape, value

DASHBOARD = Path(__file__).resolve().parents[3] / "deploy" / "grafana" / "ballast.json"


def metrics_url(ballast: Ballast, service: str) -> str:
    return ballast.stack.health_url(service).replace("/health", "/metrics")


def test_services_count_events_cruise_control_requests_and_latencies(ballast: Ballast, name: str) -> None:
    ballast.apply(TopicSpec(name=name, partitions=2, replicas=1))
    ballast.watcher.wait_rf(name, 1)
    before = scrape(metrics_url(ballast, "replicas-change"))
    ballast.apply(TopicSpec(name=name, partitions=2, replicas=3))
    ballast.watcher.wait_rf(name, 3)
    ballast.produce_raw(TOPICS.specs.name, name.encode(), b"not an event")
    ballast.watcher.wait("the dead letter", lambda: any(d.record_key == name for d in ballast.watcher.dead_letters))

    changes = scrape(metrics_url(ballast, "replicas-change"))
    sent = "ballast_cruise_control_requests_total"
    assert value(changes, sent, endpoint="topic_configuration", method="POST", status="200") > value(
        before, sent, endpoint="topic_configuration", method="POST", status="200")
    assert value(changes, sent, endpoint="user_tasks", method="GET", status="200") > 0
    assert value(changes, "ballast_cruise_control_request_seconds_count", endpoint="topic_configuration") > 0
    for stage in ("spec_to_submission", "submission_to_completion"):
        assert value(changes, "ballast_reconcile_latency_seconds_count", stage=stage) > value(
            before, "ballast_reconcile_latency_seconds_count", stage=stage), stage
    assert value(changes, "ballast_events_in_total", topic=TOPICS.replicas_commands.name) > 0
    assert value(changes, "ballast_events_out_total", topic=TOPICS.replicas_state.name) > 0
    assert value(changes, "ballast_replicas_changes", state="completed") >= 1

    reconciler = scrape(metrics_url(ballast, "topic-reconciler"))
    assert value(reconciler, "ballast_events_dead_lettered_total", topic=TOPICS.specs.name) >= 1
    assert value(reconciler, "ballast_events_in_total", topic=TOPICS.specs.name) >= 3
    assert value(reconciler, "ballast_events_out_total", topic=TOPICS.status.name) > 0
    assert value(reconciler, "ballast_reconcile_latency_seconds_count", stage="completion_to_status") > 0
    assert value(reconciler, "ballast_topics", ready="true") >= 1
    # Its backlog: every spec read, the dead letter's record included.
    assert (("topic", TOPICS.specs.name),) in reconciler["ballast_consumer_backlog"]
    assert value(reconciler, "ballast_consumer_backlog", topic=TOPICS.specs.name) == 0

    rebalancer = scrape(metrics_url(ballast, "rebalancer"))
    assert "process_cpu_seconds_total" in rebalancer
    simulator = scrape(f"{ballast.stack.sim_url}/metrics")
    assert value(simulator, "process_cpu_seconds_total") > 0

    # Every metric the dashboard charts is one the services expose.
    exposed = {re.sub(r"_(bucket|count|sum)$", "", n) for samples in (changes, reconciler, rebalancer) for n in samples}
    exposed |= {"ballast_rebalances", "ballast_rebalance_data_moved_percent"}  # gauges with no rebalance yet are empty
    charted = {m for panel in json.loads(DASHBOARD.read_text())["panels"] for target in panel["targets"]
               for m in re.findall(r"\b(ballast_[a-z_]+)", target["expr"])}
    assert charted and {re.sub(r"_(bucket|count|sum)$", "", m) for m in charted} <= exposed
