"""The faust worker that runs a service once it holds its lease, and what happens when its start fails.

A start that the bus fails for a moment (a broker down or not yet known to the client: aiokafka's retriable errors,
a connection refused or timed out) is not the service's fault, and an exit would leave it down wherever nothing
restarts it (seen in the suite: a service whose lease lapsed under load started again while a bus broker was
down, and faust's CreateTopics for its leader topic went to that broker: NodeNotReadyError, exit 1, and the service
never came back). Such a start starts over as a standby after a pause, as a lost lease does (``lease.py``); any
other failure still ends the process with its exit code, for its supervisor to see.
"""

from __future__ import annotations

import asyncio

from faust.worker import Worker

# Long enough for a broker's restart or the client's next metadata; the lease's own session then passes too.
PAUSE_BEFORE_START_OVER_S = 2.0


class ServiceWorker(Worker):
    """A faust worker that keeps the error its start failed with (mode's worker logs it and exits 1)."""

    start_error: BaseException | None = None

    async def start(self) -> None:
        try:
            await super().start()
        except Exception as exc:
            self.start_error = exc
            raise


def failed_for_a_moment(error: BaseException | None) -> bool:
    """The bus's port decides once: errors Kafka calls retriable, and connections that never got an answer."""
    return bool(getattr(error, "retriable", False)) or isinstance(error, (ConnectionError, asyncio.TimeoutError))

