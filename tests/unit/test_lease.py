"""The lease's rules: the owner is whoever holds partition 0; an owner that is given the partition away or dropped
from the group exits at once, except while it is stopping on its own."""

from __future__ import annotations

import threading

from confluent_kafka import TopicPartition
from structlog.testing import capture_logs

from events import TOPICS
from services.common import lease as lease_module
from services.common.lease import Lease
from services.common.settings import BusSettings
from tests.patience import WAIT_S, until


def lease() -> tuple[Lease, list[str]]:
    exits: list[str] = []
    # No broker is contacted: librdkafka connects only when polled.
    return Lease(BusSettings(bootstrap_servers="127.0.0.1:1"), "svc", on_lost=lambda: exits.append("exit")), exits


def parts(*numbers: int) -> list[TopicPartition]:
    return [TopicPartition(TOPICS.leases.name, n) for n in numbers]


def test_partition_zero_makes_the_owner_and_keeping_it_across_rebalances_is_quiet() -> None:
    held, exits = lease()
    held._assigned(held._consumer, parts(1))
    assert not held.owner
    held._assigned(held._consumer, parts(0))
    held._assigned(held._consumer, parts(0))  # the next rebalance (eager: everything revoked first) gives it back
    assert held.owner and exits == []


def test_an_owner_given_away_or_dropped_exits() -> None:
    given, exits = lease()
    given._assigned(given._consumer, parts(0))
    given._assigned(given._consumer, parts())
    assert exits == ["exit"] and not given.owner
    dropped, exits = lease()
    dropped._assigned(dropped._consumer, parts(0))
    dropped._dropped(dropped._consumer, parts(0))
    assert exits == ["exit"]


def test_a_standby_dropped_from_the_group_does_not_exit() -> None:
    standby, exits = lease()
    standby._dropped(standby._consumer, parts())
    assert exits == []


class RecordedHandover:
    """Stands in for the service's side of a handover (services.common.shards.Handover)."""

    def __init__(self, *, pause_fails: bool = False) -> None:
        self.calls: list[object] = []
        self.pause_fails = pause_fails

    def pause(self) -> None:
        self.calls.append("pause")
        if self.pause_fails:
            raise TimeoutError("still reconciling")

    def assign(self, shards: frozenset[int]) -> None:
        self.calls.append(sorted(shards))


def sharded(shards: int = 4, *, pause_fails: bool = False) -> tuple[Lease, RecordedHandover, list[str]]:
    exits: list[str] = []
    held = Lease(BusSettings(bootstrap_servers="127.0.0.1:1"), "svc", shards=shards,
                 on_lost=lambda: exits.append("exit"))
    handover = RecordedHandover(pause_fails=pause_fails)
    return held, handover, exits


def test_a_sharded_lease_hands_every_rebalance_to_the_service_pausing_before_it_changes_hands() -> None:
    held, handover, exits = sharded()
    held._assigned(held._consumer, parts(0, 1, 2, 3))
    assert held.attach(handover) == {0, 1, 2, 3}  # type: ignore[arg-type]
    held._revoked(held._consumer, parts(0, 1, 2, 3))
    held._assigned(held._consumer, parts(0, 1))  # an instance joined and took the upper half
    held._revoked(held._consumer, parts(0, 1))
    held._assigned(held._consumer, parts(0, 1, 2, 3))  # and left again
    assert handover.calls == ["pause", [0, 1], "pause", [0, 1, 2, 3]]
    assert held.owned == {0, 1, 2, 3} and exits == []


def test_a_sharded_instance_left_without_shards_or_unable_to_pause_exits() -> None:
    emptied, handover, exits = sharded()
    emptied._assigned(emptied._consumer, parts(2, 3))
    emptied.attach(handover)  # type: ignore[arg-type]
    emptied._revoked(emptied._consumer, parts(2, 3))
    emptied._assigned(emptied._consumer, parts())
    assert exits == ["exit"] and handover.calls == ["pause"] and not emptied.owner
    stuck, handover, exits = sharded(pause_fails=True)
    stuck._assigned(stuck._consumer, parts(0))
    stuck.attach(handover)  # type: ignore[arg-type]
    stuck._revoked(stuck._consumer, parts(0))
    assert exits == ["exit"], "a service that may still act on a shard must not let it go to another instance"


def test_lease_partitions_beyond_the_shards_count_for_nothing() -> None:
    single, exits = lease()
    # A bus with 4 partitions; a single service's lease is partition 0.
    single._assigned(single._consumer, parts(1, 2, 3))
    assert not single.owner
    held, _, _ = sharded(shards=2)
    held._assigned(held._consumer, parts(1, 2, 3))
    assert held.owned == {1}


def test_a_lost_lease_starts_the_same_command_over_in_the_same_process(tmp_path) -> None:  # noqa: ANN001
    """No supervisor needed and no crash-loop backoff: the pid stays, the memory does not."""
    import subprocess
    import sys
    import textwrap

    script = tmp_path / "service.py"
    script.write_text(textwrap.dedent("""
        import os, sys
        from services.common.lease import restart_as_standby
        print(os.getpid(), os.environ.get("RESTARTED", "first"), sys.argv[1:], flush=True)
        if "RESTARTED" not in os.environ:
            os.environ["RESTARTED"] = "again"
            restart_as_standby()
    """))
    result = subprocess.run([sys.executable, str(script), "run", "svc"], capture_output=True, text=True, timeout=WAIT_S)
    first, again = result.stdout.split("\n")[:2]
    assert result.returncode == 0, result.stderr
    assert first.split()[0] == again.split()[0]  # the same pid
    assert first.split()[1] == "first" and again.split()[1] == "again"
    assert first.split(maxsplit=2)[2] == again.split(maxsplit=2)[2] == "['run', 'svc']"


def standing_by(held: Lease) -> tuple[threading.Thread, threading.Event]:
    stop = threading.Event()
    thread = threading.Thread(target=held._stand_by, args=(stop,), daemon=True)
    thread.start()
    return thread, stop


def test_a_standby_whose_client_never_joins_starts_a_fresh_one_and_ignores_the_old(monkeypatch) -> None:  # noqa: ANN001
    """Seen once: a service's librdkafka consumer that never joined (no coordinator logged its JoinGroup), its service
    standing by for good. Here the client cannot join (its broker does not answer), so each deadline brings a fresh
    client."""
    monkeypatch.setattr(lease_module, "JOIN_DEADLINE_S", 0.2)
    held, exits = lease()
    first = held._consumer
    with capture_logs() as logs:
        thread, stop = standing_by(held)
        try:
            until("a fresh client", lambda: True if held._consumer is not first else None)
        finally:
            stop.set()
            thread.join(timeout=WAIT_S)
    assert not thread.is_alive()
    assert any(entry["event"] == "the lease group not joined; starting a fresh client"
               and entry["group"] == "ballast-svc-owner" for entry in logs), logs
    # What the replaced client is given on its way out is not this instance's.
    held._assigned(first, parts(0))
    assert not held.owner and exits == []
    held._assigned(held._consumer, parts(0))
    assert held.owner


def test_a_standby_that_joined_without_the_lease_keeps_its_client(monkeypatch) -> None:  # noqa: ANN001
    monkeypatch.setattr(lease_module, "JOIN_DEADLINE_S", 0.2)
    held, _ = lease()
    held._assigned(held._consumer, parts())  # joined; another instance owns the service
    first = held._consumer
    polls: list[None] = []
    polling = held.poll
    held.poll = lambda: polls.append(polling())  # type: ignore[method-assign]
    thread, stop = standing_by(held)
    try:
        # Three polls of 0.5 s each: well past the deadline, which a joined standby waits out however long it takes.
        until("three polls", lambda: True if len(polls) >= 3 else None)
    finally:
        stop.set()
        thread.join(timeout=WAIT_S)
    assert held._consumer is first and not held.owner
