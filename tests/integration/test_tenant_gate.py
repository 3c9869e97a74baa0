"""The tenant gate (issue 53) on the embedded stack (Tansu, the simulator): with a tenants file, a tenant's spec
reaches the cluster with its owner and its status comes back on the tenant's status topic, and an admin's spec on the
deployment's own spec topic is reconciled as before, its status on no tenant's topic."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from events import TOPICS, TopicSpec
from events.topics import tenant_topics
from services.common import busio
from services.common.settings import BusSettings
from services.local.stack import LocalStack
from tests.integration.conftest import TEST_ENV
from tests.patience import until

TENANTS = "tenants: [{name: team-a, principal: 'User:team-a', topics: {prefixes: [a.]}}]\n"
A = tenant_topics("team-a")


@pytest.fixture(scope="module")
def bus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BusSettings]:
    run_dir: Path = tmp_path_factory.mktemp("tenants-stack")
    (run_dir / "tenants.yaml").write_text(TENANTS)
    stack = LocalStack(run_dir, env={**TEST_ENV, "BALLAST_TENANTS_FILE": str(run_dir / "tenants.yaml")},
                       services=("topic-reconciler",))
    try:
        stack.start()
        yield stack.settings().bus
    finally:
        stack.stop()


def test_a_tenants_spec_and_an_admins_are_both_reconciled_each_status_where_it_belongs(bus: BusSettings) -> None:
    busio.publish(bus, A.specs, [TopicSpec(name="a.orders", partitions=2, replicas=2)])
    busio.publish(bus, TOPICS.specs, [TopicSpec(name="platform.audit", partitions=1, replicas=2)])
    mine = until("a.orders ready on team-a's status topic",
                 lambda: (s := busio.latest(bus, A.status).get("a.orders")) and s.ready and s or None)
    assert mine.owner == "team-a" and mine.partitions == 2
    admins = until("platform.audit ready", lambda: (s := busio.latest(bus, TOPICS.status).get("platform.audit"))
                   and s.ready and s or None)
    assert admins.owner is None and "platform.audit" not in busio.latest(bus, A.status)
    assert busio.latest(bus, TOPICS.specs)["a.orders"].owner == "team-a"
