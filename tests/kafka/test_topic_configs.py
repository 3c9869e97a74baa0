"""Ballast's topic-config check (events/topic_configs.py) against Kafka's own (issue 18, defect 9): every key Kafka
4.3 defines crossed with values of every shape, plus the cases across keys, sent to the real cluster as one
CreateTopics with validate_only. The verdicts and messages must be Kafka's, word for word."""

from __future__ import annotations

from confluent_kafka.admin import AdminClient, NewTopic

from events.topic_configs import KEYS, topic_config_problem
from services.local.kafka_cluster import LocalKafka

VALUES = ["", " ", "0", "1", "-1", "-2", "4", "+5", " 100 ", "1.5", "0.5d", "2", "1e3", "1e8", "NaN", "abc",
          "99999999999", "2147483648", "99999999999999999999", "true", "TRUE", " false ", "yes", "compact",
          "Compact", "compact,delete", "compact, delete", "delete,", "compact,,delete", "*", "0:1", "0:1, 1:2",
          "0:1,*", "x", "gzip", "GZIP", " zstd ", "producer", "CreateTime", "createtime", "LogAppendTime", "9", "10",
          "17", "18", "22", "-131072", "-131073", "1048575", "1048576",
          # Issue 56, defect 3: more digits than Python reads as an integer (4,300), with leading zeros, and as a double.
          "9" * 5_000, "-" + "9" * 5_000, "0" * 5_000 + "7", "1" + "0" * 400 + ".5"]
# librdkafka keeps an error's message in a 512-byte buffer: a longer one (a value of thousands of digits quoted in it)
# arrives cut to 511 characters.
LIBRDKAFKA_ERROR_CHARS = 511
ACROSS = [
    {"no.such.key": "1"}, {"message.format.version": "3.0"}, {"message.downconversion.enable": "true"},
    {"min.compaction.lag.ms": "10", "max.compaction.lag.ms": "5"},
    {"min.compaction.lag.ms": "5", "max.compaction.lag.ms": "5"},
    {"local.retention.ms": "100", "retention.ms": "50"}, {"remote.storage.enable": "true"},
    {"remote.storage.enable": "false", "retention.ms": "1000", "cleanup.policy": "delete"},
]


def test_every_verdict_and_message_is_kafkas(kafka: LocalKafka) -> None:
    cases = [{key: value} for key in sorted(KEYS) for value in VALUES] + ACROSS
    topics = {f"config-check-{index}": case for index, case in enumerate(cases)}
    admin = AdminClient({"bootstrap.servers": kafka.bootstrap_servers})
    futures = admin.create_topics([NewTopic(name, 1, 1, config=case) for name, case in topics.items()],
                                  validate_only=True, request_timeout=60)
    differences = []
    for name, future in futures.items():
        try:
            future.result(timeout=60)
            kafkas = None
        except Exception as exc:  # noqa: BLE001 -- KafkaException with the topic's error
            error = exc.args[0]
            assert error.name() == "INVALID_CONFIG", (topics[name], error)
            kafkas = error.str()
        # The local brokers run without remote log storage, as the simulator's do.
        ours = topic_config_problem(topics[name], tiered_storage=False)
        if ours is not None and kafkas is not None and len(kafkas) == LIBRDKAFKA_ERROR_CHARS:
            ours = ours[:LIBRDKAFKA_ERROR_CHARS]  # Kafka's message, as far as the client carries it
        if ours != kafkas:
            differences.append(f"{topics[name]}: Kafka {kafkas!r}, Ballast {ours!r}")
    assert len(topics) > 1_500
    assert not differences, "\n".join(differences)
