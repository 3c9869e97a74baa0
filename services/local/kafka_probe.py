"""Blocking looks at a local Kafka cluster while it starts or fails (the services use the async admin adapter)."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from typing import Any

from kafka.admin import KafkaAdminClient

# kafka-python logs every refused connection while a broker starts; the wait loops here expect them.
logging.getLogger("kafka").setLevel(logging.CRITICAL)


@contextlib.contextmanager
def admin_client(bootstrap: str, timeout_ms: int = 2000, config: dict[str, Any] | None = None
                 ) -> Iterator[KafkaAdminClient]:
    """``config``: more of kafka-python's settings (a secured cluster's)."""
    client = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="ballast-local-kafka",
                              request_timeout_ms=timeout_ms, bootstrap_timeout_ms=timeout_ms, **(config or {}))
    try:
        yield client
    finally:
        client.close()


def unfenced_brokers(bootstrap: str, config: dict[str, Any] | None = None) -> set[int] | None:
    """The brokers the cluster describes as registered and not fenced; None while nothing answers."""
    try:
        with admin_client(bootstrap, config=config) as admin:
            return {b["broker_id"] for b in admin.describe_cluster()["brokers"] if not b.get("is_fenced")}
    except Exception:  # noqa: BLE001 -- anything here means "cannot tell yet"
        return None


def offline_log_dirs(bootstrap: str, broker: int, config: dict[str, Any] | None = None) -> set[str]:
    """The log directories ``broker`` reports with an error (KAFKA_STORAGE_ERROR for a failed disk)."""
    try:
        with admin_client(bootstrap, config=config) as admin:
            described = admin.describe_log_dirs(brokers=[broker])
    except Exception:  # noqa: BLE001
        return set()
    return {d["log_dir"] for entry in described for d in entry["log_dirs"] if d["error_code"] != 0}
