"""Cruise Control failures, sorted into temporary and permanent ones.

Cruise Control itself does not tell the two apart (seed 000); the taxonomy below follows what its messages mean in
practice. Messages are short and readable: they end up in users' status events.

Every class says which it is (``temporary``), once. The policy both services follow: a temporary error
(unreachable, credentials, the load model not ready or warming up, another execution, servlet full, a task Cruise
Control forgot, a proposal still computing) keeps the state and is retried with the one backoff
(``services.common.retry.backoff``, which the cluster-admin port's errors follow too).
A permanent one is not retried as it was: Cruise Control refused the request itself (``RequestRejected``), or
answered something Ballast cannot read (``MalformedAnswer``). The rebalancer marks the rebalance NotReady until the
request is changed or refreshed; the replicas-change service pins a refusal on the changes it names (``isolation``),
which keep the message and are retried only after the backoff, in case the cluster changed (a broker back), while
the other changes go at once. A request that changes the cluster and got an answer Ballast cannot read may have been
taken: both services then look its task up by the reason the request carried, as after a lost connection.

Some refusals are either: "There is no topic in cluster matching pattern", "Broker [5] does not exist", "The broker
id(-3) should be non-negative" are what a restarted Cruise Control answers for a minute while its load model fills
(the topic and the broker exist; its model does not hold them yet), and what it answers for a topic or broker that
really is not there. ``may_be_warm_up`` recognises them; the client then asks Cruise Control's own ``state`` which
one it is (``warm_up.warming_up``).
"""

from __future__ import annotations


class CruiseControlError(Exception):
    # Decided by each subclass (tests/unit/test_cruise_control_errors.py checks that every one does).
    temporary: bool
    # Retried without a word to the user: the refusal says nothing about the request (ServletFull).
    quiet: bool = False

    def __init__(self, message: str, *, status_code: int | None = None, detail: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.status_code = status_code
        self.detail = detail


class ConnectionFailed(CruiseControlError):
    """Cruise Control is unreachable or did not answer in time."""

    temporary = True


class AuthorizationError(CruiseControlError):
    """401/403: the credentials are wrong. Retried, since fixing them needs no new spec."""

    temporary = True


class ClusterModelNotReady(CruiseControlError):
    """NotEnoughValidWindowsException, or an answer of a Cruise Control still warming up: its load model cannot answer
    yet (e.g. just restarted)."""

    temporary = True


class OngoingExecution(CruiseControlError):
    """OngoingExecutionException: another proposal execution is running."""

    temporary = True


class ServletFull(CruiseControlError):
    """'There are already N active user tasks, which has reached the servlet capacity.': other clients hold Cruise
    Control's user tasks (Ballast's own services keep to their shares). Nothing is wrong with the request: it is
    asked again shortly, with no status published in between."""

    temporary = True
    quiet = True


class ShareHeldByComputingTasks(CruiseControlError):
    """Every user task of this service's share is held by a task Cruise Control answered 202 and still computes: a
    new request would wait for one of their answers, which only following them brings (and the caller may be the
    one who follows). Asked again shortly, with no status published in between; meanwhile, follow them."""

    temporary = True
    quiet = True


class TaskForgotten(CruiseControlError):
    """'Unexpected header <id> (value: User-Task-ID)': Cruise Control holds no task by that id for this request (it
    restarted, or the task aged out of its memory). The request is made anew, without the header."""

    temporary = True


class StillComputing(CruiseControlError):
    """202 to a request whose answer was needed now: Cruise Control is still computing it."""

    temporary = True


class RequestRejected(CruiseControlError):
    """Any other refusal (bad parameters, unknown brokers, RF above alive brokers, ...): permanent for this request."""

    temporary = False


class MalformedAnswer(CruiseControlError):
    """Cruise Control answered, but not in a shape Ballast reads (not JSON, not the documented fields, no
    User-Task-ID): asking the same again gets the same answer (a version Ballast does not know, a proxy in between).
    Whether a request that changes the cluster was taken is unknown: see the module's policy."""

    temporary = False


def classify(status_code: int, error_message: str, detail: str | None = None) -> CruiseControlError:
    text = error_message or ""
    if status_code in (401, 403):
        return AuthorizationError("Authorization error", status_code=status_code, detail=detail)
    if "NotEnoughValidWindowsException" in text:
        return ClusterModelNotReady("Cluster model not ready", status_code=status_code, detail=text)
    if "OngoingExecutionException" in text or "ongoing execution" in text:
        return OngoingExecution("Another task is executing", status_code=status_code, detail=text)
    if "Unexpected header" in text and "User-Task-ID" in text:
        return TaskForgotten("Cruise Control no longer knows the task (restarted?)", status_code=status_code,
                             detail=text)
    if "reached the servlet capacity" in text:
        return ServletFull(
            "Cruise Control is at its active user task limit (servlet capacity)", status_code=status_code, detail=text
        )
    return RequestRejected(f"Request failed ({status_code}), {_core_message(text)}", status_code=status_code, detail=text)


# What Cruise Control answers while its load model fills after a start, about topics and brokers that do exist.
_WARM_UP_ANSWERS = ("There is no topic in cluster matching pattern", "does not exist.", "The broker id(")


def may_be_warm_up(error: CruiseControlError) -> bool:
    """A refusal that a warming-up Cruise Control gives for topics and brokers its model does not hold yet."""
    return isinstance(error, RequestRejected) and any(marker in (error.detail or "") for marker in _WARM_UP_ANSWERS)


def warming_up(error: CruiseControlError, reason: str) -> ClusterModelNotReady:
    """``error`` given while Cruise Control warms up (``reason``, from its state): temporary."""
    return ClusterModelNotReady(f"Cruise Control is warming up ({reason})", status_code=error.status_code,
                                detail=error.detail)


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
