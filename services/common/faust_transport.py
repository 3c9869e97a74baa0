"""faust's aiokafka transport with a configurable fetch wait.

faust-streaming 0.15 hard-codes ``fetch_max_wait_ms=1500`` for its consumers. A broker should answer a waiting fetch
as soon as data arrives, but under a steady stream the local broker (Tansu) often holds it to the limit: measured
here at 1,000 records/s, a record waited p50 0.39 s / p99 0.75 s per hop with 1,500 ms, and 0.03 s / 0.06 s with
100 ms. A change crosses three hops, so the wait is made a setting (``BALLAST_BUS__FETCH_MAX_WAIT_MS``). On Kafka a
short wait only means a few more empty fetches while idle.
"""

from __future__ import annotations

from typing import Any

import faust
from faust.transport.drivers import aiokafka as faust_aiokafka


class _ConsumerThread(faust_aiokafka.AIOKafkaConsumerThread):
    def _create_worker_consumer(self, transport: Any) -> Any:
        consumer = super()._create_worker_consumer(transport)
        # Read by aiokafka when the consumer starts and builds its fetcher.
        consumer._fetch_max_wait_ms = self.app.conf.ballast_fetch_max_wait_ms  # noqa: SLF001
        return consumer


class _Consumer(faust_aiokafka.Consumer):
    def _new_consumer_thread(self) -> faust_aiokafka.AIOKafkaConsumerThread:
        return _ConsumerThread(self, loop=self.loop, beacon=self.beacon)


class _Transport(faust_aiokafka.Transport):
    Consumer = _Consumer


class BallastApp(faust.App):
    """A faust app whose consumers use ``fetch_max_wait_ms`` from the settings."""

    def __init__(self, *args: Any, fetch_max_wait_ms: int, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.conf.ballast_fetch_max_wait_ms = fetch_max_wait_ms

    def _new_transport(self) -> Any:
        return _Transport(self.conf.broker_consumer, self, loop=self.loop)
