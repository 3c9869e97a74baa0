"""Cruise Control failures, sorted into temporary and permanent ones.

Cruise Control itself does not tell the two apart (seed 000); the taxonomy below follows what its messages mean in
practice. Messages are short and readable: they end up in users' status events.

The policy both services follow: a temporary error (``temporary``: unreachable, credentials, no valid windows yet,
another execution, servlet full) keeps the state and is retried with the one backoff (``retry.backoff``). A permanent
one (``RequestRejected``: Cruise Control refused the request itself) is not retried as it was: the rebalancer marks
the rebalance NotReady until the request is changed or refreshed; the replicas-change service pins the refusal on the
changes it names (``isolation``), which keep the message and are retried only after the backoff, in case the cluster
changed (a broker back), while the other changes go at once.
"""

from __future__ import annotations


class CruiseControlError(Exception):
    temporary: bool = True

    def __init__(self, message: str, *, status_code: int | None = None, detail: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.status_code = status_code
        self.detail = detail


class ConnectionFailed(CruiseControlError):
    """Cruise Control is unreachable or did not answer in time."""


class AuthorizationError(CruiseControlError):
    """401/403: the credentials are wrong. Retried, since fixing them needs no new spec."""


class ClusterModelNotReady(CruiseControlError):
    """NotEnoughValidWindowsException: Cruise Control is still collecting metrics (e.g. just restarted)."""


class OngoingExecution(CruiseControlError):
    """OngoingExecutionException: another proposal execution is running."""


class ServletFull(CruiseControlError):
    """'There are already N active user tasks, which has reached the servlet capacity.'"""


class RequestRejected(CruiseControlError):
    """Any other refusal (bad parameters, unknown brokers, RF above alive brokers, ...): permanent for this request."""

    temporary = False


def classify(status_code: int, error_message: str, detail: str | None = None) -> CruiseControlError:
    text = error_message or ""
    if status_code in (401, 403):
        return AuthorizationError("Authorization error", status_code=status_code, detail=detail)
    if "NotEnoughValidWindowsException" in text:
        return ClusterModelNotReady("Cluster model not ready", status_code=status_code, detail=text)
    if "OngoingExecutionException" in text or "ongoing execution" in text:
        return OngoingExecution("Another task is executing", status_code=status_code, detail=text)
    if "reached the servlet capacity" in text:
        return ServletFull(
            "Cruise Control is at its active user task limit (servlet capacity)", status_code=status_code, detail=text
        )
    return RequestRejected(f"Request failed ({status_code}), {_core_message(text)}", status_code=status_code, detail=text)


def _core_message(text: str) -> str:
    # Cruise Control wraps the cause: "Error processing POST request '/x' due to: 'a.b.Exception: c.d.E: msg'." (a
    # 500), "Bad POST request '/x' due to 'msg'." (a 400). The innermost message is what a user needs.
    for marker in ("due to: '", "due to '"):
        if marker in text:
            text = text.split(marker, 1)[1].rstrip(".").rstrip("'")
            break
    while ": " in text and text.split(": ", 1)[0].rsplit(".", 1)[-1].endswith(("Exception", "Error")):
        text = text.split(": ", 1)[1]
    return text.strip() or "no error message"
