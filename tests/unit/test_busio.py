"""The bus helpers every producer and reader outside the services uses: events are published to a topic that carries
them, keyed by their own key; a bounded read reads to the end. tests/integration exercises them against the local
broker; here are the edges a broker will not show on demand."""

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


class SlowFirstFetch:
    """A consumer of one partition holding ``records`` whose first fetch takes ``silent_polls`` empty polls (a loaded
    machine), then whose broker goes quiet for good when ``stalls`` (a partition that cannot be read to its end)."""

    def __init__(self, records: int, silent_polls: int, stalls: bool = False) -> None:
        self.records, self.silent, self.stalls, self.next = records, silent_polls, stalls, 0

    def list_topics(self, topic=None, timeout=None):
        from types import SimpleNamespace

        return SimpleNamespace(topics={"t": SimpleNamespace(error=None, partitions={0: None})})

    def get_watermark_offsets(self, tp, timeout=None):
        return 0, self.records

    def assign(self, partitions) -> None:
        pass

    def poll(self, timeout):
        if self.silent > 0 or self.next >= self.records or (self.stalls and self.next >= self.records // 2):
            self.silent -= 1
            return None
        from types import SimpleNamespace

        offset, self.next = self.next, self.next + 1
        return SimpleNamespace(error=lambda: None, topic=lambda: "t", partition=lambda: 0, offset=lambda: offset,
                               key=lambda: str(offset).encode(), value=lambda: b"v", headers=lambda: None,
                               timestamp=lambda: (0, 0))

    def position(self, partitions):
        from confluent_kafka import TopicPartition

        return [TopicPartition(tp.topic, tp.partition, self.next) for tp in partitions]

    def close(self) -> None:
        pass


def test_a_bounded_read_outlasts_a_slow_first_fetch(monkeypatch) -> None:
    """Stopping after ``idle_s`` without records stopped before the first record when the first fetch took longer:
    a bounded read goes on until the end the topic had when it began."""
    monkeypatch.setattr(busio, "Consumer", lambda config: SlowFirstFetch(records=5, silent_polls=3))
    records = list(busio.consume(BusSettings(bootstrap_servers="127.0.0.1:1"), ["t"], follow=False, idle_s=0.0))
    assert [r.offset for r in records] == [0, 1, 2, 3, 4]


def test_a_bounded_read_that_cannot_reach_the_end_says_so(monkeypatch) -> None:
    monkeypatch.setattr(busio, "Consumer", lambda config: SlowFirstFetch(records=6, silent_polls=0, stalls=True))
    bus = BusSettings(bootstrap_servers="127.0.0.1:1", answer_timeout_s=0.5)
    read = []
    with pytest.raises(busio.BusUnavailable, match=r"t\[0\] not read to the end: no record for 0.5 s"):
        read.extend(r.offset for r in busio.consume(bus, ["t"], follow=False, idle_s=0.0))
    assert read == [0, 1, 2]


class SettlingLeader:
    """A partition whose new leader answers ``error`` to the first ``refusals`` watermark queries."""

    def __init__(self, refusals: int, error: int) -> None:
        self.refusals, self.error, self.asked = refusals, error, 0

    def get_watermark_offsets(self, tp, timeout=None):
        from confluent_kafka import KafkaError, KafkaException

        self.asked += 1
        if self.asked <= self.refusals:
            raise KafkaException(KafkaError(self.error))
        return 3, 10


def test_a_watermark_asked_during_a_leader_change_is_asked_again_until_the_new_leader_answers() -> None:
    """A fresh clone's run failed once: a bounded read met a new leader whose high watermark had not caught up
    (OFFSET_NOT_AVAILABLE) and gave up at once."""
    from confluent_kafka import KafkaError, TopicPartition

    leader = SettlingLeader(refusals=3, error=KafkaError.OFFSET_NOT_AVAILABLE)
    assert busio.watermarks(leader, TopicPartition("t", 0), timeout_s=10) == (3, 10)
    assert leader.asked == 4


@pytest.mark.parametrize("error", ["_TRANSPORT", "_DESTROY_BROKER"])
def test_a_watermark_asked_while_the_connection_to_its_broker_is_down_is_asked_again(error: str) -> None:
    from confluent_kafka import KafkaError, TopicPartition

    leader = SettlingLeader(refusals=2, error=getattr(KafkaError, error))
    assert busio.watermarks(leader, TopicPartition("t", 0), timeout_s=10) == (3, 10)
    assert leader.asked == 3


def test_a_watermark_error_that_will_not_pass_is_raised_at_once() -> None:
    from confluent_kafka import KafkaError, KafkaException, TopicPartition

    leader = SettlingLeader(refusals=1, error=KafkaError.TOPIC_AUTHORIZATION_FAILED)
    with pytest.raises(KafkaException, match="TOPIC_AUTHORIZATION_FAILED"):
        busio.watermarks(leader, TopicPartition("t", 0), timeout_s=10)
    assert leader.asked == 1


def test_a_leader_that_never_settles_is_given_up_on_at_the_deadline() -> None:
    from confluent_kafka import KafkaError, KafkaException, TopicPartition

    leader = SettlingLeader(refusals=10**6, error=KafkaError.NOT_LEADER_FOR_PARTITION)
    with pytest.raises(KafkaException, match="NOT_LEADER"):
        busio.watermarks(leader, TopicPartition("t", 0), timeout_s=0.3)
    assert 1 < leader.asked < 100


def test_a_topic_refused_by_the_acls_is_said_in_one_line_also_when_produce_itself_raises_it(monkeypatch) -> None:
    """librdkafka raises the refusal from produce() once its metadata knows the topic refused (a walkthrough saw the
    generic "cannot use the bus" instead, one time in two), with its own words before the broker's; the line is the
    one a delivery report gives (a fresh clone's run, 2026-12-04, saw "Unable to produce message: " in it)."""
    from confluent_kafka import KafkaError, KafkaException

    class Refusing:
        def produce(self, topic, **kwargs):  # noqa: ANN001, ANN003, ANN201
            raise KafkaException(KafkaError(KafkaError.TOPIC_AUTHORIZATION_FAILED,
                                            "Unable to produce message: Broker: Topic authorization failed"))

        def poll(self, timeout):  # noqa: ANN001, ANN201
            return 0

    bus = BusSettings(bootstrap_servers="127.0.0.1:1", security_protocol="SASL_SSL", sasl_mechanism="SCRAM-SHA-512",
                      sasl_username="payments", sasl_password="secret")
    monkeypatch.setattr(busio, "producer", lambda bus: (Refusing(), None))
    monkeypatch.setattr(busio, "_check_reachable", lambda client, timeout_s, refusal: None)
    with pytest.raises(busio.NotAuthorized) as refused:
        busio.publish(bus, TOPICS.specs, [TopicSpec(name="orders", partitions=3, replicas=2)])
    assert str(refused.value) == ("the bus at 127.0.0.1:1 refused to let 'payments' write ballast.topic.specs: "
                                  "Broker: Topic authorization failed (Kafka's ACLs)")


def test_a_handshake_cut_by_a_starting_broker_is_not_a_refusal_and_a_wrong_password_is() -> None:
    from confluent_kafka import KafkaError

    refusal = busio.Refusal(BusSettings(security_protocol="SASL_SSL", sasl_mechanism="SCRAM-SHA-512",
                                        sasl_username="ballast"))
    refusal(KafkaError(KafkaError._AUTHENTICATION, "sasl_ssl://kafka-1:9092/bootstrap: SASL SCRAM-SHA-512 mechanism "
                       "handshake failed: Local: Broker transport failure: broker's supported mechanisms: (n/a)"))
    assert refusal.reason is None
    refusal(KafkaError(KafkaError._AUTHENTICATION, "SASL authentication error: Authentication failed during "
                       "authentication due to invalid credentials with SASL mechanism SCRAM-SHA-512"))
    assert refusal.reason is not None and "invalid credentials" in refusal.reason
