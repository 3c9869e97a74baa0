"""Prometheus metrics (prometheus-client), served at ``GET /metrics`` beside each service's ``/health``.

One process runs one service, so no metric carries the service's name (Prometheus adds the job and instance); the
gauges of what a service holds are read from its memory at scrape time. deploy/grafana/ballast.json charts them.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager

from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, Counter, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

EVENTS_IN = Counter("ballast_events_in", "Records read from a bus topic (valid or not)", ["topic"])
EVENTS_OUT = Counter("ballast_events_out", "Events published to a bus topic", ["topic"])
DEAD_LETTERED = Counter("ballast_events_dead_lettered", "Records sent to the dead-letter topic, by the topic they "
                        "were read from", ["topic"])
CRUISE_CONTROL_REQUESTS = Counter("ballast_cruise_control_requests", "Requests to Cruise Control, by endpoint, "
                                  "method and answer (the HTTP status, or 'error' when none came)",
                                  ["endpoint", "method", "status"])
DRIFT = Counter("ballast_drift", "Topics found changed outside Ballast after their spec was applied, by kind "
                "(config, replicas) and what was done (corrected, reported)", ["kind", "action"])
TENANT_DECISIONS = Counter("ballast_tenant_decisions", "Specs and withdrawals from tenants' own spec topics, by tenant "
                           "and decision (accepted, NotOwner, QuotaExceeded, Invalid)", ["tenant", "decision"])
CRUISE_CONTROL_SECONDS = Histogram("ballast_cruise_control_request_seconds", "Time Cruise Control took to answer",
                                   ["endpoint"], buckets=(0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60))


def _per_topic(counter: Counter) -> Callable[[str], Counter]:
    """The counter's child for a topic, kept: ``labels`` takes a lock and a lookup, and these count every record."""
    return functools.cache(counter.labels)


events_in = _per_topic(EVENTS_IN)
events_out = _per_topic(EVENTS_OUT)
dead_lettered = _per_topic(DEAD_LETTERED)

# Stages of a replication-factor change: spec_to_submission (the command the spec caused, to Cruise Control
# accepting the request), submission_to_completion (Cruise Control's execution, to the target reached),
# completion_to_status (the change recorded done, to the topic's status saying so).
RECONCILE_SECONDS = Histogram("ballast_reconcile_latency_seconds", "Time between the stages of a change", ["stage"],
                              buckets=(0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800))


def observe_since(stage: str, started: float) -> None:
    """``started``: a POSIX timestamp (an event's time)."""
    RECONCILE_SECONDS.labels(stage).observe(max(0.0, time.time() - started))


@contextmanager
def cruise_control_request(endpoint: str, method: str) -> Iterator[Callable[[int], None]]:
    """Times one request; call the yielded function with the HTTP status once an answer came."""
    answered: list[int] = []
    started = time.monotonic()
    try:
        yield answered.append
    finally:
        CRUISE_CONTROL_SECONDS.labels(endpoint).observe(time.monotonic() - started)
        status = str(answered[0]) if answered else "error"
        CRUISE_CONTROL_REQUESTS.labels(endpoint, method, status).inc()


class _Gauge(Collector):
    def __init__(self, name: str, documentation: str, labels: Sequence[str],
                 read: Callable[[], Mapping[tuple[str, ...], float]]) -> None:
        self._name, self._documentation, self._labels, self._read = name, documentation, list(labels), read

    def collect(self) -> Iterator[GaugeMetricFamily]:
        family = GaugeMetricFamily(self._name, self._documentation, labels=self._labels)
        for values, value in self._read().items():
            family.add_metric(list(values), value)
        yield family


_gauges: dict[str, _Gauge] = {}


def gauge(name: str, documentation: str, labels: Sequence[str],
          read: Callable[[], Mapping[tuple[str, ...], float]]) -> None:
    """A gauge read at scrape time from the service's memory: ``read`` gives label values -> value."""
    if name in _gauges:  # a service built twice in one process (tests): the newest memory is the one read
        REGISTRY.unregister(_gauges[name])
    _gauges[name] = _Gauge(name, documentation, labels, read)
    REGISTRY.register(_gauges[name])


def exposition() -> tuple[bytes, str]:
    """The text ``/metrics`` answers, and its content type."""
    return generate_latest(REGISTRY), CONTENT_TYPE_LATEST
