"""The bus port's policy as a service starts: a refusal asking again cannot change stops it with the broker's
reason; anything else is waited out, with backoff (services/common/bus_topics.py)."""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaError, KafkaException

from services.common import bus_topics
from services.common.bus_topics import BusRefused, permanent, wait_for_bus
from services.common.settings import BusSettings

BUS = BusSettings(bootstrap_servers="kafka-0:9092")


def test_authorization_policy_and_config_refusals_are_permanent_an_unreached_or_small_cluster_is_not() -> None:
    for code in (KafkaError.TOPIC_AUTHORIZATION_FAILED, KafkaError.CLUSTER_AUTHORIZATION_FAILED,
                 KafkaError.POLICY_VIOLATION, KafkaError.INVALID_CONFIG):
        assert permanent(KafkaError(code))
    # Fewer brokers than the replication factor: a cluster still starting, one broker at a time.
    # Credentials refused: a password file is read again at each try, a user may be made after the service starts.
    for code in (KafkaError._TRANSPORT, KafkaError._TIMED_OUT, KafkaError.INVALID_REPLICATION_FACTOR,
                 KafkaError.REQUEST_TIMED_OUT, KafkaError.NOT_CONTROLLER, KafkaError.SASL_AUTHENTICATION_FAILED,
                 KafkaError._AUTHENTICATION):
        assert not permanent(KafkaError(code))


def test_the_bus_is_waited_for_with_a_growing_pause_until_it_answers(monkeypatch: pytest.MonkeyPatch) -> None:
    answers = [KafkaError._TRANSPORT] * 6 + [None]

    def ensure(settings: BusSettings, topics: object, timeout_s: float) -> None:
        code = answers.pop(0)
        if code is not None:
            raise KafkaException(KafkaError(code))

    monkeypatch.setattr(bus_topics, "ensure_topics", ensure)
    slept: list[float] = []
    wait_for_bus(BUS, sleep=slept.append)
    assert slept == [1, 2, 4, 8, 15, 15] and answers == []


def test_a_permanent_refusal_stops_the_wait_with_the_brokers_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    def ensure(settings: BusSettings, topics: object, timeout_s: float) -> None:
        raise KafkaException(KafkaError(KafkaError.TOPIC_AUTHORIZATION_FAILED, "not authorized to create topics"))

    monkeypatch.setattr(bus_topics, "ensure_topics", ensure)
    with pytest.raises(BusRefused, match="kafka-0:9092 refused Ballast's topics: not authorized to create topics"):
        wait_for_bus(BUS, sleep=lambda s: pytest.fail("a permanent refusal is not waited out"))


def test_refused_credentials_are_an_error_in_the_log_waited_out_at_the_same_pace(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from services.common.busio import ClientRefused

    answers: list[str | None] = ["refused"] * 3 + [None]

    def ensure(settings: BusSettings, topics: object, timeout_s: float) -> None:
        if answers.pop(0):
            raise ClientRefused("the bus refused this client as 'ballast' (SASL_SSL): SASL authentication error")

    logged: list[tuple[str, dict]] = []
    monkeypatch.setattr(bus_topics, "ensure_topics", ensure)
    monkeypatch.setattr(bus_topics.log, "error", lambda event, **fields: logged.append((event, fields)))
    slept: list[float] = []
    wait_for_bus(BUS, sleep=slept.append)
    assert slept == [1, 2, 4] and answers == []
    assert [event for event, _ in logged] == ["the bus refused Ballast's credentials"] * 3
    assert "SASL authentication error" in logged[0][1]["reason"]


def test_init_bus_makes_each_tenants_three_topics_where_a_tenants_file_names_tenants(tmp_path) -> None:
    from events import TOPICS
    from services.common.bus_topics import deployment_topics
    from services.domain.tenants import TenantsError

    assert deployment_topics(None) == TOPICS.all()
    path = tmp_path / "tenants.yaml"
    path.write_text("tenants: [{name: payments, principal: 'User:payments', topics: {prefixes: [payments.]}}]\n")
    extra = [t.name for t in deployment_topics(path)[len(TOPICS.all()):]]
    assert extra == ["ballast.tenant.payments.topic.specs", "ballast.tenant.payments.topic.status",
                     "ballast.tenant.payments.dead-letters"]
    path.write_text("tenants: [{name: payments}]\n")
    with pytest.raises(TenantsError, match="not a tenants file"):
        deployment_topics(path)


def test_a_topics_partitions_are_raised_under_the_same_policy_a_bus_still_starting_waited_out(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A fresh clone's run: the compose stack's topic reconciler exited on "Failed to get metadata: Local: Timed out"
    while raising its lease topic's partitions, a moment after the bus had first answered."""
    from events import TOPICS

    answers = [KafkaError._TIMED_OUT, KafkaError._TRANSPORT, None]
    raised: list[tuple[str, int]] = []

    def partitions(settings: BusSettings, topic, count: int, timeout_s: float) -> None:
        code = answers.pop(0)
        if code is not None:
            raise KafkaException(KafkaError(code, "Failed to get metadata: Local: Timed out"))
        raised.append((topic.name, count))

    monkeypatch.setattr(bus_topics, "ensure_topics", lambda settings, topics, timeout_s: None)
    monkeypatch.setattr(bus_topics, "ensure_partitions", partitions)
    slept: list[float] = []
    wait_for_bus(BUS, [TOPICS.leases], partitions=4, sleep=slept.append)
    assert raised == [("ballast.leases", 4)] and slept == [1, 2]


def test_partitions_the_bus_refuses_to_add_stop_the_wait_with_its_reason_and_what_to_do(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from events import TOPICS

    class Admin:
        def list_topics(self, name: str, timeout: float) -> object:
            return type("Metadata", (), {"topics": {name: type("Topic", (), {"partitions": {0: None}, "error": None})}})

        def create_partitions(self, wanted: list, request_timeout: float) -> dict:
            class Refused:
                def result(self) -> None:
                    raise KafkaException(KafkaError(KafkaError.CLUSTER_AUTHORIZATION_FAILED, "not authorized"))
            return {wanted[0].topic: Refused()}

    monkeypatch.setattr(bus_topics, "ensure_topics", lambda settings, topics, timeout_s: None)
    monkeypatch.setattr(bus_topics, "_admin", lambda settings: (Admin(), None))
    with pytest.raises(BusRefused, match="ballast.leases has 1 partition.*not authorized.*kafka-topics.sh --alter"):
        wait_for_bus(BUS, [TOPICS.leases], partitions=4, sleep=lambda s: pytest.fail("a refusal is not waited out"))
