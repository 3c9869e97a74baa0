"""Test harness over the real local stack: apply specs, watch the status and dead-letter topics, drive faults."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
import uuid
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
from prometheus_client.parser import text_string_to_metric_families
from confluent_kafka import Consumer, TopicPartition

from events import (
    TOPICS,
    DeadLetter,
    Decoded,
    InvalidEvent,
    ReplicasChangeRecord,
    TopicSpec,
    TopicSpecDeleted,
    TopicStatus,
    decode,
    encode,
)
from services.common import busio
from services.common.settings import Settings
from services.local.stack import LocalStack
from tests.patience import WAIT_S


def spec(name: str, replicas: int, partitions: int = 3, **config: str) -> TopicSpec:
    """A topic spec; config keys use underscores for dots (``min_insync_replicas="2"``)."""
    return TopicSpec(name=name, partitions=partitions, replicas=replicas,
                     config={k.replace("_", "."): v for k, v in config.items()})


def is_ongoing(status: TopicStatus) -> bool:
    return status.replicas_change is not None and status.replicas_change.state == "ongoing"


def pending_with(text: str) -> Callable[[TopicStatus], bool]:
    """A pending change whose message contains ``text``."""
    return lambda s: (s.replicas_change is not None and s.replicas_change.state == "pending"
                      and text in (s.replicas_change.message or ""))


def change_sessions(settings: Settings, topics: list[str], *, after_generation: dict[str, int] | int = 0
                    ) -> dict[str, set[str]]:
    """Per topic, the Cruise Control sessions its change went through, as the replicas-change service recorded them
    (every record of its state topic: the local broker does not compact), for specs of generations after the given
    one(s). Statuses may skip the ongoing state when it is short, so they do not serve here."""
    wanted = set(topics)
    sessions: dict[str, set[str]] = {t: set() for t in topics}
    for event in busio.events(settings.bus, TOPICS.replicas_state, follow=False, idle_s=1.0):
        if not isinstance(event, ReplicasChangeRecord) or event.topic not in wanted or event.session_id is None:
            continue
        floor = after_generation if isinstance(after_generation, int) else after_generation.get(event.topic, 0)
        if event.generation > floor:
            sessions[event.topic].add(event.session_id)
    return sessions


class Follower:
    """Follows bus topics from the beginning in a background thread; a subclass keeps what it needs in ``take``
    (called under the lock) and tests ``wait`` for a predicate over it."""

    def __init__(self, settings: Settings, topics: list[str]) -> None:
        self.bus = settings.bus
        self._topics = topics
        self._stop = threading.Event()
        self._changed = threading.Condition()
        self._thread = threading.Thread(target=self._run, daemon=True, name=f"{type(self).__name__}")
        self._thread.start()

    def take(self, decoded: Decoded) -> None:
        raise NotImplementedError

    def _run(self) -> None:
        consumer = Consumer({**self.bus.confluent_config(), "group.id": f"test-{uuid.uuid4()}",
                             "enable.auto.commit": False, "auto.offset.reset": "earliest"})
        partitions = []
        for topic in self._topics:
            meta = consumer.list_topics(topic, timeout=10).topics[topic]
            partitions += [TopicPartition(topic, p, -2) for p in meta.partitions]
        consumer.assign(partitions)
        try:
            while not self._stop.is_set():
                message = consumer.poll(0.1)
                if message is None or message.error():
                    continue
                try:
                    decoded = decode(message.value())
                except InvalidEvent:
                    continue
                with self._changed:
                    self.take(decoded)
                    self._changed.notify_all()
        finally:
            consumer.close()

    # Deadlines are generous: a condition that is met returns at once, and a machine running another suite beside this
    # one took more than a minute to restart a service and see its change through (seen in test_resilience).
    def wait(self, what: str, predicate: Callable[[], bool], timeout: float = WAIT_S) -> None:
        deadline = time.monotonic() + timeout
        with self._changed:
            while not predicate():
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")
                self._changed.wait(min(remaining, 0.5))

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)


class Watcher(Follower):
    """Topic statuses and dead letters."""

    def __init__(self, settings: Settings) -> None:
        self.latest: dict[str, TopicStatus] = {}
        self.history: dict[str, list[TopicStatus]] = defaultdict(list)
        self.dead_letters: list[DeadLetter] = []
        self.correlation_ids: dict[str, set[str]] = defaultdict(set)
        super().__init__(settings, [TOPICS.status.name, TOPICS.dead_letters.name])

    def take(self, decoded: Decoded) -> None:
        event = decoded.event
        if isinstance(event, TopicStatus):
            self.correlation_ids[event.topic].add(decoded.envelope.correlation_id)
            self.latest[event.topic] = event
            self.history[event.topic].append(event)
        elif isinstance(event, DeadLetter):
            self.dead_letters.append(event)

    def wait_status(self, topic: str, predicate: Callable[[TopicStatus], bool], what: str,
                    timeout: float = WAIT_S) -> TopicStatus:
        self.wait(f"{topic}: {what} (last: {self.describe(topic)})",
                  lambda: topic in self.latest and predicate(self.latest[topic]), timeout)
        return self.latest[topic]

    def wait_passing(self, topic: str, predicate: Callable[[TopicStatus], bool], what: str,
                     timeout: float = WAIT_S) -> TopicStatus:
        """A passing state (a change ongoing): the first status from the latest on that matches, even if a newer one
        has already replaced it (a quick change goes ongoing -> completed between two looks)."""
        start = max(len(self.history[topic]) - 1, 0)
        self.wait(f"{topic}: {what} (last: {self.describe(topic)})",
                  lambda: any(predicate(s) for s in self.history[topic][start:]), timeout)
        return next(s for s in self.history[topic][start:] if predicate(s))

    def wait_rf(self, topic: str, rf: int, timeout: float = WAIT_S) -> TopicStatus:
        """Ready, RF reached, and no change in flight."""
        return self.wait_status(
            topic, lambda s: s.ready and s.replicas == rf and (s.replicas_change is None
                                                                or s.replicas_change.state == "completed"),
            f"RF {rf} completed", timeout)

    def describe(self, topic: str) -> str:
        status = self.latest.get(topic)
        if status is None:
            return "no status"
        return status.model_dump_json(by_alias=True, exclude_none=True, exclude={"conditions"})


class Ballast:
    """What a test does to the system: the same bus events and fault calls a user or an operator would make."""

    def __init__(self, stack: LocalStack) -> None:
        self.stack = stack
        self.settings = stack.settings()
        self.watcher = Watcher(self.settings)
        self.sim = httpx.Client(base_url=stack.sim_url, timeout=10)

    def apply(self, *specs: TopicSpec, correlation_id: str | None = None) -> None:
        busio.produce(self.settings.bus, [(TOPICS.specs.name, s.key.encode(),
                                           encode(s, correlation_id=correlation_id), None) for s in specs])

    def delete(self, *names: str) -> None:
        events = [TopicSpecDeleted(name=n) for n in names]
        busio.publish(self.settings.bus, TOPICS.specs, events)

    def produce_raw(self, topic: str, key: bytes | None, value: bytes | None) -> None:
        busio.produce(self.settings.bus, [(topic, key, value, None)])

    def stop_brokers(self, *ids: int) -> None:
        for broker in ids:
            self.sim.post(f"/admin/brokers/{broker}/stop").raise_for_status()

    def start_brokers(self, *ids: int) -> None:
        for broker in ids:
            self.sim.post(f"/admin/brokers/{broker}/start").raise_for_status()

    def cluster_rf(self, topic: str) -> int | None:
        response = self.sim.post("/admin/topics/describe", json={"names": [topic]}).json()["topics"]
        if not response:
            return None
        return max(len(p["replicas"]) for p in response[0]["partitions"])

    def cluster_topic(self, topic: str) -> dict | None:
        found = self.sim.post("/admin/topics/describe", json={"names": [topic]}).json()["topics"]
        return found[0] if found else None

    def fault(self, path: str, body: dict | None = None) -> None:
        response = self.sim.post(f"/faults/{path}", json=body or {})
        assert response.status_code in (200, 204), response.text

    def tune(self, **tuning: float) -> None:
        self.fault("tuning", tuning)

    def topic_configuration_tasks(self) -> list[dict]:
        """Cruise Control's own record of topic_configuration tasks (what Ballast submitted)."""
        port = self.stack.ports.cruise_control
        answer = self.stack.http.get(f"http://127.0.0.1:{port}/kafkacruisecontrol/user_tasks",
                                     params={"json": "true", "endpoints": "topic_configuration"}, timeout=10)
        return answer.json()["userTasks"]

    def close(self) -> None:
        self.watcher.stop()
        self.sim.close()


def scrape(url: str) -> dict[str, dict[tuple[tuple[str, str], ...], float]]:
    """Sample name -> labels -> value."""
    answer = httpx.get(url, timeout=10)
    assert answer.status_code == 200 and answer.headers["content-type"].startswith("text/plain")
    samples: dict[str, dict[tuple[tuple[str, str], ...], float]] = {}
    for family in text_string_to_metric_families(answer.text):
        for sample in family.samples:
            samples.setdefault(sample.name, {})[tuple(sorted(sample.labels.items()))] = sample.value
    return samples


def value(samples: dict, name: str, **labels: str) -> float:
    return sum(v for key, v in samples.get(name, {}).items() if set(labels.items()) <= set(key))


@contextmanager
def serving_dashboard(env: dict[str, str], log_path: Path) -> Iterator[str]:
    """``ballast dashboard`` on a free port against the stack ``env`` names; yields its URL once it answers."""
    from services.local.broker import free_port

    port = free_port()
    with log_path.open("w") as log:
        process = subprocess.Popen([sys.executable, "-m", "services.cli", "dashboard", "--port", str(port)],
                                   env={**os.environ, **env}, stdout=log, stderr=subprocess.STDOUT)
        url = f"http://127.0.0.1:{port}/"
        try:
            deadline = time.monotonic() + 180  # generous: a loaded machine starts Python slowly
            with httpx.Client(timeout=5) as http:  # one client: each new one loads the CA bundle again
                while True:
                    assert process.poll() is None, log_path.read_text()
                    try:
                        if http.get(url).status_code == 200:
                            break
                    except httpx.HTTPError:
                        pass
                    assert time.monotonic() < deadline, \
                        f"the dashboard did not answer within 180 s: {log_path.read_text()}"
                    time.sleep(0.2)
            yield url
        finally:
            process.terminate()
            process.wait(timeout=15)
