"""The local parts' processes (services.local.broker.popen): the priority they run at; the local Kafka cluster's id,
made without a JVM."""

from __future__ import annotations

import base64
import os
import subprocess

import pytest

from services.local.broker import popen
from services.local.kafka_cluster import random_cluster_id


def niceness_of(**options: object) -> int:
    process = popen(["sleep", "30"], stdout=subprocess.DEVNULL, **options)
    try:
        return os.getpriority(os.PRIO_PROCESS, process.pid)
    finally:
        process.kill()
        process.wait(timeout=10)


@pytest.mark.parametrize("detached", [False, True])
def test_background_parts_run_at_the_niceness_asked_for_and_spark_at_ours(monkeypatch: pytest.MonkeyPatch,
                                                                         detached: bool) -> None:
    ours = os.getpriority(os.PRIO_PROCESS, 0)
    monkeypatch.setenv("BALLAST_LOCAL_NICE", "5")
    assert niceness_of(detached=detached) == min(19, ours + 5)
    assert niceness_of(detached=detached, background=False) == ours
    monkeypatch.setenv("BALLAST_LOCAL_NICE", "0")
    assert niceness_of(detached=detached) == ours


def test_a_niceness_that_is_not_one_is_refused_with_its_name(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BALLAST_LOCAL_NICE", "low")
    with pytest.raises(ValueError, match="BALLAST_LOCAL_NICE must be a whole number from 0 to 19, not 'low'"):
        niceness_of()


def test_a_cluster_id_is_what_kafkas_random_uuid_prints() -> None:
    """16 random bytes in base64url without padding, never with a leading dash (StorageTool's own rule); the suite's
    real clusters are formatted with these ids."""
    ids = {random_cluster_id() for _ in range(2000)}
    assert len(ids) == 2000
    for cluster_id in ids:
        assert len(cluster_id) == 22 and not cluster_id.startswith("-")
        assert len(base64.urlsafe_b64decode(cluster_id + "==")) == 16
