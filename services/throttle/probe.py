"""The produce-latency probe: one small record every ``every_s`` to a topic of Ballast's own on the managed cluster,
acks=all, and the delivery latencies of the last ``window_s``. What a client producing now waits for, measured the way
a client measures it; the controller backs off when its p99 passes the limit. Off unless a topic is named (it is a
topic on someone's cluster: theirs to allow)."""

from __future__ import annotations

import threading
import time
from collections import deque
from typing import Any

from kafka import KafkaProducer

from services.adapters.admin import AdminError, ClusterAdmin, TopicAlreadyExists
from services.common.logging import get_logger

log = get_logger(__name__)
MIN_SAMPLES = 5  # fewer: no p99 worth acting on


def p99(latencies_ms: list[float]) -> float | None:
    if len(latencies_ms) < MIN_SAMPLES:
        return None
    ordered = sorted(latencies_ms)
    return ordered[min(len(ordered) - 1, int(round(0.99 * (len(ordered) - 1))))]


class LatencyProbe:
    def __init__(self, client_config: dict[str, Any], topic: str, *, every_s: float, window_s: float) -> None:
        self.config = client_config
        self.topic = topic
        self.every_s = every_s
        self.window_s = window_s
        self._samples: deque[tuple[float, float]] = deque()  # (delivered at, latency ms)
        self._pending: dict[int, float] = {}  # sent, not delivered yet: when it was sent
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    async def start(self, admin: ClusterAdmin) -> None:
        """Makes its topic (one partition per broker, so that every broker leads some of the probe's records, and
        RF up to 3), then sends from a thread of its own."""
        brokers = [b for b in await admin.brokers() if b.alive]
        try:
            await admin.create_topic(self.topic, max(1, len(brokers)), max(1, min(3, len(brokers))))
        except TopicAlreadyExists:
            pass
        except AdminError as exc:
            log.warning("the latency probe's topic cannot be made; no latency back-off", topic=self.topic,
                        error=str(exc))
            return
        self._thread = threading.Thread(target=self._run, daemon=True, name="latency-probe")
        self._thread.start()
        log.info("latency probe started", topic=self.topic, every_s=self.every_s)

    def _run(self) -> None:
        producer = KafkaProducer(**self.config, acks="all", linger_ms=0, client_id="ballast-throttle-probe")
        partitions = None
        sent = 0
        try:
            while not self._stop.wait(self.every_s):
                partitions = partitions or sorted(producer.partitions_for(self.topic) or [0])
                started = time.monotonic()
                with self._lock:
                    self._pending[sent] = started
                future = producer.send(self.topic, b"probe", partition=partitions[sent % len(partitions)])
                future.add_callback(lambda _m, n=sent: self._delivered(n))
                sent += 1
        finally:
            producer.close(timeout=5)

    def _delivered(self, number: int) -> None:
        now = time.monotonic()
        with self._lock:
            started = self._pending.pop(number, None)
            if started is not None:
                self._samples.append((now, (now - started) * 1000))

    def p99_ms(self) -> float | None:
        """The p99 of the window's deliveries, each record still waiting counted with what it has waited so far (a
        cluster too busy to answer must not look idle)."""
        now = time.monotonic()
        with self._lock:
            while self._samples and self._samples[0][0] < now - self.window_s:
                self._samples.popleft()
            waiting = [(now - started) * 1000 for started in self._pending.values()]
            return p99([latency for _at, latency in self._samples] + waiting)

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
