"""Request parameters read as Cruise Control's servlet reads them (``ParameterUtils``).

Names match case-insensitively; booleans are ``Boolean.parseBoolean`` (only ``true``, in any case, is true); lists
split on commas without trimming; integers are ``Integer.parseInt``. Whatever fails while the parameters are read
(a ``UserRequestException``, a bad number, a bad task id) is answered 400 with the exception's own message
(``AbstractParameters.parseParameters``), before any user task exists.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


# Cruise Control's endpoint names (CruiseControlEndPoint), as user_tasks' ``endpoints`` filter matches them.
ENDPOINT_NAMES = frozenset({
    "BOOTSTRAP", "TRAIN", "LOAD", "PARTITION_LOAD", "PROPOSALS", "STATE", "ADD_BROKER", "REMOVE_BROKER",
    "FIX_OFFLINE_REPLICAS", "REBALANCE", "STOP_PROPOSAL_EXECUTION", "PAUSE_SAMPLING", "RESUME_SAMPLING",
    "KAFKA_CLUSTER_STATE", "DEMOTE_BROKER", "USER_TASKS", "REVIEW_BOARD", "ADMIN", "REVIEW", "TOPIC_CONFIGURATION",
    "RIGHTSIZE", "PERMISSIONS", "REMOVE_DISKS",
})


class UserRequestError(Exception):
    """A ``UserRequestException`` while the parameters are read: 400 with its message."""


class RequestError(Exception):
    """Any other exception while the parameters are read (a bad number, a bad task id): 400 with its message."""


def refusal_body(error: Exception) -> tuple[int, dict[str, Any]]:
    """The answer to parameters Cruise Control cannot read (``handleParameterParseException``)."""
    exception = "com.linkedin.cruisecontrol.servlet.UserRequestException" if isinstance(error, UserRequestError) \
        else "java.lang.IllegalArgumentException"
    return 400, {"errorMessage": str(error), "stackTrace": f"{exception}: {error}", "version": 1}


class Params:
    def __init__(self, query: Mapping[str, str]) -> None:
        self._values = {}
        for name, value in query.items():
            self._values.setdefault(name.lower(), value)  # caseSensitiveParameterName: the first name that matches

    def __contains__(self, name: str) -> bool:
        return name.lower() in self._values

    def get(self, name: str, default: str | None = None) -> str | None:
        return self._values.get(name.lower(), default)

    def boolean(self, name: str, default: bool) -> bool:
        value = self.get(name)
        return default if value is None else value.lower() == "true"

    def strings(self, name: str) -> list[str]:
        """``getListParam``: split on commas, empty items dropped, nothing trimmed (order kept)."""
        value = self.get(name)
        return [] if value is None else [item for item in value.split(",") if item]

    def integers(self, name: str) -> list[int]:
        """``parseParamToIntegerSet``: every item must be an integer (an empty one is not)."""
        value = self.get(name)
        return [] if value is None else [parse_int(item) for item in value.split(",")]

    def integer(self, name: str, *, bits: int = 32) -> int | None:
        """``Short.parseShort`` (16), ``Integer.parseInt`` (32) or ``Long.valueOf`` (64) of the value, if given."""
        value = self.get(name)
        return None if value is None else parse_int(value, bits=bits)

    def uuids(self, name: str) -> set[str]:
        value = self.get(name)
        if value is None:
            return set()
        found = set()
        for item in value.split(","):
            try:
                found.add(str(uuid.UUID(item)))
            except ValueError:
                raise RequestError(f"Invalid UUID string: {item}") from None
        return found


def parse_int(text: str, *, bits: int = 32) -> int:
    """Java's parsing of a decimal integer: an optional sign and ASCII digits only (no spaces, no underscores)."""
    digits = text[1:] if text[:1] in ("+", "-") else text
    if not digits.isascii() or not digits.isdigit():
        raise RequestError(f'For input string: "{text}"')
    value, limit = int(text), 2 ** (bits - 1)
    if not -limit <= value < limit:
        # Short.parseShort parses an int first and then says so; Integer and Long name the input.
        raise RequestError(f'Value out of range. Value:"{text}" Radix:10' if bits == 16 and -2**31 <= value < 2**31
                           else f'For input string: "{text}"')
    return value


# -- the parameters several endpoints share (``ParameterUtils``) ---------------------------------------------------

def throttle(params: Params) -> int | None:
    """``replication_throttle`` in bytes per second (``Long.valueOf``); None when absent."""
    value = params.integer("replication_throttle", bits=64)
    if value is not None and value < 0:
        raise UserRequestError(f"Requested rebalance throttle must be non-negative (Requested: {value}).")
    return value or None


def concurrency(params: Params, kind: str = "inter") -> int | None:
    """``concurrent_partition_movements_per_broker`` (``kind`` inter) or ``concurrent_intra_broker_partition_movements``
    (intra): the executor's cap for this execution, positive."""
    name = ("concurrent_partition_movements_per_broker" if kind == "inter"
            else "concurrent_intra_broker_partition_movements")
    value = params.integer(name)
    if value is not None and value <= 0:
        raise UserRequestError(f"The requested {kind}-broker partition movement concurrency must be positive "
                               f"(Requested: {value}).")
    return value


def broker_and_logdirs(params: Params) -> dict[int, set[str]]:
    """``brokerid_and_logdirs=<broker>-<logdir>,...`` (``ParameterUtils.brokerIdAndLogdirs``: the broker id is what
    precedes the first '-', so a directory may contain dashes)."""
    raw = params.get("brokerid_and_logdirs")
    if not raw:
        raise UserRequestError("brokerid_and_logdirs is required: <broker id>-<log dir>,...")
    removal: dict[int, set[str]] = {}
    for entry in raw.split(","):
        broker, dash, log_dir = entry.partition("-")
        if not dash or not log_dir:
            raise UserRequestError(f"Invalid brokerid_and_logdirs entry {entry!r}: expected <broker id>-<log dir>")
        removal.setdefault(parse_int(broker), set()).add(log_dir)
    return removal


def dryrun(params: Params) -> bool:
    value = params.boolean("dryrun", True)
    if value and params.boolean("stop_ongoing_execution", False):
        raise UserRequestError("stop_ongoing_execution and dryrun cannot both be set to true.")
    return value


def replication_factors(params: Params, body: Any) -> dict[int, str]:
    """``topicPatternByReplicationFactor``: from the ``topic`` and ``replication_factor`` parameters or from the
    body, not both; nothing at all is "Nothing executable found in request."."""
    topic, rf = params.get("topic"), params.integer("replication_factor", bits=16)
    from_body = None
    if isinstance(body, dict) and isinstance(body.get("replication_factor"), dict) \
            and "topic_by_replication_factor" in body["replication_factor"]:
        mapping = body["replication_factor"]["topic_by_replication_factor"]
        if not isinstance(mapping, dict):
            raise UserRequestError('Illegal value for field topic_by_replication_factor in body, please specify in pairs '
                                   'of "target replication factor" : "topic name regex".')
        from_body = {}
        for key, regex in mapping.items():
            from_body.setdefault(parse_int(str(key).strip(), bits=16), str(regex).strip())
    if from_body is not None:
        if topic is not None or rf is not None:
            raise UserRequestError("Requesting topic replication factor change from both HTTP request parameter and "
                                   "body is forbidden.")
        return from_body
    if topic is None and rf is not None:
        raise UserRequestError("Topic is not specified in URL while target replication factor is specified.")
    if topic is not None and rf is None:
        raise UserRequestError("Topic's replication factor is not specified in URL while subject topic is specified.")
    if topic is None or rf is None:
        raise UserRequestError("Nothing executable found in request.")
    return {rf: topic}


def substates(params: Params) -> set[str]:
    """``state``'s ``substates``: the parts of the answer wanted (all of them when none is named)."""
    known = {"executor": "ExecutorState", "monitor": "MonitorState", "analyzer": "AnalyzerState",
             "anomaly_detector": "AnomalyDetectorState"}
    named = params.strings("substates")
    unknown = [s for s in named if s.lower() not in known]
    if unknown:
        raise UserRequestError(f"Unsupported substates in {unknown}. Supported: {sorted(s.upper() for s in known)}")
    return {known[s.lower()] for s in named} or set(known.values())


@dataclass(frozen=True)
class Request:
    """One HTTP request as Cruise Control reads it."""

    endpoint: str
    method: str
    path: str
    params: Mapping[str, list[str]]  # every value of every parameter, as sent
    request_url: str
    client: str = "127.0.0.1"
    body: Any = None
    session: str | None = None  # the JSESSIONID cookie
    task_header: str | None = None  # User-Task-ID

    @property
    def query(self) -> Params:
        return Params({name: values[0] for name, values in self.params.items() if values})
