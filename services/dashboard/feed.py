"""The dashboard's feed: every event of the status topics, from the beginning, then as they come (a thread of its
own: the bus client blocks)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from events import TOPICS, InvalidEvent, decode
from services.common import busio
from services.common.busio import BusUnavailable
from services.common.settings import BusSettings

FOLLOWED = (TOPICS.status, TOPICS.rebalance_status, TOPICS.observed_brokers, TOPICS.load_samples,
            TOPICS.broker_status, TOPICS.throttle_status, TOPICS.throttle_changes)


def follow(bus: BusSettings, on_event: Callable[[Any], None], on_error: Callable[[str], None],
           stop: threading.Event) -> None:
    by_name = {t.name: t for t in FOLLOWED}
    while not stop.is_set():
        try:
            for record in busio.consume(bus, list(by_name), follow=True):
                if stop.is_set():
                    return
                try:
                    on_event(decode(record.value, topic=by_name[record.topic]).event)
                except InvalidEvent:
                    continue  # the services dead-letter what is invalid; the page shows what is valid
        except BusUnavailable as exc:
            on_error(f"the bus is not answering ({exc}); retrying")
            stop.wait(5)
