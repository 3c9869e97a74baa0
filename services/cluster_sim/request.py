"""Request parameters read as Cruise Control's servlet reads them (``ParameterUtils``), and its two kinds of refusal.

Names match case-insensitively; booleans are ``Boolean.parseBoolean`` (only ``true``, in any case, is true); lists
split on commas without trimming; integers are ``Integer.parseInt``, whose failure is a generic error (500), while
what ``ParameterUtils`` checks itself is a ``UserRequestException`` (400).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any


# Cruise Control's endpoint names (CruiseControlEndPoint), as user_tasks' ``endpoints`` filter matches them.
ENDPOINT_NAMES = frozenset({
    "BOOTSTRAP", "TRAIN", "LOAD", "PARTITION_LOAD", "PROPOSALS", "STATE", "ADD_BROKER", "REMOVE_BROKER",
    "FIX_OFFLINE_REPLICAS", "REBALANCE", "STOP_PROPOSAL_EXECUTION", "PAUSE_SAMPLING", "RESUME_SAMPLING",
    "KAFKA_CLUSTER_STATE", "DEMOTE_BROKER", "USER_TASKS", "REVIEW_BOARD", "ADMIN", "REVIEW", "TOPIC_CONFIGURATION",
    "RIGHTSIZE", "PERMISSIONS", "REMOVE_DISKS",
})


class UserRequestError(Exception):
    """A ``UserRequestException``: 400, "Bad <METHOD> request '/<endpoint>' due to '<message>'."."""


class RequestError(Exception):
    """Any other exception while reading the request: 500, "Error processing <METHOD> request '/<endpoint>' due
    to: '<message>'."."""


def refusal_body(method: str, endpoint: str, error: UserRequestError | RequestError) -> tuple[int, dict[str, Any]]:
    if isinstance(error, UserRequestError):
        status, message = 400, f"Bad {method} request '/{endpoint}' due to '{error}'."
    else:
        status, message = 500, f"Error processing {method} request '/{endpoint}' due to: '{error}'."
    return status, {"errorMessage": message, "stackTrace": f"{type(error).__name__}: {error}", "version": 1}


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
