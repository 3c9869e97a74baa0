import json

import pytest

from events import (
    TOPICS,
    InvalidEvent,
    ReplicasChangeRecord,
    TopicSpec,
    TopicStatus,
    decode,
    encode,
)
from events.schema import json_schemas


def test_round_trip_keeps_envelope_and_correlation_id() -> None:
    spec = TopicSpec(name="orders", partitions=6, replicas=3, config={"min.insync.replicas": 2})
    decoded = decode(encode(spec, correlation_id="corr-1"))
    assert decoded.event == spec
    assert decoded.envelope.schema_name == "ballast.TopicSpec"
    assert decoded.envelope.version == 1
    assert decoded.envelope.correlation_id == "corr-1"
    assert spec.config == {"min.insync.replicas": "2"}
    # The payload is the event: not kept twice (issue 52: a service starting holds every record of a topic at once).
    assert decoded.envelope.payload == {}


def test_wire_form_is_camel_case() -> None:
    document = json.loads(encode(ReplicasChangeRecord(topic="t", state="ongoing", target_replicas=2, session_id="s")))
    assert document["schema"] == "ballast.ReplicasChangeRecord"
    assert document["correlationId"]
    assert document["payload"]["targetReplicas"] == 2
    assert document["payload"]["sessionId"] == "s"


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        (None, "tombstone"),
        (b"\xff\xfe", "not JSON"),
        (b"{nope", "not JSON"),
        (b"[1, 2]", "expected a JSON object"),
        (b'{"version": 1, "payload": {}}', "invalid envelope: schema"),
        (b'{"schema": "ballast.Nope", "version": 1, "payload": {}}', "unknown schema 'ballast.Nope'"),
        (b'{"schema": "ballast.TopicSpec", "version": 9, "payload": {}}', "unsupported version 9"),
        (b'{"schema": "ballast.TopicSpec", "version": 1, "payload": {"name": "a b", "partitions": 1, "replicas": 1}}',
         "invalid Kafka topic name 'a b'"),
        (b'{"schema": "ballast.TopicSpec", "version": 1, "payload": {"name": "x", "partitions": 0, "replicas": 1}}',
         "partitions: Input should be greater than or equal to 1"),
    ],
)
def test_invalid_records_have_readable_reasons(raw: bytes | None, reason: str) -> None:
    with pytest.raises(InvalidEvent) as caught:
        decode(raw)
    assert reason in caught.value.reason


def test_schema_must_belong_to_topic() -> None:
    with pytest.raises(InvalidEvent, match="does not belong on this topic"):
        decode(encode(TopicStatus(topic="t", ready=True)), topic=TOPICS.specs)


def test_json_schema_export_covers_every_event() -> None:
    schemas = json_schemas()
    assert {"ballast.Envelope", "ballast.TopicSpec", "ballast.TopicSpecDeleted", "ballast.ReplicasChangeCommand",
            "ballast.ReplicasChangeRecord", "ballast.TopicStatus", "ballast.DeadLetter"} <= set(schemas)
    assert "targetReplicas" in schemas["ballast.ReplicasChangeCommand"]["properties"]


def test_topic_names_are_unique_and_state_topics_compacted() -> None:
    names = [t.name for t in TOPICS.all()]
    assert len(names) == len(set(names))
    assert TOPICS.status.config == {"cleanup.policy": "compact"}
    assert TOPICS.replicas_state.compacted and TOPICS.specs.compacted
