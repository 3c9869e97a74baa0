"""The bus contract against hostile input: strict numbers and configs, dead letters that always fit, events split
to fit, keys that must agree, and the cluster-admin adapter on answers that are not JSON."""

from __future__ import annotations

import base64
import hashlib
import json

import httpx
import pytest

from events import DeadLetter, InvalidEvent, PlacedReplica, PlacementResponse, ReplicasPlaced, TopicSpec, decode, encode
from events.limits import MAX_RECORD_BYTES
from events.topics import TOPICS, reserved_topic
from services.adapters.admin import AdminError
from services.adapters.admin.simulator import SimulatorClusterAdmin
from services.common.busio import check_key


def envelope(payload: dict, schema: str = "ballast.TopicSpec", version: object = 1) -> bytes:
    return json.dumps({"schema": schema, "version": version, "payload": payload}).encode()


@pytest.mark.parametrize(("field", "value"), [
    ("replicas", True), ("replicas", "3"), ("partitions", 1.0), ("partitions", False), ("loadAware", 1),
    ("adopt", "yes"), ("minRequiredReplicas", True),
])
def test_numbers_and_flags_are_not_coerced(field: str, value: object) -> None:
    payload = {"name": "t", "partitions": 3, "replicas": 3, field: value}
    with pytest.raises(InvalidEvent) as refused:
        decode(envelope(payload))
    assert field in refused.value.reason


@pytest.mark.parametrize(("value", "said"), [
    (None, "not null"), ({"compact": True}, "not an object"), (True, 'not a boolean (write "true" or "false")'),
    (["a"], "not a list"),
])
def test_config_values_are_strings_or_numbers(value: object, said: str) -> None:
    with pytest.raises(InvalidEvent) as refused:
        decode(envelope({"name": "t", "partitions": 1, "replicas": 1, "config": {"cleanup.policy": value}}))
    assert said in refused.value.reason and "cleanup.policy" in refused.value.reason


def test_numbers_in_config_render_as_kafka_takes_them() -> None:
    spec = decode(envelope({"name": "t", "partitions": 1, "replicas": 1,
                            "config": {"retention.ms": 604800000, "min.cleanable.dirty.ratio": 0.5}})).event
    assert isinstance(spec, TopicSpec)
    assert spec.config == {"retention.ms": "604800000", "min.cleanable.dirty.ratio": "0.5"}


def test_envelope_version_must_be_a_number() -> None:
    with pytest.raises(InvalidEvent, match="version"):
        decode(envelope({"name": "t", "partitions": 1, "replicas": 1}, version=True))


def test_a_dead_letter_of_a_huge_value_fits_with_its_size_and_hash() -> None:
    value = b'{"schema": "x", "payload": "' + b"a" * 3_000_000 + b'"}'
    letter = DeadLetter.of_record(source_topic="s", key=b"k", value=value, reason="not JSON: " + "x" * 100_000,
                                  service="svc", partition=0, offset=7)
    encoded = encode(letter)
    assert len(encoded) < MAX_RECORD_BYTES
    assert letter.value_truncated and letter.value_size == len(value)
    assert letter.value_sha256 == hashlib.sha256(value).hexdigest()
    assert letter.value is not None and value.decode().startswith(letter.value)
    assert len(letter.reason) < 2_100 and "more characters" in letter.reason


def test_a_dead_letter_keeps_binary_keys_and_values_as_base64() -> None:
    letter = DeadLetter.of_record(source_topic="s", key=b"\xff\xfe", value=b"\x00\xff", reason="r", service="svc")
    assert (letter.key_encoding, letter.value_encoding) == ("base64", "base64")
    assert base64.b64decode(letter.record_key or "") == b"\xff\xfe"
    assert not letter.value_truncated


def test_a_record_keyed_otherwise_than_its_event_is_refused() -> None:
    spec = TopicSpec(name="b", partitions=1, replicas=1)
    check_key(b"b", spec)
    for key, said in ((b"a", "key 'a'"), (None, "no key"), (b"\xff", "not UTF-8")):
        with pytest.raises(InvalidEvent, match="the event's key is 'b'") as refused:
            check_key(key, spec)
        assert said in refused.value.reason


def test_internal_and_bus_topics_are_never_managed() -> None:
    assert reserved_topic("__consumer_offsets") and reserved_topic(TOPICS.status.name)
    assert reserved_topic("orders") is None


def test_large_placements_are_split_into_records_that_fit() -> None:
    placed = ReplicasPlaced(topic="big", reason="create", placed_at="2026-11-23T00:00:00Z", placed=[
        PlacedReplica(partition=p, broker=1000 + r, rack="/datacentre-1/rack-12", log_dir="/var/lib/kafka/data-1")
        for p in range(100_000) for r in range(3)])
    parts = placed.split()
    assert len(parts) > 1 and all(len(encode(part)) < MAX_RECORD_BYTES for part in parts)
    assert [r for part in parts for r in part.placed] == placed.placed


def test_large_placement_answers_are_split_and_numbered() -> None:
    answer = PlacementResponse(request_id="r", topic="t", placer="striped", first_partition=10,
                               assignment=[list(range(100, 132))] * 100_000)
    parts = answer.split()
    assert all(len(encode(part)) < MAX_RECORD_BYTES for part in parts)
    assert [p.part for p in parts] == list(range(1, len(parts) + 1)) and {p.parts for p in parts} == {len(parts)}
    assert [p.first_partition for p in parts[:2]] == [10, 10 + len(parts[0].assignment or [])]
    assert sum(len(p.assignment or []) for p in parts) == 100_000


@pytest.mark.parametrize(("status", "body"), [(413, "<html>413 Request Entity Too Large</html>"), (502, ""),
                                              (200, "not json")])
async def test_admin_answers_that_are_not_json_are_admin_errors(status: int, body: str) -> None:
    transport = httpx.MockTransport(lambda request: httpx.Response(status, text=body))
    admin = SimulatorClusterAdmin("http://127.0.0.1:1", transport=transport)
    with pytest.raises(AdminError) as failed:
        await admin.describe_topics(["t"])
    assert (str(status) in str(failed.value)) or "not JSON" in str(failed.value)
    await admin.aclose()
