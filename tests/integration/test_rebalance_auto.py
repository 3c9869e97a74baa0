"""Automatic rebalancing on scaling (seed 001's phase 2), on a stack of its own with auto mode on."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from events import RebalanceState
from tests.integration.rebalancing import ENV, Rebalancing, rebalancing_stack

S = RebalanceState
AUTO_ENV = {**ENV, "BALLAST_REBALANCER__AUTO__ENABLED": "true",
            # Templates: options every automatic rebalance of that mode gets.
            "BALLAST_REBALANCER__AUTO__ADD_BROKERS": '{"replicationThrottle": 50000000}',
            "BALLAST_REBALANCER__AUTO__REMOVE_BROKERS": '{"concurrentPartitionMovementsPerBroker": 10}'}


@pytest.fixture(scope="module")
def rb(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Rebalancing]:
    with rebalancing_stack(tmp_path_factory.mktemp("auto-rebalance-stack"), AUTO_ENV) as client:
        yield client


def test_a_broker_that_joins_gets_replicas_without_anyone_asking(rb: Rebalancing) -> None:
    rb.add_broker(7, "/dc1/r3")
    done = rb.wait_state("auto-add-brokers-7", S.READY)
    assert done.request.auto_approve and done.request.scaling == "up"
    assert done.request.replication_throttle == 50_000_000, "options come from the add-brokers template"
    assert rb.replicas_per_broker()[7] > 0
    assert rb.states("auto-add-brokers-7") == [S.NEW, S.PENDING_PROPOSAL, S.PROPOSAL_READY, S.REBALANCING, S.READY]


def test_announced_removal_empties_the_broker_and_says_it_is_safe(rb: Rebalancing) -> None:
    rb.wait_state("auto-add-brokers-7", S.READY)
    rb.announce_removal(7)
    done = rb.wait_for("auto-remove-brokers-7", lambda s: s.condition("BrokersRemovable") is not None,
                       "removability")
    assert done.state == S.READY and done.condition("BrokersRemovable").status == "True"
    assert done.request.concurrent_partition_movements_per_broker == 10
    assert rb.replicas_per_broker()[7] == 0
    rb.remove_broker(7)


def test_scale_down_runs_before_scale_up(rb: Rebalancing) -> None:
    """Broker 3 is replaced by broker 8 in the same rack: the removal goes first, then the new broker fills."""
    rb.announce_removal(3)
    rb.wait_for("auto-remove-brokers-3", lambda s: True, "the scale-down rebalance")
    rb.add_broker(8, "/dc2/r1")
    up = rb.wait_state("auto-add-brokers-8", S.READY)
    down = rb.latest["auto-remove-brokers-3"]
    assert down.state == S.READY and rb.replicas_per_broker()[3] == 0
    down_ready = min(s.updated_at for s in rb.history[down.name] if s.state == S.READY)
    up_executing = min(s.updated_at for s in rb.history[up.name] if s.state == S.REBALANCING)
    assert up_executing >= down_ready, "the scale-up executed while the scale-down was unfinished"
    assert rb.replicas_per_broker()[8] > 0
