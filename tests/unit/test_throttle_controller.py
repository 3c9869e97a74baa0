"""What the controller takes from the bus: a rebalance that executes with a fixed throttle of its own fixes that kind
of throttle for as long as it executes; Cruise Control's newest load sample per broker is the one kept."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from events import BrokerLoadSample, RebalanceRequest, RebalanceState, RebalanceStatus
from services.common.outbox import MemoryOutbox
from services.common.settings import ThrottleSettings
from services.throttle.controller import ThrottleController

NOW = datetime(2026, 11, 27, 12, 0, tzinfo=UTC)


def controller() -> ThrottleController:
    return ThrottleController(ThrottleSettings(), admin=None, outbox=MemoryOutbox())  # type: ignore[arg-type]


def rebalance(name: str, state: RebalanceState, **request: object) -> RebalanceStatus:
    return RebalanceStatus(name=name, state=state, request=RebalanceRequest(name=name, **request), updated_at=NOW)


def test_a_rebalance_executing_with_a_replication_throttle_fixes_the_inter_broker_kind() -> None:
    c = controller()
    c.take_rebalance(rebalance("r", RebalanceState.REBALANCING, replication_throttle=5_000_000))
    assert c.fixed_kinds() == {"inter-broker"}
    c.take_rebalance(rebalance("r", RebalanceState.READY, replication_throttle=5_000_000))
    assert c.fixed_kinds() == set()


def test_a_remove_disks_rebalance_with_an_intra_broker_throttle_fixes_that_kind_while_it_stops_too() -> None:
    c = controller()
    c.take_rebalance(rebalance("d", RebalanceState.STOPPING, mode="remove-disks", intra_broker_throttle=1_000_000,
                               move_replicas_off_volumes=[{"broker_id": 1, "volume_ids": [0]}]))
    assert c.fixed_kinds() == {"intra-broker"}


def test_a_rebalance_without_a_throttle_or_not_executing_fixes_nothing() -> None:
    c = controller()
    c.take_rebalance(rebalance("a", RebalanceState.REBALANCING))
    c.take_rebalance(rebalance("b", RebalanceState.PROPOSAL_READY, replication_throttle=5_000_000))
    assert c.fixed_kinds() == set()


def test_the_newest_load_sample_of_each_broker_is_kept() -> None:
    c = controller()
    newer = BrokerLoadSample(broker=1, sampled_at=NOW, bytes_in_kb_s=10.0)
    c.take_load(newer)
    c.take_load(BrokerLoadSample(broker=1, sampled_at=NOW - timedelta(seconds=30), bytes_in_kb_s=99.0))
    assert c.load == {1: newer}
