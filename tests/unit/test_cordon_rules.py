"""The rules of cordons: what `ballast brokers cordon|uncordon` makes cordoned.log.dirs (services/domain/cordons.py),
and a replication-factor increase only cordoned brokers could give, held by the topic reconciler."""

from __future__ import annotations

import pytest

from services.domain.cordons import cordon_value, cordoned_dirs

DIRS = ["/data-0", "/data-1", "/data-2"]


def test_a_whole_broker_is_star_so_a_directory_added_later_is_cordoned_too() -> None:
    assert cordon_value(None, DIRS, cordon=True) == "*"
    assert cordon_value("/data-0", DIRS, ["/data-1", "/data-2"], cordon=True) == "*"
    assert cordoned_dirs("*", DIRS) == frozenset(DIRS)


def test_directories_are_added_and_taken_away_one_by_one() -> None:
    assert cordon_value(None, DIRS, ["/data-1"], cordon=True) == "/data-1"
    assert cordon_value("/data-1", DIRS, ["/data-0"], cordon=True) == "/data-0,/data-1"
    assert cordon_value("*", DIRS, ["/data-2"], cordon=False) == "/data-0,/data-1"
    assert cordon_value("/data-1", DIRS, ["/data-1"], cordon=False) is None  # nothing left: the config deleted
    assert cordon_value("/data-1", DIRS, cordon=False) is None
    assert cordon_value(None, DIRS, ["/data-1"], cordon=False) is None


def test_a_directory_the_broker_does_not_have_is_refused() -> None:
    with pytest.raises(ValueError, match="not a log directory of the broker: /nowhere"):
        cordon_value(None, DIRS, ["/nowhere"], cordon=True)


def test_an_rf_increase_only_cordoned_brokers_could_give_is_held_and_a_decrease_is_not() -> None:
    from events import TopicSpec
    from services.adapters.admin import PartitionInfo, TopicDescription
    from services.topic_reconciler import logic

    at_two = TopicDescription(name="t", partitions=(PartitionInfo(id=0, replicas=(1, 2)),))
    held = logic.plan(TopicSpec(name="t", partitions=1, replicas=3), at_two, None, alive_brokers=4,
                      cordoned_brokers=2)
    assert held.actions == [] and [(w.type, w.reason) for w in held.warnings] == [
        ("ReplicasChangeBlocked", "BrokersCordoned")]
    assert "2 of the 4 alive broker(s) have all their log directories cordoned" in (held.warnings[0].message or "")
    sent = logic.plan(TopicSpec(name="t", partitions=1, replicas=3), at_two, None, alive_brokers=4,
                      cordoned_brokers=1)
    assert [type(a).__name__ for a in sent.actions] == ["RequestReplicasChange"]
    at_four = TopicDescription(name="t", partitions=(PartitionInfo(id=0, replicas=(1, 2, 3, 4)),))
    lowered = logic.plan(TopicSpec(name="t", partitions=1, replicas=3), at_four, None, alive_brokers=4,
                         cordoned_brokers=3)
    assert [type(a).__name__ for a in lowered.actions] == ["RequestReplicasChange"]


def test_placeholders_wait_while_only_a_cordoned_broker_could_fill_them() -> None:
    """Three brokers alive but one fully cordoned: an RF 3 topic with placeholders waits (a fresh-clone run saw
    Cruise Control fill one on the cordoned broker when the reconciler counted it); a third broker that takes
    replicas, and the RF change fills them."""
    from events import PlaceholderRecord, TopicSpec
    from services.adapters.admin import PartitionInfo, TopicDescription
    from services.topic_reconciler import logic

    record = PlaceholderRecord(topic="t", replication_factor=3, assignment=[[1, 2, -1]])
    under = TopicDescription(name="t", partitions=(PartitionInfo(id=0, replicas=(1, 2)),))
    spec = TopicSpec(name="t", partitions=1, replicas=3)
    assert logic.plan(spec, under, None, record, alive_brokers=3, cordoned_brokers=1).actions == []
    assert [type(a).__name__ for a in logic.plan(spec, under, None, record, alive_brokers=4,
                                                 cordoned_brokers=1).actions] == ["RequestReplicasChange"]
