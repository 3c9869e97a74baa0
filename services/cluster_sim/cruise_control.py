"""The simulated Cruise Control: every request a user task (``user_tasks.py``), dispatched to what its endpoint does
(``endpoints.py``), with an executor (``executor.py``) and a warm-up after each (re)start (``warm_up.py``).

What it reproduces is what the real one does (``shared/reference/cruise-control-real``, held to by
``tests/unit/test_cruise_control_fidelity.py``): every request a user task with its ``User-Task-ID``, the session's
cached answer to a repeated request, the servlet-capacity refusal, the 202 progress answer while a proposal is
computed and the same task's answer when asked again with its id; tasks Active -> InExecution -> Completed /
CompletedWithError; one execution at a time; a warm-up after a (re)start (NotEnoughValidWindows, then refusals about
topics and brokers its model does not hold yet); ``"DEAD"`` for offline log directories; a stop that lets the
movements in flight finish (STOPPING_EXECUTION until they have); brokers removed kept out of later proposals; every
task and session forgotten on restart.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import Any

from services.cluster_sim import endpoints, proposals, responses
from services.cluster_sim.backend import Backend
from services.cluster_sim.endpoints import Operation
from services.cluster_sim.execution import Execution
from services.cluster_sim.executor import Executor
from services.cluster_sim.proposals import CruiseControlFailure
from services.cluster_sim.request import Request, RequestError, UserRequestError, refusal_body
from services.cluster_sim.tuning import SimTuning
from services.cluster_sim.user_tasks import SYNC_ENDPOINTS, ServletFull, SimTask, UnexpectedHeader, UserTaskManager, request_key
from services.cluster_sim.warm_up import WarmUp
from services.adapters.admin.port import AdminError
from services.common.logging import get_logger

log = get_logger(__name__)

# What the 202 progress answer calls each endpoint's operation (the others are named by their endpoint).
OPERATION_NAMES = {"topic_configuration": "Topic configuration", "rebalance": "Rebalance", "add_broker": "Add brokers",
                   "remove_broker": "Remove brokers", "remove_disks": "Remove disks",
                   "fix_offline_replicas": "Fix offline replicas", "proposals": "Get customized proposals"}


@dataclass
class Reply:
    status: int
    body: dict[str, Any]
    task_id: str | None = None
    new_session: str | None = None  # a cookie to set


def _log_failure(refresh: asyncio.Future[None]) -> None:
    """The end of a model read no request waited for."""
    if not refresh.cancelled() and (error := refresh.exception()) is not None:
        log.warning("cannot read the cluster; keeping the last model", error=str(error))


class SimCruiseControl:
    def __init__(self, backend: Backend, tuning: SimTuning | None = None) -> None:
        self.backend = backend
        self.cluster = backend.cluster
        self.load = backend.load
        self._tuning = tuning or SimTuning()
        self.tasks = UserTaskManager(self._tuning)
        self.warm_up = WarmUp(length_s=self._tuning.warmup_s)
        self._background: set[asyncio.Task[None]] = set()
        self.executor = Executor(backend, tuning=lambda: self.tuning, tasks=lambda: self.tasks, spawn=self._spawn)
        self.requests_served = 0

    @property
    def tuning(self) -> SimTuning:
        return self._tuning

    @tuning.setter
    def tuning(self, tuning: SimTuning) -> None:
        self._tuning = self.tasks.limits = tuning

    @property
    def execution(self) -> Execution | None:
        """The execution in progress, if any."""
        return self.executor.execution

    # -- lifecycle ---------------------------------------------------------------------------------------------

    def restart(self, warmup_s: float | None = None) -> None:
        """Forget every task and session, as a restarted Cruise Control does, and warm up again. Reassignments already
        handed to Kafka still finish in the cluster; nobody reports on them any more."""
        t = self.tuning
        t.warmup_s = t.restart_warmup_s if warmup_s is None else warmup_s
        self.tasks = UserTaskManager(t)
        self.warm_up = WarmUp(length_s=t.warmup_s)
        self.executor.forget()

    def started(self) -> None:
        """Back up after a restart: the warm-up counts from here, as metric sampling restarts then."""
        self.warm_up = WarmUp(length_s=self.tuning.warmup_s)

    async def refresh_model(self, max_age_s: float = 0.0, *, within_s: float | None = None) -> None:
        """Cruise Control's view of the cluster before it answers: a real backend's model is read again unless it is
        younger than ``max_age_s``; the in-memory one is always current. With ``within_s``, a read that takes longer
        goes on in the background and the answer is the last model's, as Cruise Control answers its state from the
        metadata it has without asking Kafka (a fresh clone's run: the compose stack's doctor found no answer in
        10 s while Kafka was slow to answer the simulator)."""
        if not self.backend.real:
            return
        refreshing = asyncio.ensure_future(self.backend.refresh(max_age_s))
        try:
            await (refreshing if within_s is None else asyncio.wait_for(asyncio.shield(refreshing), within_s))
        except TimeoutError:
            log.info("the cluster is slow to answer; answering from the last model", waited_s=within_s)
            refreshing.add_done_callback(_log_failure)
        except AdminError as exc:  # as Cruise Control does, answer from the last metadata it has
            log.warning("cannot read the cluster; using the last model", error=str(exc))

    def _spawn(self, coro: Any) -> asyncio.Task[None]:
        task = asyncio.get_running_loop().create_task(coro)
        self._background.add(task)
        task.add_done_callback(self._background.discard)
        return task

    @property
    def warm(self) -> bool:
        return self.warm_up.done

    # -- requests ----------------------------------------------------------------------------------------------

    async def handle(self, request: Request) -> Reply:
        """Every endpoint: parameters read (400 with the reason), the request's task found or made (500 when the
        servlet is full or the User-Task-ID names no task of this request), then its answer, or 202 while it is
        still computing."""
        session, new = self.tasks.session(request.session)
        reply = await self._handle(request, session)
        reply.new_session = session if new else None
        return reply

    async def _handle(self, request: Request, session: str) -> Reply:
        try:
            operation = endpoints.operation(self, request)
        except (UserRequestError, RequestError) as refused:
            return Reply(*refusal_body(refused))
        asynchronous = request.endpoint not in SYNC_ENDPOINTS
        key = request_key(request.method, request.path, request.params)
        try:
            task = self.tasks.existing(request.task_header, session, key, asynchronous)
            if task is None:
                task = self.tasks.create(request.endpoint, key, request.request_url, request.client, session,
                                         asynchronous)
                self._spawn(self._perform(task, operation))
        except (ServletFull, UnexpectedHeader) as refused:
            exception = "java.lang.RuntimeException" if isinstance(refused, ServletFull) \
                else "java.lang.IllegalArgumentException"
            return Reply(500, responses.request_error(request.method, request.endpoint, str(refused), exception))
        except RequestError as refused:
            return Reply(500, responses.request_error(request.method, request.endpoint, str(refused),
                                                      "java.lang.IllegalArgumentException"))
        try:
            await asyncio.wait_for(asyncio.shield(task.ready.wait()), timeout=self.tuning.max_block_s)
        except TimeoutError:
            elapsed = int(time.time() * 1000) - task.start_ms
            return Reply(202, responses.progress_body(OPERATION_NAMES.get(request.endpoint, request.endpoint),
                                                      elapsed), task.id)
        assert task.answer is not None
        status, body = task.answer
        return Reply(status, body, task.id)

    async def _perform(self, task: SimTask, operation: Operation) -> None:
        try:
            await operation(task)
        except CruiseControlFailure as refused:
            task.finish(refused.status, refused.body, time.monotonic())
        except Exception as exc:  # noqa: BLE001 - a bug answers 500, as an exception in a servlet does
            log.exception("simulated Cruise Control failed on a request", endpoint=task.endpoint)
            task.finish(500, responses.error_body("POST", task.endpoint, str(exc), "java.lang.IllegalStateException"),
                        time.monotonic())

    # -- the executor and the whole, as ``state`` and ``stop_proposal_execution`` answer ---------------------------

    def stop_execution(self, *, force: bool = False) -> dict[str, Any]:
        """stop_proposal_execution: answered at once; what is in flight finishes (``Executor.stop``)."""
        return self.executor.stop(force=force)

    def executor_state(self, verbose: bool = False) -> dict[str, Any]:
        return self.executor.state(verbose)

    def state(self, wanted: set[str] | None = None, *, verbose: bool = False) -> dict[str, Any]:
        partitions = sum(len(t.partitions) for t in self.cluster.topics.values())
        body = responses.cruise_control_state(executor=self.executor_state(verbose), warm_up=self.warm_up.phase,
                                              loaded=self.warm_up.progress() / 0.12, num_partitions=partitions,
                                              goals=proposals.DEFAULT_GOALS)
        return {k: v for k, v in body.items() if wanted is None or k in wanted or k == "version"}
