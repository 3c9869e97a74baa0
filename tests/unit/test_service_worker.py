"""A service whose start the bus fails for a moment starts over as a standby instead of exiting
(services/common/service_worker.py); other failures still exit."""

from __future__ import annotations

import asyncio

import pytest
from aiokafka.errors import KafkaConnectionError, NodeNotReadyError, TopicAuthorizationFailedError
from faust.worker import Worker

from services.common.service_worker import ServiceWorker, failed_for_a_moment


@pytest.mark.parametrize("error, momentary", [
    (NodeNotReadyError("node 4 is not ready"), True),  # seen: a bus broker down as the service started
    (KafkaConnectionError("refused"), True),
    (ConnectionRefusedError(), True),
    (asyncio.TimeoutError(), True),
    (TopicAuthorizationFailedError(), False),
    (ValueError("a bug"), False),
    (None, False),
])
def test_which_start_failures_are_the_bus_s_for_a_moment(error: BaseException | None, momentary: bool) -> None:
    assert failed_for_a_moment(error) is momentary


def test_the_worker_keeps_the_error_its_start_failed_with(monkeypatch: pytest.MonkeyPatch) -> None:
    async def failing_start(self: Worker) -> None:
        raise NodeNotReadyError("node 4 is not ready")

    monkeypatch.setattr(Worker, "start", failing_start)
    worker = ServiceWorker.__new__(ServiceWorker)  # no app: only its start is under test
    with pytest.raises(NodeNotReadyError):
        asyncio.run(worker.start())
    assert isinstance(worker.start_error, NodeNotReadyError)
