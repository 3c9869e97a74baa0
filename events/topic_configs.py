"""Kafka's topic configs: the names a topic takes and the values each accepts, checked as Kafka 4.3's LogConfig checks
them (ConfigDef's parsing, then each key's validator, then the checks across keys), with Kafka's own wording.

The CLI refuses a spec Kafka would refuse before publishing it, and the simulator refuses what Kafka refuses.
tests/kafka/test_topic_configs.py holds every verdict here against the real cluster's (CreateTopics, validate only).
"""

from __future__ import annotations

import math
import re
from decimal import Decimal
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Literal

Kind = Literal["BOOLEAN", "STRING", "INT", "LONG", "DOUBLE", "LIST"]
Value = bool | str | int | float | list[str]

_INT_RANGE = {"INT": (-(2**31), 2**31 - 1), "LONG": (-(2**63), 2**63 - 1)}
# java.lang.Integer.parseInt / Long.parseLong: an optional sign, then decimal digits.
_INTEGER = re.compile(r"[+-]?[0-9]+")
# java.lang.Double.parseDouble (FloatingDecimal), decimal forms: a sign, digits with an optional point and exponent,
# an optional type suffix; or NaN / Infinity. (Hexadecimal floating literals are not accepted here.)
_DOUBLE = re.compile(r"[+-]?(NaN|Infinity|([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?[fFdD]?)")


# The broker settings a topic created without partitions or a replication factor gets its own from, and Kafka's
# defaults for them.
DEFAULT_PARTITIONS, DEFAULT_REPLICATION_FACTOR = "num.partitions", "default.replication.factor"
KAFKA_TOPIC_DEFAULTS = {DEFAULT_PARTITIONS: "1", DEFAULT_REPLICATION_FACTOR: "1"}


# Topic configs that others set for a while and take out again (Cruise Control's executions, the throttle
# controller, Kafka's reassignment tool): never a spec's, and never removed as one it does not name.
THROTTLE_LISTS = frozenset({"leader.replication.throttled.replicas", "follower.replication.throttled.replicas"})


class InvalidTopicConfig(ValueError):
    """A topic config Kafka refuses; the message is Kafka's."""


def _java_double(value: float) -> str:
    """Double.toString: the shortest digits that give the double back, plain between 10^-3 and 10^7 and
    computerized scientific notation (1.0E8) outside."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0 or 1e-3 <= abs(value) < 1e7:
        return repr(value)  # Python's repr is also the shortest round trip, and plain in this range
    sign, digits, exponent = Decimal(repr(value)).normalize().as_tuple()
    text = "".join(map(str, digits))
    mantissa = text[0] + "." + (text[1:] or "0")
    return f"{'-' if sign else ''}{mantissa}E{exponent + len(text) - 1}"


def _shown(value: Value) -> str:
    """A parsed value as Kafka prints it in a ConfigException."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return _java_double(value)
    if isinstance(value, list):
        return "[" + ", ".join(value) + "]"
    return str(value)


def _error(name: str, value: object, reason: str) -> InvalidTopicConfig:
    # ConfigException(name, value, message)
    return InvalidTopicConfig(f"Invalid value {value} for configuration {name}: {reason}")


def _parse(name: str, raw: str, kind: Kind) -> Value:
    trimmed = raw.strip()
    if kind == "BOOLEAN":
        if trimmed.lower() in ("true", "false"):
            return trimmed.lower() == "true"
        raise _error(name, raw, "Expected value to be either true or false")
    if kind == "STRING":
        return trimmed
    if kind in _INT_RANGE:
        low, high = _INT_RANGE[kind]
        if _INTEGER.fullmatch(trimmed):
            # Python reads no integer of more than 4,300 digits (leading zeros included); no INT or LONG has 20.
            sign, digits = trimmed[0] if trimmed[0] in "+-" else "", trimmed.lstrip("+-").lstrip("0") or "0"
            if len(digits) < 20 and low <= (number := int(sign + digits)) <= high:
                return number
        raise _error(name, raw, f"Not a number of type {kind}")
    if kind == "DOUBLE":
        if _DOUBLE.fullmatch(trimmed):
            return float(trimmed[:-1] if trimmed[-1] in "fFdD" else trimmed)
        raise _error(name, raw, f"Not a number of type {kind}")
    return [] if not trimmed else re.split(r"\s*,\s*", trimmed)  # LIST


Check = Callable[[str, Value], None]


def at_least(low: int) -> Check:
    def check(name: str, value: Value) -> None:
        if value < low:  # type: ignore[operator]
            raise _error(name, _shown(value), f"Value must be at least {low}")
    return check


def between(low: int, high: int) -> Check:
    def check(name: str, value: Value) -> None:
        at_least(low)(name, value)
        if value > high:  # type: ignore[operator]
            raise _error(name, _shown(value), f"Value must be no more than {high}")
    return check


def one_of(*allowed: str) -> Check:
    def check(name: str, value: Value) -> None:
        if value not in allowed:
            raise _error(name, value, f"String must be one of: {', '.join(allowed)}")
    return check


def each_of(*allowed: str) -> Check:
    """ValidList.in(true, ...): every item one of ``allowed`` (an empty list is allowed; an empty item is not)."""
    def check(name: str, value: Value) -> None:
        assert isinstance(value, list)
        if any(not item for item in value):
            raise InvalidTopicConfig(f"Configuration '{name}' values must not be empty.")
        for item in value:
            if item not in allowed:
                raise _error(name, item, f"String must be one of: {', '.join(allowed)}")
    return check


def gzip_level(name: str, value: Value) -> None:
    if value != -1 and not 1 <= value <= 9:  # type: ignore[operator]
        raise _error(name, value, "Value must be between 1 and 9 or equal to -1")


_REPLICA = re.compile(r"([0-9]+:[0-9]+)?")


def throttled_replicas(name: str, value: Value) -> None:
    assert isinstance(value, list)
    if value == ["*"] or all(_REPLICA.fullmatch(item.strip()) for item in value):
        return
    raise _error(name, _shown(value), f"{name} must be the literal '*' or a list of replicas in the following "
                                      "format: [partitionId]:[brokerId],[partitionId]:[brokerId],...")


def _none(_name: str, _value: Value) -> None:
    return None


@dataclass(frozen=True)
class ConfigKey:
    name: str
    kind: Kind
    check: Check = _none


# LogConfig.configDefCopy() of Kafka 4.3.1.
KEYS: dict[str, ConfigKey] = {k.name: k for k in (
    ConfigKey("cleanup.policy", "LIST", each_of("compact", "delete")),
    ConfigKey("compression.gzip.level", "INT", gzip_level),
    ConfigKey("compression.lz4.level", "INT", between(1, 17)),
    ConfigKey("compression.type", "STRING", one_of("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")),
    ConfigKey("compression.zstd.level", "INT", between(-131072, 22)),
    ConfigKey("delete.retention.ms", "LONG", at_least(0)),
    ConfigKey("file.delete.delay.ms", "LONG", at_least(0)),
    ConfigKey("flush.messages", "LONG", at_least(1)),
    ConfigKey("flush.ms", "LONG", at_least(0)),
    ConfigKey("follower.replication.throttled.replicas", "LIST", throttled_replicas),
    ConfigKey("index.interval.bytes", "INT", at_least(0)),
    ConfigKey("internal.segment.bytes", "INT"),  # internal, yet taken from clients
    ConfigKey("leader.replication.throttled.replicas", "LIST", throttled_replicas),
    ConfigKey("local.retention.bytes", "LONG", at_least(-2)),
    ConfigKey("local.retention.ms", "LONG", at_least(-2)),
    ConfigKey("max.compaction.lag.ms", "LONG", at_least(1)),
    ConfigKey("max.message.bytes", "INT", at_least(0)),
    ConfigKey("message.timestamp.after.max.ms", "LONG", at_least(0)),
    ConfigKey("message.timestamp.before.max.ms", "LONG", at_least(0)),
    ConfigKey("message.timestamp.type", "STRING", one_of("CreateTime", "LogAppendTime")),
    ConfigKey("min.cleanable.dirty.ratio", "DOUBLE", between(0, 1)),
    ConfigKey("min.compaction.lag.ms", "LONG", at_least(0)),
    ConfigKey("min.insync.replicas", "INT", at_least(1)),
    ConfigKey("preallocate", "BOOLEAN"),
    ConfigKey("remote.log.copy.disable", "BOOLEAN"),
    ConfigKey("remote.log.delete.on.disable", "BOOLEAN"),
    ConfigKey("remote.storage.enable", "BOOLEAN"),
    ConfigKey("retention.bytes", "LONG"),
    ConfigKey("retention.ms", "LONG", at_least(-1)),
    ConfigKey("segment.bytes", "INT", at_least(1048576)),
    ConfigKey("segment.index.bytes", "INT", at_least(4)),
    ConfigKey("segment.jitter.ms", "LONG", at_least(0)),
    ConfigKey("segment.ms", "LONG", at_least(1)),
    ConfigKey("unclean.leader.election.enable", "BOOLEAN"),
)}


def check_topic_config(config: Mapping[str, str], *, tiered_storage: bool = True) -> None:
    """Raises InvalidTopicConfig, with Kafka's message, for the first config Kafka would refuse; ``tiered_storage``:
    whether the brokers have remote log storage enabled (remote.log.storage.system.enable), which only the cluster
    knows: checked against the cluster, not before publishing."""
    parsed: dict[str, Value] = {}
    for name, raw in config.items():
        key = KEYS.get(name)
        if key is None:
            raise InvalidTopicConfig(f"Unknown topic config name: {name}")
        value = _parse(name, raw, key.kind)
        key.check(name, value)
        parsed[name] = value
    if parsed.get("remote.storage.enable") is True and not tiered_storage:
        raise InvalidTopicConfig("Tiered Storage functionality is disabled in the broker. Topic cannot be configured "
                                 "with remote log storage.")
    low, high = parsed.get("min.compaction.lag.ms", 0), parsed.get("max.compaction.lag.ms", 2**63 - 1)
    if low > high:  # type: ignore[operator]
        raise InvalidTopicConfig(f"conflict topic config setting min.compaction.lag.ms ({low}) > "
                                 f"max.compaction.lag.ms ({high})")


def topic_config_problem(config: Mapping[str, str], *, tiered_storage: bool = True) -> str | None:
    try:
        check_topic_config(config, tiered_storage=tiered_storage)
    except InvalidTopicConfig as exc:
        return str(exc)
    return None
