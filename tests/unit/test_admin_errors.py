"""The cluster-admin port's one error policy: every error class says once whether it is temporary, and both adapters
sort what their cluster answers into those classes (the Kafka one by Kafka's own ``retriable``, the simulator's by
HTTP status)."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import httpx
import pytest
from kafka import TopicPartition
from kafka import errors as kafka_errors

import services.adapters.admin.port as port
from services.adapters.admin import (
    AdminError,
    ClusterUnavailable,
    OperationRefused,
    TopicAlreadyExists,
    UnknownTopic,
    UnreadableAnswer,
)
import services.adapters.admin.kafka as kafka_adapter
from services.adapters.admin.kafka import KafkaClusterAdmin
from services.adapters.admin.simulator import SimulatorClusterAdmin


def test_every_error_says_once_whether_it_is_temporary() -> None:
    def concrete(cls: type) -> list[type]:
        return [c for sub in cls.__subclasses__() for c in [sub, *concrete(sub)]]

    kinds = concrete(port.AdminError)
    assert "temporary" not in vars(port.AdminError), "the base decides nothing"
    assert {k.__name__ for k in kinds} >= {"ClusterUnavailable", "OperationRefused", "UnknownTopic",
                                           "TopicAlreadyExists", "Unsupported", "UnreadableAnswer"}
    assert not [k.__name__ for k in kinds if "temporary" not in vars(k)], "each class decides, none inherits it"
    assert [k.__name__ for k in kinds if k.temporary] == ["ClusterUnavailable"]
    permanent = [k for k in kinds if not k.temporary and k is not port.OperationRefused]
    assert all(issubclass(k, port.OperationRefused) for k in permanent)


# -- the Kafka adapter ---------------------------------------------------------------------------------------------

class Client:
    """A KafkaAdminClient whose every call fails as told, or answers ``answer``."""

    def __init__(self, error: Exception | None = None, answer: Any = None) -> None:
        self.error, self.answer = error, answer
        self.closed = False

    def __getattr__(self, name: str) -> Any:
        def call(*args: Any, **kwargs: Any) -> Any:
            if self.closed:
                raise RuntimeError("NetworkSelector closed!")  # as kafka-python's closed client does
            if self.error is not None:
                raise self.error
            return self.answer
        return call

    def close(self) -> None:
        self.closed = True


def kafka_admin(client: Client) -> KafkaClusterAdmin:
    admin = KafkaClusterAdmin({"bootstrap_servers": "127.0.0.1:1"}, timeout_s=1)
    admin._client = client  # type: ignore[assignment]
    return admin


@pytest.mark.parametrize(("error", "kind"), [
    # Kafka's retriable errors, and what never reached the cluster.
    (kafka_errors.NotControllerError(), ClusterUnavailable),
    (kafka_errors.LeaderNotAvailableError(), ClusterUnavailable),
    (kafka_errors.RequestTimedOutError(), ClusterUnavailable),
    (kafka_errors.NotEnoughReplicasError(), ClusterUnavailable),
    (kafka_errors.KafkaConnectionError("refused"), ClusterUnavailable),
    (kafka_errors.KafkaTimeoutError("no answer"), ClusterUnavailable),
    (kafka_errors.NodeNotReadyError(), ClusterUnavailable),
    (ConnectionResetError("reset by peer"), ClusterUnavailable),
    # Not retriable to Kafka, but only the cluster changing under the request (UnknownBrokerIdError: below).
    (kafka_errors.ReassignmentInProgressError(), ClusterUnavailable),
    # The cluster refusing the operation itself.
    (kafka_errors.InvalidReplicationFactorError("Replication factor: 4 larger than available brokers: 3."),
     OperationRefused),
    (kafka_errors.InvalidPartitionsError("Topic currently has 3 partitions, 2 would not be an increase."),
     OperationRefused),
    (kafka_errors.PolicyViolationError(), OperationRefused),
    (kafka_errors.InvalidConfigurationError(), OperationRefused),
    (kafka_errors.TopicAuthorizationFailedError(), OperationRefused),
    (kafka_errors.ClusterAuthorizationFailedError(), OperationRefused),
    (kafka_errors.TopicAlreadyExistsError(), TopicAlreadyExists),
    (kafka_errors.UnknownTopicOrPartitionError(), UnknownTopic),
    (ValueError("the client refused the request before sending it"), OperationRefused),
])
async def test_kafka_failures_take_the_kind_kafka_gives_them(error: Exception, kind: type[AdminError]) -> None:
    with pytest.raises(AdminError) as raised:
        await kafka_admin(Client(error)).create_topic("t", 1, 4)
    assert type(raised.value) is kind
    assert raised.value.temporary is kind.temporary


async def test_a_lost_connection_is_temporary_and_the_next_call_starts_afresh() -> None:
    client = Client(kafka_errors.KafkaConnectionError("refused"))
    admin = kafka_admin(client)
    with pytest.raises(ClusterUnavailable):
        await admin.delete_topic("t")
    assert client.closed and admin._client is None


class Clients:
    """The KafkaAdminClients the adapter makes, one after the other (it makes a fresh one after a failure)."""

    def __init__(self, *clients: Client) -> None:
        self.clients = list(clients)
        self.made = 0

    def __call__(self, **config: Any) -> Client:
        self.made += 1
        if len(self.clients) > 1:
            return self.clients.pop(0)
        if self.clients[0].closed:  # the last one again, as a new client
            last = self.clients[0]
            self.clients[0] = Client(last.error, last.answer)
        return self.clients[0]


async def test_a_change_to_a_broker_the_clients_metadata_does_not_know_yet_is_sent_with_fresh_metadata(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A broker just added, which the client's metadata (read before, or from a broker that had not learnt of it) does
    not name: the client refuses the call before sending it, so asking again is safe for a change too."""
    stale, fresh = Client(kafka_errors.UnknownBrokerIdError(5)), Client(answer={})
    clients = Clients(stale, fresh)
    monkeypatch.setattr(kafka_adapter, "KafkaAdminClient", clients)
    admin = KafkaClusterAdmin({"bootstrap_servers": "127.0.0.1:1"}, timeout_s=5)
    await admin.alter_replica_log_dirs("t", {(0, 5): "/data/a"})
    assert stale.closed and clients.made == 2


class BusyOnce(Client):
    """A client whose connection is paused for the first call: as many requests in flight as it takes."""

    def __getattr__(self, name: str) -> Any:
        def call(*args: Any, **kwargs: Any) -> Any:
            if self.error is not None:
                error, self.error = self.error, None
                raise error
            return self.answer
        return call


async def test_a_change_the_client_holds_back_while_its_connection_is_busy_is_asked_again_of_the_same_client() -> None:
    """kafka-python refuses to send on a connection with its most requests in flight ("Node paused:
    {'max_in_flight'}", NodeNotReadyError): nothing reached the cluster, so a change is safe to ask again; the
    client, busy with other calls, is kept."""
    busy = BusyOnce(kafka_errors.NodeNotReadyError("Node paused: {'max_in_flight'}"), answer={})
    admin = kafka_admin(busy)
    await admin.alter_replica_log_dirs("t", {(0, 1): "/data/a"})
    assert busy.error is None and not busy.closed and admin._client is busy


class HungClient(Client):
    """A KafkaAdminClient whose calls never return until it is closed, as kafka-python's blocking call waits on its
    I/O thread with no deadline (a fresh clone's run: a DescribeLogDirs hung until the test's 300 s ran out)."""

    def __init__(self) -> None:
        super().__init__()
        self.released = threading.Event()

    def __getattr__(self, name: str) -> Any:
        def call(*args: Any, **kwargs: Any) -> Any:
            self.released.wait()
            raise kafka_errors.KafkaConnectionError("Event loop stopped")  # as closing fails its pending waiters
        return call

    def close(self) -> None:
        super().close()
        self.released.set()


async def test_a_hung_call_is_given_up_its_client_closed_and_a_read_asked_again_of_a_fresh_client(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kafka_adapter, "CLIENT_OWN_WAIT_S", 0.0)
    hung = HungClient()
    configs = {"broker": {"1": {"x": {"value": "1", "config_source": "DYNAMIC_BROKER_CONFIG"}}}}
    fresh = Client(answer=configs)
    clients = Clients(hung, fresh)
    monkeypatch.setattr(kafka_adapter, "KafkaAdminClient", clients)
    admin = KafkaClusterAdmin({"bootstrap_servers": "127.0.0.1:1"}, timeout_s=0.1)
    assert await admin.broker_configs(1) == {"x": "1"}
    assert clients.made == 2
    assert hung.released.wait(5) and hung.closed
    await asyncio.sleep(0.3)  # the given-up call's thread has failed by now, and closed only its own client
    assert not fresh.closed
    assert await admin.broker_configs(1) == {"x": "1"} and clients.made == 2


async def test_a_call_whose_client_was_closed_under_it_is_temporary() -> None:
    """A call that took the client just before another call gave the client up as hung meets kafka-python's
    "NetworkSelector closed!": the cluster did not refuse anything."""
    given_up, fresh = Client(), Client()
    admin = kafka_admin(given_up)

    def closed_under_it(client: Any) -> Any:
        admin._client = fresh  # another call gave the client up and made a fresh one
        given_up.closed = True
        return client.describe_cluster()

    with pytest.raises(ClusterUnavailable, match="NetworkSelector closed"):
        await admin._run(closed_under_it, read=False)
    assert admin._client is fresh and not fresh.closed


async def test_a_hung_change_is_temporary_not_asked_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """A change may have been applied before it hung: the caller decides, as for any temporary failure of a change."""
    monkeypatch.setattr(kafka_adapter, "CLIENT_OWN_WAIT_S", 0.0)
    hung = HungClient()
    clients = Clients(hung, Client(answer={}))
    monkeypatch.setattr(kafka_adapter, "KafkaAdminClient", clients)
    admin = KafkaClusterAdmin({"bootstrap_servers": "127.0.0.1:1"}, timeout_s=0.1)
    with pytest.raises(ClusterUnavailable, match="no answer within"):
        await admin.reassign_partitions("t", {0: [1]})
    assert clients.made == 1
    hung.released.wait(5)
    assert hung.closed


async def test_a_broker_the_clients_metadata_never_knows_is_temporary_once_the_calls_timeout_has_passed(
        monkeypatch: pytest.MonkeyPatch) -> None:
    clients = Clients(Client(kafka_errors.UnknownBrokerIdError(9)))
    monkeypatch.setattr(kafka_adapter, "KafkaAdminClient", clients)
    admin = KafkaClusterAdmin({"bootstrap_servers": "127.0.0.1:1"}, timeout_s=1)
    with pytest.raises(ClusterUnavailable, match="UnknownBrokerIdError"):
        await admin.alter_broker_configs(9, {"leader.replication.throttled.rate": "100"})
    assert clients.made > 1


async def test_errors_kafka_answers_per_item_take_their_kind() -> None:
    tp = TopicPartition("t", 0)
    with pytest.raises(ClusterUnavailable):
        await kafka_admin(Client(answer={tp: kafka_errors.NotControllerError})).reassign_partitions("t", {0: [1]})
    with pytest.raises(OperationRefused, match="InvalidReplicationAssignment"):
        await kafka_admin(Client(answer={tp: kafka_errors.InvalidReplicationAssignmentError})).reassign_partitions(
            "t", {0: [1]})
    with pytest.raises(UnreadableAnswer, match="reassign"):
        await kafka_admin(Client(answer={tp: 77})).reassign_partitions("t", {0: [1]})


@pytest.mark.parametrize(("result", "kind"), [
    ("InvalidConfigurationError: Unknown topic config name: no.such.key", OperationRefused),
    ("PolicyViolationError: retention.ms is above the limit", OperationRefused),
    ("TopicAuthorizationFailedError: TopicAuthorizationFailedError", OperationRefused),
    ("NotControllerError: this is not the controller", ClusterUnavailable),
    ("RequestTimedOutError: RequestTimedOutError", ClusterUnavailable),
    ("something no Kafka error is called", UnreadableAnswer),
])
async def test_config_changes_kafka_refuses_by_name_take_that_names_kind(result: str, kind: type[AdminError]) -> None:
    admin = kafka_admin(Client(answer={"topic": {"t": result}}))
    with pytest.raises(AdminError) as raised:
        await admin.alter_configs("t", {"retention.ms": "1"})
    assert type(raised.value) is kind
    assert str(raised.value) == f"altering configs of topic t failed: {result}"


# -- the simulator's adapter ---------------------------------------------------------------------------------------

def simulator_admin(answer: Any) -> SimulatorClusterAdmin:
    def handler(request: httpx.Request) -> httpx.Response:
        if isinstance(answer, Exception):
            raise answer
        return answer

    return SimulatorClusterAdmin("http://127.0.0.1:1", transport=httpx.MockTransport(handler))


@pytest.mark.parametrize(("answer", "kind"), [
    (httpx.ConnectError("refused"), ClusterUnavailable),
    (httpx.ReadTimeout("no answer"), ClusterUnavailable),
    (httpx.RemoteProtocolError("cut mid-answer"), ClusterUnavailable),
    (httpx.Response(500, json={"error": "boom"}), ClusterUnavailable),
    (httpx.Response(502, text="<html>Bad Gateway</html>"), ClusterUnavailable),
    (httpx.Response(503, text=""), ClusterUnavailable),
    (httpx.Response(429, text="slow down"), ClusterUnavailable),
    (httpx.Response(400, json={"error": "Replication factor: 4 larger than available brokers: 3."}),
     OperationRefused),
    (httpx.Response(403, text="forbidden"), OperationRefused),
    (httpx.Response(413, text="<html>413 Request Entity Too Large</html>"), OperationRefused),
    (httpx.Response(404, json={"error": "Topic t does not exist"}), UnknownTopic),
    (httpx.Response(409, json={"error": "Topic 't' already exists."}), TopicAlreadyExists),
    (httpx.Response(201, text="<html>not JSON</html>"), UnreadableAnswer),
])
async def test_simulator_answers_take_the_kind_their_status_gives_them(answer: Any, kind: type[AdminError]) -> None:
    admin = simulator_admin(answer)
    with pytest.raises(AdminError) as raised:
        await admin.create_topic("t", 1, 4)
    await admin.aclose()
    assert type(raised.value) is kind
    assert raised.value.temporary is kind.temporary


async def test_a_topic_the_acls_hide_is_a_refusal_not_an_absent_topic() -> None:
    """Kafka answers TOPIC_AUTHORIZATION_FAILED whether the topic exists or not: read as absent, a tenant's diff
    said "create" for another tenant's topic (a walkthrough)."""
    hidden = [{"name": "search.index", "error_code": kafka_errors.TopicAuthorizationFailedError.errno,
               "partitions": []}]
    with pytest.raises(OperationRefused, match="not authorized to describe the topic.s. search.index"):
        await kafka_admin(Client(answer=hidden)).describe_topics(["search.index"])
    absent = [{"name": "nowhere", "error_code": kafka_errors.UnknownTopicOrPartitionError.errno, "partitions": []}]
    assert await kafka_admin(Client(answer=absent)).describe_topics(["nowhere"]) == {"nowhere": None}
