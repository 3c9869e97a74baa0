"""Cruise Control's user tasks, as its ``UserTaskManager`` keeps them (measured on the real one, recorded in
``shared/reference/cruise-control-real``):

- every request is a user task, GETs and the synchronous endpoints (``user_tasks``, ``stop_proposal_execution``)
  included, and carries its ``User-Task-ID``;
- a task is *active* from its request until the task scanner, every ``scanner_period_s``, finds it finished; while
  ``max_active`` are active, a request that needs a new task is refused (500, "servlet capacity"); an execution's task
  leaves the active ones when the execution begins and is ``InExecution`` until it ends;
- an asynchronous request (every endpoint but the synchronous ones) is remembered by its HTTP session (the
  ``JSESSIONID`` cookie), its path and its parameters: the same request again in the same session gets that task's
  answer again, errors included, for as long as the session lives (``session_expiry_s`` since its last use);
- a request naming a task in its ``User-Task-ID`` header gets that task's answer when the task's path and parameters
  are the request's, and is refused otherwise ("Unexpected header");
- a restart forgets every task and session.
"""

from __future__ import annotations

import asyncio
import json
import math
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol
from urllib.parse import parse_qs, urlsplit

from services.cluster_sim.request import RequestError

# The endpoints whose request is handled synchronously: a task, but no session to find it by.
SYNC_ENDPOINTS = frozenset({"user_tasks", "stop_proposal_execution"})
ACTIVE, IN_EXECUTION, COMPLETED, COMPLETED_WITH_ERROR = "Active", "InExecution", "Completed", "CompletedWithError"

# The request as Cruise Control compares two of them: method and path, and each parameter's set of values.
RequestKey = tuple[str, frozenset[tuple[str, frozenset[str]]]]


def request_key(method: str, path: str, params: Mapping[str, Iterable[str]]) -> RequestKey:
    return f"{method} {path}", frozenset((name, frozenset(values)) for name, values in params.items())


class Limits(Protocol):
    """Cruise Control's settings the task manager follows (read at each use: a test may change them)."""

    max_active_user_tasks: int  # max.active.user.tasks
    task_scanner_period_s: float  # the task scanner's period (5 s)
    session_expiry_s: float  # webserver.session.maxExpiryTimeMs


class ServletFull(Exception):
    """'There are already N active user tasks, which has reached the servlet capacity.'"""


class UnexpectedHeader(Exception):
    """A ``User-Task-ID`` naming no task of this request."""


@dataclass
class SimTask:
    id: str
    endpoint: str
    key: RequestKey
    request_url: str
    client: str
    start_ms: int
    status: str = ACTIVE
    # The answer, once there is one: an HTTP status and a body (a result or Cruise Control's error document).
    answer: tuple[int, dict[str, Any]] | None = None
    done_at: float | None = None  # when the answer came (the scanner moves the task on after that)
    completed_ms: int | None = None  # when it became Completed or CompletedWithError
    ready: asyncio.Event = field(default_factory=asyncio.Event)

    def execution_reason(self) -> str:
        """The executor's ``triggeredTaskReason``: the request's ``reason``, who asked and when."""
        reason = parse_qs(urlsplit(self.request_url.partition(" ")[2]).query).get("reason", ["No reason provided"])[0]
        started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(self.start_ms / 1000))
        return f"{reason} (Client: {self.client}, Date: {started})"

    @property
    def failed(self) -> bool:
        return self.answer is not None and self.answer[0] >= 400

    def finish(self, status: int, body: dict[str, Any], now: float) -> None:
        self.answer = (status, body)
        self.done_at = now
        self.ready.set()

    def as_json(self, fetch_completed: bool) -> dict[str, Any]:
        row = {"UserTaskId": self.id, "RequestURL": self.request_url, "ClientIdentity": self.client,
               "StartMs": str(self.start_ms), "Status": self.status}
        if fetch_completed and self.answer is not None and self.status != ACTIVE:
            row["originalResponse"] = json.dumps(self.answer[1])
        return row


class UserTaskManager:
    def __init__(self, limits: Limits, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.limits = limits
        self._clock = clock
        self._epoch = clock()  # the scanner's first run: it runs at every period from here
        self.active: dict[str, SimTask] = {}
        self.in_execution: SimTask | None = None
        self.completed: dict[str, SimTask] = {}
        self._sessions: dict[str, float] = {}  # session id -> last use
        self._by_session: dict[tuple[str, RequestKey], str] = {}

    # -- sessions ----------------------------------------------------------------------------------------------

    def session(self, cookie: str | None) -> tuple[str, bool]:
        """The request's session: the one its cookie names while it lives, else a new one (True: new, the answer
        sets its cookie)."""
        now = self._clock()
        self._expire_sessions(now)
        if cookie is not None and cookie in self._sessions:
            self._sessions[cookie] = now
            return cookie, False
        session = f"node0{uuid.uuid4().hex[:26]}.node0"
        self._sessions[session] = now
        return session, True

    def _expire_sessions(self, now: float) -> None:
        for session in [s for s, used in self._sessions.items() if now - used >= self.limits.session_expiry_s]:
            del self._sessions[session]
            for key in [k for k in self._by_session if k[0] == session]:
                del self._by_session[key]

    # -- tasks -------------------------------------------------------------------------------------------------

    def existing(self, header: str | None, session: str, key: RequestKey, asynchronous: bool) -> SimTask | None:
        """The task this request asks about: by its ``User-Task-ID`` header (refused when no task of this request
        has that id), else by its session (asynchronous requests only)."""
        self.scan()
        if header:
            try:
                task_id = str(uuid.UUID(header))
            except ValueError:
                raise RequestError(f"Invalid UUID string: {header}") from None
            task = self._find(task_id)
            if task is None or task.key != key:
                raise UnexpectedHeader(f"Unexpected header {header} (value: User-Task-ID) in the request.")
            return task
        if asynchronous:
            task_id = self._by_session.get((session, key))
            return self._find(task_id) if task_id else None
        return None

    def create(self, endpoint: str, key: RequestKey, request_url: str, client: str, session: str,
               asynchronous: bool) -> SimTask:
        self.scan()
        if len(self.active) >= self.limits.max_active_user_tasks:
            raise ServletFull(f"There are already {len(self.active)} active user tasks, which has reached the servlet "
                              "capacity.")
        task = SimTask(id=str(uuid.uuid4()), endpoint=endpoint, key=key, request_url=request_url, client=client,
                       start_ms=int(time.time() * 1000))
        self.active[task.id] = task
        if asynchronous:
            self._by_session[(session, key)] = task.id
        return task

    def began_execution(self, task: SimTask) -> None:
        self.active.pop(task.id, None)
        task.status = IN_EXECUTION
        self.in_execution = task

    def finished_execution(self, task: SimTask, *, with_error: bool) -> None:
        task.status = COMPLETED_WITH_ERROR if with_error else COMPLETED
        task.completed_ms = int(time.time() * 1000)
        if self.in_execution is task:
            self.in_execution = None
        self.completed[task.id] = task

    def scan(self) -> None:
        """What the task scanner has done by now: every active task whose answer came before its last run is
        completed (with an error when the answer was one)."""
        now, period = self._clock(), self.limits.task_scanner_period_s
        last_run = self._epoch + math.floor((now - self._epoch) / period) * period
        for task in [t for t in self.active.values() if t.done_at is not None and t.done_at <= last_run]:
            del self.active[task.id]
            task.status = COMPLETED_WITH_ERROR if task.failed else COMPLETED
            task.completed_ms = int(time.time() * 1000)
            self.completed[task.id] = task

    def all(self) -> list[SimTask]:
        """Active ones first, then the executing one, then completed ones (``getAllUserTasks``)."""
        self.scan()
        executing = [self.in_execution] if self.in_execution is not None else []
        return [*self.active.values(), *executing, *self.completed.values()]

    def forget(self) -> None:
        """A restart: nothing is persisted."""
        self.active.clear()
        self.completed.clear()
        self.in_execution = None
        self._sessions.clear()
        self._by_session.clear()
        self._epoch = self._clock()

    def _find(self, task_id: str) -> SimTask | None:
        if self.in_execution is not None and self.in_execution.id == task_id:
            return self.in_execution
        return self.active.get(task_id) or self.completed.get(task_id)

    def get(self, task_id: str) -> SimTask | None:
        return self._find(task_id)
