"""Async Cruise Control client. The same code talks to a real Cruise Control and to the simulator.

Layering, as in httpx: settings -> one ``httpx.AsyncClient`` (auth, TLS, timeouts, optional transport as the test
seam) -> one method per endpoint returning typed models -> ``errors.classify`` for every non-2xx answer.

Two things every request respects, because the real Cruise Control works so:
- **Fresh answers.** Cruise Control ties an asynchronous request to the HTTP session (its ``JSESSIONID`` cookie) and
  answers a repeat of the same request in the same session with the session's old task, errors included, for as long
  as the session lives. This client keeps no cookies, so every request is a new task; it follows a task that is still
  computing (202) only by naming it in the ``User-Task-ID`` header, where a caller asks for that.
- **The user-task budget** (``budget.TaskBudget``): each request is a user task that Cruise Control counts against
  ``max.active.user.tasks``; a client holds at most its service's share at once.
"""

from __future__ import annotations

import json
import ssl
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from http.cookiejar import DefaultCookiePolicy
from typing import Any, TypeVar

import httpx
from pydantic import ValidationError
from tenacity import AsyncRetrying, retry_if_exception_type, stop_after_attempt, wait_exponential

from services.adapters.cruise_control.budget import TaskBudget
from services.adapters.cruise_control.errors import (
    ClusterModelNotReady,
    ConnectionFailed,
    CruiseControlError,
    MalformedAnswer,
    RequestRejected,
    StillComputing,
    classify,
    may_be_warm_up,
    warming_up,
)
from services.adapters.cruise_control.options import OptimizationOptions
from services.adapters.cruise_control.models import (
    BrokerLoads,
    CruiseControlState,
    ErrorResponse,
    KafkaClusterState,
    OptimizationResult,
    PartitionLoads,
    ProgressResponse,
    UserTasks,
)
from services.adapters.cruise_control.warm_up import SUBSTATES as WARM_UP_SUBSTATES
from services.adapters.cruise_control.warm_up import warming_up as warm_up_reason
from services.common.logging import get_logger
from services.common.metrics import cruise_control_request
from services.common.settings import CruiseControlSettings
from services.adapters.cruise_control.topic_names import topic_regex

log = get_logger(__name__)

USER_TASK_ID = "User-Task-ID"


HttpClient = TypeVar("HttpClient", httpx.Client, httpx.AsyncClient)


def without_session(http: HttpClient) -> HttpClient:
    """An HTTP client that keeps no cookie: Cruise Control's session cookie would turn a repeated request into the
    session's old answer (any client asking Cruise Control again and again needs this: tests, tools)."""
    http.cookies.jar.set_policy(DefaultCookiePolicy(allowed_domains=[]))
    return http


@dataclass(frozen=True)
class Submission:
    """A request Cruise Control accepted: its task id, and the result if it was ready (200) rather than 202."""

    task_id: str
    result: OptimizationResult | None
    in_progress: bool


class CruiseControlClient:
    def __init__(self, settings: CruiseControlSettings, *, service: str | None = None,
                 transport: httpx.AsyncBaseTransport | None = None) -> None:
        """``service``: whose share of Cruise Control's user tasks this client holds (``user_task_shares``); None:
        no budget (a one-off client: the CLI, a benchmark, a test)."""
        self.settings = settings
        share = settings.user_task_shares.get(service) if service is not None else None
        self.budget = TaskBudget(share, retention_s=settings.task_scanner_period_s) if share else None
        # Set by an answer of a Cruise Control warming up: until its state says it is warm, nothing is submitted.
        self._warming_up = False
        # Tasks answered 202 (still computing), with the request that asks for their answer again (``follow``).
        self._computing: dict[str, _Asked] = {}
        auth = None
        if settings.auth_enabled and settings.username and settings.password:
            auth = httpx.BasicAuth(settings.username, settings.password.get_secret_value())
        verify: ssl.SSLContext | bool = True
        if settings.ssl_enabled and settings.ca_file:
            verify = ssl.create_default_context(cafile=str(settings.ca_file))
        self._http = httpx.AsyncClient(
            base_url=settings.base_url,
            auth=auth,
            verify=verify,
            timeout=httpx.Timeout(settings.timeout_s, connect=min(settings.timeout_s, 10.0)),
            transport=transport,
            headers={"Accept": "application/json"},
        )
        without_session(self._http)

    @property
    def can_ask_now(self) -> bool:
        """A request now would not wait for this service's share of Cruise Control's user tasks."""
        return self.budget is None or self.budget.free

    @property
    def computing(self) -> list[str]:
        """The tasks Cruise Control answered 202 that no answer has ended yet, each holding a user-task slot (one
        the budget gave up on is forgotten here too)."""
        if self.budget is not None:
            for task_id in [t for t in self._computing if not self.budget.holds(t)]:
                del self._computing[task_id]
        return list(self._computing)

    async def follow(self, task_id: str) -> Submission:
        """Ask again for the answer of a task answered 202: the same request naming the task in ``User-Task-ID``,
        which makes no new task. A share held by a computing task has no slot left for anything else (a look at
        ``user_tasks`` is a task too), so this is how its holder learns the answer and gets the slot back."""
        asked = self._computing[task_id]
        return _submission(await self._send(asked.method, asked.path, params=asked.params, json_body=asked.json_body,
                                            headers={USER_TASK_ID: task_id}))

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> CruiseControlClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # -- endpoints ---------------------------------------------------------------------------------------------

    async def topic_configuration(
        self,
        topics_by_replication_factor: Mapping[int, Iterable[str]],
        *,
        dryrun: bool = False,
        reason: str | None = None,
        goals: Iterable[str] | None = None,
        skip_hard_goal_check: bool = False,
        excluded_topics: str | None = None,
        replication_throttle: int | None = None,
        verbose: bool = False,
    ) -> Submission:
        """One request for many replication-factor changes, grouped by target RF (the JSON-body form). ``goals``,
        ``skip_hard_goal_check`` and ``excluded_topics`` (a regex) shape the optimization Cruise Control runs after
        adding or dropping the replicas; by default it optimizes the whole cluster with its default goals."""
        body = {
            "replication_factor": {
                "topic_by_replication_factor": {
                    str(rf): topic_regex(topics) for rf, topics in sorted(topics_by_replication_factor.items())
                }
            }
        }
        params: dict[str, Any] = {
            "skip_rack_awareness_check": _flag(not self.settings.rack_enabled),
            "dryrun": _flag(dryrun),
            "json": "true",
        }
        if reason:
            params["reason"] = reason
        if goals:
            params["goals"] = ",".join(goals)
        if skip_hard_goal_check:
            params["skip_hard_goal_check"] = "true"
        if excluded_topics:
            params["excluded_topics"] = excluded_topics
        if replication_throttle:
            params["replication_throttle"] = replication_throttle
        if verbose:
            params["verbose"] = "true"
        response = await self._send("POST", "topic_configuration", params=params, json_body=body)
        return _submission(response)

    async def rebalance(self, options: OptimizationOptions | None = None, *, dryrun: bool = True,
                        task_id: str | None = None) -> Submission:
        """A full rebalance (``rebalance_disk`` moves between a broker's disks instead, and takes no goals)."""
        return await self._optimize("rebalance", options or OptimizationOptions(), dryrun, task_id)

    async def add_broker(self, brokers: Iterable[int], options: OptimizationOptions | None = None, *,
                         dryrun: bool = True, task_id: str | None = None) -> Submission:
        """Move replicas onto ``brokers`` (newly added) only."""
        return await self._optimize("add_broker", options or OptimizationOptions(), dryrun, task_id, brokers)

    async def remove_broker(self, brokers: Iterable[int], options: OptimizationOptions | None = None, *,
                            dryrun: bool = True, task_id: str | None = None) -> Submission:
        """Move every replica off ``brokers`` (to be removed)."""
        return await self._optimize("remove_broker", options or OptimizationOptions(), dryrun, task_id, brokers)

    async def fix_offline_replicas(self, options: OptimizationOptions | None = None, *, dryrun: bool = True,
                                   task_id: str | None = None) -> Submission:
        """Move the replicas on dead brokers and failed disks to healthy ones."""
        return await self._optimize("fix_offline_replicas", options or OptimizationOptions(), dryrun, task_id)

    async def remove_disks(self, log_dirs: Mapping[int, Iterable[str]], *, dryrun: bool = True,
                           reason: str | None = None, task_id: str | None = None) -> Submission:
        """Move every replica off these log directories onto the other disks of the same broker
        (``brokerid_and_logdirs``; the endpoint takes no goals, throttle or concurrency)."""
        pairs = [f"{broker}-{log_dir}" for broker in sorted(log_dirs) for log_dir in sorted(set(log_dirs[broker]))]
        if not pairs:
            raise ValueError("remove_disks needs at least one broker and log directory")
        params: dict[str, Any] = {"brokerid_and_logdirs": ",".join(pairs), "dryrun": _flag(dryrun), "json": "true"}
        if reason:
            params["reason"] = reason
        headers = {USER_TASK_ID: task_id} if task_id else None
        return _submission(await self._send("POST", "remove_disks", params=params, headers=headers))

    async def stop_proposal_execution(self) -> str:
        response = await self._send("POST", "stop_proposal_execution", params={"json": "true"})
        try:
            document = response.json()
        except ValueError:
            return response.text[:500]
        return str(document.get("message", "")) if isinstance(document, dict) else ""

    async def load(self, *, populate_disk_info: bool = False) -> BrokerLoads:
        """Per-broker load; with ``populate_disk_info`` each broker's log directories too."""
        params = {"json": "true", "populate_disk_info": _flag(populate_disk_info)}
        return _parse(BrokerLoads, await self._get("load", params))

    async def partition_load(self, *, topic: str | None = None, entries: int | None = None) -> PartitionLoads:
        """Per-partition load (largest disk first); ``topic`` a regex, ``entries`` the most records wanted."""
        params: dict[str, Any] = {"json": "true"}
        if topic:
            params["topic"] = topic
        if entries:
            params["entries"] = entries
        return _parse(PartitionLoads, await self._get("partition_load", params))

    async def _optimize(self, endpoint: str, options: OptimizationOptions, dryrun: bool, task_id: str | None,
                        brokers: Iterable[int] | None = None) -> Submission:
        """``task_id``: ask again for the result of that task (Cruise Control answers 202 while it computes)
        instead of starting a new one."""
        params: dict[str, Any] = {**options.params(endpoint), "dryrun": _flag(dryrun), "json": "true"}
        if brokers is not None:
            ids = sorted(set(brokers))
            if not ids:
                raise ValueError(f"{endpoint} needs at least one broker id")
            params["brokerid"] = ",".join(map(str, ids))
        headers = {USER_TASK_ID: task_id} if task_id else None
        return _submission(await self._send("POST", endpoint, params=params, headers=headers))

    async def user_tasks(
        self,
        task_ids: Iterable[str] | None = None,
        *,
        endpoints: str | None = None,
        fetch_completed_task: bool = False,
    ) -> UserTasks:
        params: dict[str, Any] = {"json": "true", "fetch_completed_task": _flag(fetch_completed_task)}
        ids = sorted(set(task_ids or ()))
        if ids:
            params["user_task_ids"] = ",".join(ids)
        if endpoints:
            params["endpoints"] = endpoints
        try:
            return _parse(UserTasks, await self._get("user_tasks", params))
        except RequestRejected as exc:
            if not fetch_completed_task:
                raise
            # Cruise Control cannot always serialize a failed task's result (on Java 17 without
            # --add-opens java.base/java.lang it answers 500 for any task that failed): the tasks without it.
            log.warning("user_tasks with fetch_completed_task failed; asking without the tasks' results",
                        error=exc.message)
            return await self.user_tasks(ids, endpoints=endpoints)

    async def state(self, substates: str | None = None, *, verbose: bool = False) -> CruiseControlState:
        params: dict[str, Any] = {"json": "true", "verbose": _flag(verbose)}
        if substates:
            params["substates"] = substates
        return _parse(CruiseControlState, await self._get("state", params))

    async def kafka_cluster_state(self) -> KafkaClusterState:
        return _parse(KafkaClusterState, await self._get("kafka_cluster_state", {"json": "true"}))

    # -- plumbing ----------------------------------------------------------------------------------------------

    async def _get(self, path: str, params: dict[str, Any]) -> httpx.Response:
        # GETs are idempotent: ride out a short blip before reporting Cruise Control unreachable.
        async for attempt in AsyncRetrying(
            retry=retry_if_exception_type(ConnectionFailed),
            stop=stop_after_attempt(3),
            wait=wait_exponential(multiplier=0.2, max=1.0),
            reraise=True,
        ):
            with attempt:
                return await self._send("GET", path, params=params)
        raise AssertionError("unreachable")  # pragma: no cover

    async def _send(
        self, method: str, path: str, *, params: dict[str, Any], json_body: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
    ) -> httpx.Response:
        following = (headers or {}).get(USER_TASK_ID)
        if self._warming_up and method == "POST" and not following:
            # Wait for the warm-up rather than submit into it: a request now would only be refused.
            if reason := await self._warm_up_reason():
                raise ClusterModelNotReady(f"Cruise Control is warming up ({reason})")
            self._warming_up = False
        try:
            response = await self._request(method, path, params=params, json_body=json_body, headers=headers)
        except CruiseControlError as exc:
            self._computing.pop(following or "", None)
            if following and self.budget is not None:
                # Forgotten, or its answer lost: the caller asks anew, so the task no longer holds a slot here.
                self.budget.answered(following)
            if (may_be_warm_up(exc) or isinstance(exc, ClusterModelNotReady)) \
                    and (reason := await self._warm_up_reason()):
                self._warming_up = True
                raise warming_up(exc, reason) from exc
            if isinstance(exc, ClusterModelNotReady):
                self._warming_up = True
            raise
        if following and response.status_code != 202:
            self._computing.pop(following, None)
            if self.budget is not None:
                self.budget.answered(following)
        elif response.status_code == 202 and (task_id := response.headers.get(USER_TASK_ID)):
            self._computing[task_id] = _Asked(method, path, params, json_body)
        return response

    async def _warm_up_reason(self) -> str | None:
        """Why Cruise Control cannot answer from a load model yet (its own state says), or None."""
        try:
            return warm_up_reason(await self.state(WARM_UP_SUBSTATES))
        except CruiseControlError as exc:
            log.info("cannot ask Cruise Control whether it is warming up", error=exc.message)
            return None

    async def _request(
        self, method: str, path: str, *, params: dict[str, Any], json_body: dict[str, Any] | None,
        headers: dict[str, str] | None,
    ) -> httpx.Response:
        """One request; a new user task takes a slot of the budget (one naming a task in ``User-Task-ID`` asks about
        that task, and makes none)."""
        if self.budget is None or (headers or {}).get(USER_TASK_ID):
            return await self._exchange(method, path, params=params, json_body=json_body, headers=headers)
        async with self.budget.new_task() as slot:
            response = await self._exchange(method, path, params=params, json_body=json_body, headers=headers)
            if response.status_code == 202 and (task_id := response.headers.get(USER_TASK_ID)):
                slot.computing(task_id)
            return response

    async def _exchange(
        self, method: str, path: str, *, params: dict[str, Any], json_body: dict[str, Any] | None,
        headers: dict[str, str] | None,
    ) -> httpx.Response:
        try:
            with cruise_control_request(path, method) as answered:
                response = await self._http.request(method, path, params=params, json=json_body, headers=headers)
                answered(response.status_code)
        except httpx.TimeoutException as exc:
            raise ConnectionFailed(f"Connection failed: Cruise Control did not answer in time ({exc!r})") from exc
        except httpx.TransportError as exc:
            raise ConnectionFailed(f"Connection failed: {exc}") from exc
        except httpx.HTTPError as exc:
            raise MalformedAnswer(f"Cruise Control's answer could not be read: {type(exc).__name__}: {exc}") from exc
        if response.status_code in (200, 202):
            return response
        raise _error_from(response)


@dataclass(frozen=True)
class _Asked:
    method: str
    path: str
    params: dict[str, Any]
    json_body: dict[str, Any] | None


def _submission(response: httpx.Response) -> Submission:
    task_id = response.headers.get(USER_TASK_ID)
    if not task_id:
        raise MalformedAnswer("Cruise Control accepted the request but sent no User-Task-ID header",
                              status_code=response.status_code)
    if response.status_code == 202:
        return Submission(task_id=task_id, result=None, in_progress=True)
    return Submission(task_id=task_id, result=_parse(OptimizationResult, response), in_progress=False)


def _flag(value: bool) -> str:
    return "true" if value else "false"


def _error_from(response: httpx.Response) -> CruiseControlError:
    message = ""
    try:
        message = ErrorResponse.model_validate(response.json()).error_message
    except (ValueError, ValidationError):
        message = response.text[:500]
    return classify(response.status_code, message)


def _parse(model: type, response: httpx.Response) -> Any:
    if response.status_code == 202:
        try:
            progress = ProgressResponse.model_validate(response.json())
            steps = ", ".join(s.step for op in progress.progress for s in op.operation_progress)
        except (ValueError, ValidationError):
            steps = ""
        raise StillComputing(f"Cruise Control is still working on the request ({steps or 'pending'})")
    try:
        return model.model_validate(response.json())
    except (ValueError, ValidationError) as exc:
        raise MalformedAnswer(
            f"unexpected answer from Cruise Control {response.request.url.path}: {exc}",
            status_code=response.status_code,
        ) from exc


def parse_document(model: type, document: str | bytes | dict[str, Any]) -> Any:
    """Parse a stored Cruise Control answer (tests use the recorded responses)."""
    data = json.loads(document) if isinstance(document, str | bytes) else document
    return model.model_validate(data)
