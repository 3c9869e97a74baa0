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


def test_a_client_gives_up_on_a_silent_broker_well_within_its_answer_timeout() -> None:
    """A restarting broker accepts connections before it answers; librdkafka's own 30 s setup timeout kept a fresh
    client on it past the 10 s answer timeout while the other brokers were up (test_services, once)."""
    from confluent_kafka import Producer

    from services.common.settings import BusSettings

    config = BusSettings(answer_timeout_s=10).confluent_config()
    assert config["socket.connection.setup.timeout.ms"] == "3333"
    assert BusSettings(answer_timeout_s=0.5).confluent_config()["socket.connection.setup.timeout.ms"] == "1000"
    Producer(config).flush(0)  # librdkafka accepts it
