"""Events are published to a topic that carries them, keyed by their own key (the one helper every producer of
events outside the services uses; tests/integration exercises it against the local broker)."""

from __future__ import annotations

import pytest

from events import TOPICS, RebalanceAction, TopicSpec, decode
from services.common import busio
from services.common.settings import BusSettings


def test_an_event_the_topic_does_not_carry_is_refused_before_anything_is_sent(monkeypatch) -> None:
    sent: list = []
    monkeypatch.setattr(busio, "produce", lambda bus, records, **kw: sent.extend(records) or len(records))
    bus = BusSettings(bootstrap_servers="127.0.0.1:1")
    with pytest.raises(TypeError, match="ballast.topic.specs carries TopicSpec, TopicSpecDeleted, not RebalanceAction"):
        busio.publish(bus, TOPICS.specs, [TopicSpec(name="a", partitions=1, replicas=1),
                                          RebalanceAction(name="r", action="approve")])
    assert sent == []
    assert busio.publish(bus, TOPICS.specs, [TopicSpec(name="orders", partitions=3, replicas=2)]) == 1
    ((topic, key, value, headers),) = sent
    assert (topic, key, headers) == ("ballast.topic.specs", b"orders", None)
    assert decode(value, topic=TOPICS.specs).event == TopicSpec(name="orders", partitions=3, replicas=2)
