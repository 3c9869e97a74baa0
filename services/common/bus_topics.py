"""Ballast's own topics on the bus: created when missing, with their configs (compaction), partitions and
replication, by every service as it starts and by ``ballast init-bus`` (an init container, a Kubernetes Job), which
also makes each tenant's spec, status and dead-letter topics where a tenants file names tenants.

A service started before its bus (a container that came up first, a broker restarting) waits for it, saying so in
its log, rather than exiting: nothing needs restarting by hand once the bus is up. The bus port's policy for this,
decided here once: a refusal that asking again cannot change (authorization, a policy, an invalid config) is
permanent and stops the service with the broker's reason; anything else (no broker reached, a request timed out,
fewer brokers up than the replication factor while a cluster starts) is temporary and waited out. So is a refusal of
Ballast's credentials: a password file is read again at each try, and the user may be created after the service
starts (a provisioning job); it is logged as the error it is, with Kafka's reason, and tried again at the same slow
pace, never in a storm.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic

from events import TOPICS
from events.topics import BusTopic, tenants_topics
from services.common.busio import ClientRefused, Refusal, client_config
from services.common.logging import get_logger
from services.common.retry import backoff
from services.common.settings import BusSettings

log = get_logger(__name__)

# Between two tries while the bus is not there yet: 1 s, doubling up to 15 s.
FIRST_WAIT_S = 1.0
LONGEST_WAIT_S = 15.0

_PERMANENT = frozenset({
    KafkaError.TOPIC_AUTHORIZATION_FAILED, KafkaError.CLUSTER_AUTHORIZATION_FAILED,
    KafkaError.GROUP_AUTHORIZATION_FAILED,
    KafkaError.POLICY_VIOLATION, KafkaError.INVALID_CONFIG, KafkaError.INVALID_PARTITIONS,
    KafkaError.TOPIC_EXCEPTION, KafkaError.INVALID_REQUEST, KafkaError._INVALID_ARG,
})


class BusRefused(RuntimeError):
    """The bus refused to hold Ballast's topics, and asking again would get the same answer."""


def _admin(settings: BusSettings) -> tuple[AdminClient, Refusal]:
    # librdkafka's own lines go to stderr, not as JSON, many a second while no broker answers: a failure's reason
    # is in the exception (or the refusal), logged once with the rest.
    config, refusal = client_config(settings)
    return AdminClient(config), refusal


def permanent(error: KafkaError) -> bool:
    """Whether asking the bus again cannot change this answer (the module's policy)."""
    return error.code() in _PERMANENT


def deployment_topics(tenants_file: Path | None) -> list[BusTopic]:
    """Ballast's topics, and each tenant's own three where a tenants file names tenants (``TenantsError`` when the
    file is not one)."""
    from services.domain.tenants import load_tenants

    tenants = load_tenants(tenants_file).tenants if tenants_file is not None else []
    return [*TOPICS.all(), *tenants_topics(t.name for t in tenants)]


def ensure_topics(settings: BusSettings, topics: Iterable[BusTopic] | None = None, timeout_s: float = 30.0) -> None:
    """Create Ballast's topics (all of them unless told) where missing; those that exist are left as they are.
    ``ClientRefused`` when the brokers refused the client's credentials."""
    admin, refusal = _admin(settings)
    wanted = list(topics or TOPICS.all())
    try:
        existing = set(admin.list_topics(timeout=timeout_s).topics)
    except KafkaException:
        if refused := refusal.refused(admin):
            raise refused from None
        raise
    new = [NewTopic(t.name, num_partitions=settings.topic_partitions,
                    replication_factor=settings.topic_replication_factor, config=t.config)
           for t in wanted if t.name not in existing]
    if not new:
        return
    for name, future in admin.create_topics(new, request_timeout=timeout_s).items():
        try:
            future.result()
        except KafkaException as exc:
            if exc.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:  # another instance made it first
                raise
        log.info("created bus topic", topic=name)


def ensure_partitions(settings: BusSettings, topic: BusTopic, count: int, timeout_s: float = 30.0) -> None:
    """Give ``topic`` at least ``count`` partitions (a bus created before its shards were raised has fewer)."""
    admin, _ = _admin(settings)
    metadata = admin.list_topics(topic.name, timeout=timeout_s).topics.get(topic.name)
    have = len(metadata.partitions) if metadata is not None and metadata.error is None else 0
    if have >= count:
        return
    future = admin.create_partitions([NewPartitions(topic.name, count)], request_timeout=timeout_s)[topic.name]
    try:
        future.result()
    except KafkaException as exc:
        error = exc.args[0]
        if error.code() != KafkaError.INVALID_PARTITIONS:  # that one: another instance raised it first
            if not permanent(error):
                raise  # a bus still starting: ``wait_for_bus`` asks again
            raise BusRefused(f"{topic.name} has {have} partition(s) and {count} are needed, but adding them "
                             f"failed: {error.str()}; add them with kafka-topics.sh --alter") from None
    log.info("added bus topic partitions", topic=topic.name, partitions=count)


def wait_for_bus(settings: BusSettings, topics: Iterable[BusTopic] | None = None, *, partitions: int | None = None,
                 timeout_s: float = 5.0, sleep: Callable[[float], None] = time.sleep) -> None:
    """Block until the bus answers and holds Ballast's topics (``ensure_topics``), creating them, each with at least
    ``partitions`` when told (``ensure_partitions``); a temporary failure is logged and tried again, a permanent one
    raises ``BusRefused`` with the broker's reason."""
    wanted = list(topics or TOPICS.all())
    attempts = 0
    while True:
        try:
            ensure_topics(settings, wanted, timeout_s)
            if partitions:
                for topic in wanted:
                    ensure_partitions(settings, topic, partitions, timeout_s)
        except ClientRefused as exc:
            attempts += 1
            wait = backoff(attempts, initial_s=FIRST_WAIT_S, max_s=LONGEST_WAIT_S).total_seconds()
            log.error("the bus refused Ballast's credentials", bootstrap_servers=settings.bootstrap_servers,
                      reason=str(exc), attempts=attempts, next_try_s=wait)
            sleep(wait)
            continue
        except KafkaException as exc:
            error = exc.args[0]
            if permanent(error):
                raise BusRefused(f"the bus at {settings.bootstrap_servers} refused Ballast's topics: "
                                 f"{error.str()}") from None
            attempts += 1
            wait = backoff(attempts, initial_s=FIRST_WAIT_S, max_s=LONGEST_WAIT_S).total_seconds()
            log.warning("waiting for the bus", bootstrap_servers=settings.bootstrap_servers, reason=error.str(),
                        attempts=attempts, next_try_s=wait)
            sleep(wait)
            continue
        if attempts:
            log.info("the bus is up", bootstrap_servers=settings.bootstrap_servers, attempts=attempts)
        return


def wait_for_bus_to_start(settings: BusSettings, service_log: Any, topics: Iterable[BusTopic] | None = None, *,
                          partitions: int | None = None) -> None:
    """``wait_for_bus`` as a service starts: a permanent refusal is the service's last log line, and its exit (1)."""
    try:
        wait_for_bus(settings, topics, partitions=partitions)
    except BusRefused as exc:
        service_log.error("cannot start", reason=str(exc))
        raise SystemExit(1) from None
