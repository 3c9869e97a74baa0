"""One running instance per service; the others stand by.

Two instances acting on the same memory undo each other's work (a stale topic reconciler once reverted 50 changes;
a second replicas-change service resubmitted them), and a rolling update runs two for a while. So a service's
instances compete for a lease before they start: the member of the consumer group ``ballast-<service>-owner`` (on
the bus topic ``ballast.leases``) that holds partition 0 is the owner. Only the owner starts the service (its faust
app, its consumer group, its memory rebuilt from the compacted topics); every other instance waits, answering
``GET /health`` with ``role: standby`` (and ``GET /metrics``).

The owner keeps the lease by staying in the group (librdkafka heartbeats every second; a thread polls). The moment
the group takes partition 0 away (a revocation, or the member found lost after a pause or a partition of the
network, or a group coordinator on a broker that died), the owner stops at once, before the lease can be given to
another instance's process, which then rebuilds from the bus: it starts over as a standby in a fresh process image
(``execv``: the same pid and command, so a supervisor sees no exit and applies no crash-loop backoff; code 3 if that
fails). Seen on real Kafka: killing the broker that coordinates the lease group loses every lease for a few seconds. A crashed owner (kill -9) is replaced once
the group's session times out: ``session.timeout.ms`` (``BALLAST_BUS__LEASE_SESSION_TIMEOUT_MS``: 6 s, the
least Kafka's default ``group.min.session.timeout.ms`` allows; 3 s on the local stacks) + a rebalance (the local
broker waits up to ``max.poll.interval.ms``, 6 s) + the new owner's start: 8-13 s from kill -9 to health 200 on the
local stacks.
A paused owner that wakes after losing the lease acts for at most one poll interval plus a heartbeat (about 1.5 s)
before it exits; nothing on Kafka's side can fence it sooner, since Cruise Control takes no fencing token.

A sharded service (``shards`` > 1: the topic reconciler, one shard per partition of the bus topics) shares its work
instead: every member holds the lease partitions the range assignor gives it (the oldest members first, so one
joining later takes shards only from those holding several) and runs for those shards. At every rebalance the
group first revokes: the lease's thread then blocks until the service acts on no shard (``Handover.pause``), so no
shard ever has two instances acting on it; then it hands the service its new shards, which it loads and acts on.
An instance left with no shard exits and stands by, as a single service's owner does.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
import sys
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any

from aiohttp import web
from confluent_kafka import Consumer, KafkaException, TopicPartition

from events import TOPICS
from events.topics import group
from services.common.bus_topics import wait_for_bus_to_start
from services.common.logging import get_logger
from services.common.metrics import exposition
from services.common.settings import BusSettings
from services.common.shards import Handover

log = get_logger(__name__)

EXIT_LEASE_LOST = 3
# The rebalance timeout: members must rejoin within it (librdkafka wants it at least the session timeout).
MAX_POLL_INTERVAL_MS = 6000
POLL_S = 0.5
# A gap this long between two of the lease thread's polls is logged (with how long it was): the thread needs the GIL,
# and a process that holds it (a long garbage collection, a long C call) delays the polls towards max.poll.interval.
LATE_POLL_S = 2.0
# A standby whose client has not joined the group (no assignment, not even an empty one) this long after it began
# starts a fresh client. A join takes seconds, at most a session and a rebalance timeout (12 s) while the group waits
# for an owner killed -9; a fresh clone's run saw a replicas-change service whose librdkafka consumer never joined (no
# broker's coordinator logged a JoinGroup for its group) and stood by for the whole 90 s its stack waited, while the
# other services' lease groups, on the same coordinator, were joined within 3 s. Why is not known (its client logs
# were off); the warning says which step librdkafka was in.
JOIN_DEADLINE_S = 30.0
# librdkafka's statistics, for the group's state in that warning (which join step it is stuck in).
STATS_INTERVAL_MS = 5000


def restart_as_standby() -> None:
    """The same command again in a fresh process image; nothing of the old one's memory survives."""
    try:
        sys.stdout.flush()
        sys.stderr.flush()
        os.execv(sys.executable, [sys.executable, *sys.orig_argv[1:]])
    except OSError:
        os._exit(EXIT_LEASE_LOST)


def lease_group(service: str) -> str:
    """The consumer group whose partition 0 is ``service``'s lease."""
    return group(f"{service}-owner")


class Lease:
    def __init__(self, bus: BusSettings, service: str, *, shards: int = 1,
                 on_lost: Callable[[], None] | None = None) -> None:
        self.service = service
        self.shards = shards
        # The lease partitions (shards) this instance holds; a single service's owner holds {0}.
        self.owned: frozenset[int] = frozenset()
        self._handover: Handover | None = None
        self._on_lost = on_lost or restart_as_standby
        self._bus = bus
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        # Whether this client has been given an assignment yet (an empty one too: joined as a standby), and the last
        # group state librdkafka's statistics reported.
        self._joined = False
        self._group_state: dict[str, Any] = {}
        self._consumer = self._subscribed_consumer()

    def _subscribed_consumer(self) -> Consumer:
        consumer = Consumer({
            **self._bus.confluent_config(),
            "group.id": lease_group(self.service),
            # The range assignor gives the first partitions to the members whose ids sort first, and member ids start
            # with the client id: the instances that started first keep what they hold, and one joining later never
            # takes a single service's lease.
            "client.id": f"ballast-{self.service}-{time.time_ns():020d}-{uuid.uuid4().hex[:6]}",
            "session.timeout.ms": self._bus.lease_session_timeout_ms,
            "heartbeat.interval.ms": 1000,
            # Also the rebalance timeout the coordinator waits for members to rejoin: Kafka's 5 minutes would hold
            # a takeover that long whenever a member leaves mid-rebalance. Both threads poll every 0.5 s at most,
            # except while a sharded service pauses (shards.PAUSE_TIMEOUT_S, less than this).
            "max.poll.interval.ms": max(MAX_POLL_INTERVAL_MS, self._bus.lease_session_timeout_ms),
            "enable.auto.commit": False,
            "partition.assignment.strategy": "range",
            "statistics.interval.ms": STATS_INTERVAL_MS,
            "stats_cb": self._stats,
            "log_level": 0,
        })
        consumer.subscribe([TOPICS.leases.name], on_assign=self._assigned, on_revoke=self._revoked,
                           on_lost=self._dropped)
        return consumer

    def _stats(self, stats: str) -> None:
        group = json.loads(stats).get("cgrp") or {}
        self._group_state = {key: group[key] for key in ("state", "join_state", "stateage", "rebalance_cnt",
                                                          "rebalance_reason") if key in group}

    @property
    def owner(self) -> bool:
        return bool(self.owned)

    def attach(self, handover: Handover) -> frozenset[int]:
        """From the running service: where to send shards from now on, and the shards held now. (A rebalance
        between the two lines hands the same shards over twice, which the service takes as one.)"""
        self._handover = handover
        return self.owned

    def _revoked(self, consumer: Any, partitions: list[TopicPartition]) -> None:
        if consumer is not self._consumer:
            return  # a client replaced while standing by, closing: what it held is not this instance's
        # Eager protocol: every rebalance revokes everything first. Nothing may act on a shard once this returns.
        if self._handover is not None and self.owned:
            try:
                self._handover.pause()
            except Exception as exc:  # noqa: BLE001 - a service that cannot stop in time must not keep running
                self._lost(f"the service did not stop acting on its shards in time ({exc!r})")

    def _assigned(self, consumer: Any, partitions: list[TopicPartition]) -> None:
        if consumer is not self._consumer:
            return
        self._joined = True
        held = frozenset(p.partition for p in partitions
                         if p.topic == TOPICS.leases.name and p.partition < self.shards)
        if self.owned and not held:
            self._lost("the group gave the lease to other instances")
            return
        changed, self.owned = held != self.owned, held
        if self._handover is not None and held:
            if changed:
                log.info("shards reassigned", service=self.service, shards=sorted(held))
            self._handover.assign(held)

    def _dropped(self, consumer: Any, partitions: list[TopicPartition]) -> None:
        if consumer is self._consumer and self.owned:
            self._lost("this instance was dropped from the group (its session expired)")

    def _lost(self, why: str) -> None:
        if self._stopping.is_set():
            return
        self.owned = frozenset()
        log.warning("lease lost; starting over as a standby", service=self.service, reason=why)
        self._on_lost()

    def poll(self) -> None:
        try:
            self._consumer.poll(POLL_S)
        except KafkaException as exc:
            log.warning("lease consumer error", error=str(exc))

    def wait(self, *, host: str, port: int) -> None:
        """Block until this instance owns the service, answering health checks as a standby meanwhile."""
        # A group on a topic that does not exist assigns nothing; one partition per shard. Under the bus port's
        # policy: a fresh clone's run saw the compose stack's topic reconciler exit on "Failed to get metadata: Local:
        # Timed out" here, a moment after the bus had answered, while its brokers were still starting.
        wait_for_bus_to_start(self._bus, log, [TOPICS.leases], partitions=self.shards)
        server = _StandbyHealth(self.service, host, port)
        log.info("waiting for the service's lease", service=self.service)
        # A standby asked to stop (a rolling update) exits 0 within a poll; once the service runs, faust handles
        # SIGTERM. The handler only takes note: an exception raised from it inside confluent-kafka's poll comes out
        # as a SystemError (seen: "exception <class 'int'> is not a BaseException subclass", exit code 1).
        stop = threading.Event()
        previous = signal.signal(signal.SIGTERM, lambda *_: stop.set())
        try:
            self._stand_by(stop)
        finally:
            signal.signal(signal.SIGTERM, previous)
            server.stop()
        if stop.is_set():
            self._stopping.set()
            log.info("stopped while standing by", service=self.service)
            logging.shutdown()
            os._exit(0)  # without leaving the group: see ``release``
        log.info("this instance owns the service now", service=self.service, shards=sorted(self.owned))

    def _stand_by(self, stop: threading.Event) -> None:
        """Poll until this instance owns the service or is asked to stop; a client that has not joined the group
        within JOIN_DEADLINE_S is replaced by a fresh one (its coordinator, metadata and join found again)."""
        began = time.monotonic()
        while not self.owner and not stop.is_set():
            self.poll()
            if not self._joined and time.monotonic() - began > JOIN_DEADLINE_S:
                log.warning("the lease group not joined; starting a fresh client", service=self.service,
                            group=lease_group(self.service), waited_s=round(time.monotonic() - began, 1),
                            group_state=self._group_state)
                stuck, self._consumer, self._group_state = self._consumer, self._subscribed_consumer(), {}
                # Closed aside: a client stuck in its join may take as long to leave.
                threading.Thread(target=stuck.close, name="lease-close", daemon=True).start()
                began = time.monotonic()

    def keep(self) -> None:
        """Stay in the group while the service runs, exiting the moment the lease is lost."""
        self._thread = threading.Thread(target=self._keep, name="lease", daemon=True)
        self._thread.start()

    def _keep(self) -> None:
        last = time.monotonic()
        while not self._stopping.is_set():
            self.poll()
            time.sleep(0.01)
            now = time.monotonic()
            if now - last >= LATE_POLL_S:
                log.warning("lease poll late", service=self.service, seconds_since_last_poll=round(now - last, 2),
                            max_poll_interval_s=max(MAX_POLL_INTERVAL_MS, self._bus.lease_session_timeout_ms) / 1000)
            last = now

    def release(self, code: int) -> None:
        """When the service stops: stop polling and exit with ``code`` without leaving the group, so the lease
        passes once the session expires. (Leaving would pass it at once on Kafka, but the local broker, Tansu 0.6,
        keeps a leader that left as the group's leader and never completes the next rebalance; an expired session
        it handles.)"""
        self._stopping.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        log.info("lease released", service=self.service, exit_code=code)
        logging.shutdown()
        os._exit(code)


class _StandbyHealth:
    """``GET /health`` -> 200 ``{"role": "standby"}`` on the service's own port, until the service takes it over; and
    ``GET /metrics``, this process's: Prometheus scrapes every instance (the Kubernetes pods' annotations, the compose
    stack's targets), and a standby that answered 404 was a target down for as long as it stood by, a healthy one
    too (every standby pod of a two-replica Deployment; a compose service starting over after a lost lease)."""

    def __init__(self, service: str, host: str, port: int) -> None:
        self._loop = asyncio.new_event_loop()
        app = web.Application()

        async def health(_: web.Request) -> web.Response:
            return web.json_response({"service": service, "ready": False, "role": "standby"})

        async def metrics(_: web.Request) -> web.Response:
            body, content_type = exposition()
            return web.Response(body=body, headers={"Content-Type": content_type})

        app.router.add_get("/health", health)
        app.router.add_get("/metrics", metrics)
        self._runner = web.AppRunner(app, access_log=None)
        self._loop.run_until_complete(self._runner.setup())
        self._loop.run_until_complete(web.TCPSite(self._runner, host, port).start())
        self._thread = threading.Thread(target=self._loop.run_forever, name="standby-health", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self._loop).result(timeout=10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=5)
