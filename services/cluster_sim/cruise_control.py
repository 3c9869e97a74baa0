"""The simulated Cruise Control: its endpoints over user tasks (``user_tasks.py``) and an executor.

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
import re
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from services.cluster_sim import optimizer, proposals, responses
from services.cluster_sim.backend import Backend
from services.cluster_sim.execution import INTRA_BROKER_CONCURRENCY, Execution
from services.cluster_sim.model import Proposal
from services.cluster_sim.proposals import CruiseControlFailure, failure, java_collection
from services.cluster_sim.request import (
    Params,
    RequestError,
    UserRequestError,
    broker_and_logdirs,
    concurrency,
    dryrun,
    refusal_body,
    replication_factors,
    substates,
    throttle,
)
from services.cluster_sim.user_tasks import SYNC_ENDPOINTS, ServletFull, SimTask, UnexpectedHeader, UserTaskManager, request_key
from services.common.admin.port import AdminError
from services.common.logging import get_logger
from services.placement.model import PlacementError

log = get_logger(__name__)

OPERATIONS = {"topic_configuration": "Topic configuration", "rebalance": "Rebalance", "add_broker": "Add brokers",
              "remove_broker": "Remove brokers", "remove_disks": "Remove disks",
              "fix_offline_replicas": "Fix offline replicas", "proposals": "Get customized proposals"}
NOT_ENOUGH_WINDOWS = "com.linkedin.cruisecontrol.exception.NotEnoughValidWindowsException"
ONGOING = ("Cannot start a new execution while there is an ongoing execution. Please use stop_ongoing_execution=true "
           "to stop ongoing execution and start a new one.")
REMOVAL_HISTORY_S = 14 * 24 * 3600.0  # removal.history.retention.time.ms


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


@dataclass
class Reply:
    status: int
    body: dict[str, Any]
    task_id: str | None = None
    new_session: str | None = None  # a cookie to set


# What a parsed request does, once it has its task: it answers through ``task.finish`` (or raises a failure).
Operation = Callable[[SimTask], Awaitable[None]]


@dataclass
class SimTuning:
    time_scale: float = 60.0  # simulated seconds per real second
    replica_bandwidth_mb_s: float = 100.0  # simulated throttle per execution
    min_execution_s: float = 0.5  # real seconds; long enough to be seen InExecution
    proposal_s: float = 0.1  # real seconds a task stays Active computing its proposal
    max_block_s: float = 10.0  # webserver.request.maxBlockTimeMs: how long a request waits before answering 202
    warmup_s: float = 0.0  # the warm-up at the next (re)start
    restart_warmup_s: float = 30.0  # the warm-up after a restart that names none (the real one's: about 30 s)
    max_active_user_tasks: int = 5
    task_scanner_period_s: float = 5.0  # how often finished tasks leave the active ones
    session_expiry_s: float = 60.0  # webserver.session.maxExpiryTimeMs
    execution_check_s: float = 0.5  # execution.progress.check.interval.ms (real backend)
    movements_per_broker: int = 5  # num.concurrent.partition.movements.per.broker (real backend)


@dataclass
class WarmUp:
    """A (re)start's warm-up, as the real one's was measured (shared/reference/cruise-control-real, issue 28):

    - ``metadata`` (its first 12 %): the metadata holds only the bootstrap servers, so no topic matches a pattern, no
      broker exists, and the load model meets broker ids -1..-N ("The broker id(-1) should be non-negative");
    - ``windows`` (to 40 %): no valid metric window yet: what needs the load model answers NotEnoughValidWindows;
    - ``stale`` (to the end): everything answers, but ``state`` does not say so yet (its partition counts are refreshed
      every 30 s): monitor RUNNING with no partition covered, no proposal ready;
    - ``warm``."""

    started_at: float = field(default_factory=time.monotonic)
    length_s: float = 0.0

    def progress(self) -> float:
        return 1.0 if self.length_s <= 0 else min(1.0, (time.monotonic() - self.started_at) / self.length_s)

    @property
    def phase(self) -> str:
        progress = self.progress()
        return "warm" if progress >= 1.0 else "metadata" if progress < 0.12 else "windows" if progress < 0.4 \
            else "stale"

    @property
    def done(self) -> bool:
        return self.phase == "warm"


class SimCruiseControl:
    def __init__(self, backend: Backend, tuning: SimTuning | None = None) -> None:
        self.backend = backend
        self.cluster = backend.cluster
        self.load = backend.load
        self._tuning = tuning or SimTuning()
        self.tasks = UserTaskManager(self._tuning)
        self.warm_up = WarmUp(length_s=self._tuning.warmup_s)
        self.execution: Execution | None = None
        self._execution_task: SimTask | None = None
        self._runner: asyncio.Task[None] | None = None
        self._background: set[asyncio.Task[None]] = set()
        self.requests_served = 0
        # Executions a restart orphaned: their reassignments are still running in Kafka.
        self.orphaned = 0
        # Brokers a remove_broker execution emptied, and when (kept out of later proposals for the retention).
        self.removed_brokers: dict[int, float] = {}

    @property
    def tuning(self) -> SimTuning:
        return self._tuning

    @tuning.setter
    def tuning(self, tuning: SimTuning) -> None:
        self._tuning = self.tasks.limits = tuning

    # -- lifecycle ---------------------------------------------------------------------------------------------

    def restart(self, warmup_s: float | None = None) -> None:
        """Forget every task and session, as a restarted Cruise Control does, and warm up again. Reassignments already
        handed to Kafka still finish in the cluster; nobody reports on them any more."""
        t = self.tuning
        t.warmup_s = t.restart_warmup_s if warmup_s is None else warmup_s
        self.tasks = UserTaskManager(t)
        self.warm_up = WarmUp(length_s=t.warmup_s)
        self.removed_brokers.clear()
        if self.execution is not None:
            orphan = self.execution
            self.execution = self._execution_task = None
            if self._runner is not None:
                self._runner.cancel()
            self._spawn(self._finish_orphan(orphan))

    def started(self) -> None:
        """Back up after a restart: the warm-up counts from here, as metric sampling restarts then."""
        self.warm_up = WarmUp(length_s=self.tuning.warmup_s)

    async def _finish_orphan(self, orphan: Execution) -> None:
        self.orphaned += 1
        try:
            await orphan.finish_orphaned()
        finally:
            self.orphaned -= 1

    async def refresh_model(self, max_age_s: float = 0.0) -> None:
        """Cruise Control's view of the cluster before it answers: a real backend's model is read again unless it is
        younger than ``max_age_s``; the in-memory one is always current."""
        if self.backend.real:
            try:
                await self.backend.refresh(max_age_s)
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
            operation = self._operation(request)
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
            return Reply(202, responses.progress_body(OPERATIONS.get(request.endpoint, request.endpoint), elapsed),
                         task.id)
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

    def _operation(self, request: Request) -> Operation:
        """The request's parameters read (raising what Cruise Control answers 400), and what its task does."""
        query, endpoint = request.query, request.endpoint
        if endpoint == "topic_configuration":
            return self._topic_configuration(query, request.body)
        if endpoint in ("rebalance", "add_broker", "remove_broker", "fix_offline_replicas"):
            return self._optimization(endpoint, query)
        if endpoint == "remove_disks":
            return self._remove_disks(query)
        if endpoint == "proposals":
            return self._proposals(query)
        if endpoint == "stop_proposal_execution":
            return self._answer(lambda: self.stop_execution(force=query.boolean("force_stop", False)))
        if endpoint == "user_tasks":
            return self._user_tasks(query)
        if endpoint == "state":
            wanted, verbose = substates(query), query.boolean("verbose", False)
            return self._answer(lambda: self.state(wanted, verbose=verbose), refresh=1.0)
        if endpoint == "kafka_cluster_state":
            verbose = query.boolean("verbose", False)
            return self._answer(lambda: responses.kafka_cluster_state(self.cluster, verbose=verbose), refresh=1.0)
        if endpoint == "load":
            disk_info = query.boolean("populate_disk_info", False)
            return self._answer(lambda: responses.broker_load(self.cluster, self.load, disk_info=disk_info),
                                refresh=1.0, needs_model="load", advance_load=True)
        if endpoint == "partition_load":
            params = {k: v for k, v in ((name, query.get(name)) for name in ("topic", "resource", "entries"))
                      if v is not None}
            try:
                re.compile(params.get("topic", ""))
            except re.error as exc:
                raise RequestError(str(exc)) from None
            if (entries := query.integer("entries")) is not None and entries <= 0:
                raise UserRequestError(f"The requested entries must be positive (Requested: {entries}).")
            return self._answer(lambda: responses.partition_load(self.load, params), refresh=1.0,
                                needs_model="partition_load", advance_load=True)
        raise UserRequestError(f"Unsupported endpoint {endpoint}")

    def _answer(self, compute: Callable[[], dict[str, Any]], *, refresh: float | None = None,
                needs_model: str | None = None, advance_load: bool = False) -> Operation:
        """An operation answered at once from the model (``needs_model``: refused while warming up)."""
        async def operation(task: SimTask) -> None:
            if advance_load:
                self.load.advance()
            if refresh is not None:
                await self.refresh_model(refresh)
            if needs_model:
                self._check_windows(needs_model, method="GET")
            task.finish(200, compute(), time.monotonic())
        return operation

    # -- proposals and executions ------------------------------------------------------------------------------

    def _topic_configuration(self, query: Params, body: Any) -> Operation:
        run_dryrun = dryrun(query)
        by_rf = replication_factors(query, body)
        skip_rack = query.boolean("skip_rack_awareness_check", False)
        options = self._execution_options(query)
        excluded_regex = query.get("excluded_topics") or None
        verbose = query.boolean("verbose", False)

        async def operation(task: SimTask) -> None:
            await self._queued()
            goals = proposals.parse_goals("topic_configuration", query)
            excluded = proposals.excluded(self.cluster, excluded_regex)

            def propose() -> Proposal:
                return Proposal(proposals.replication_factor_change(
                    self.cluster, by_rf, skip_rack_awareness_check=skip_rack, goals=goals, excluded_topics=excluded,
                    model_holds_topics=self.warm_up.phase != "metadata"))
            await self._run(task, "topic_configuration", propose, run_dryrun, goals, excluded=excluded,
                            verbose=verbose, **options)
        return operation

    def _optimization(self, endpoint: str, query: Params) -> Operation:
        """``rebalance``, ``add_broker``, ``remove_broker`` and ``fix_offline_replicas``: a proposal from the
        optimizer, executed unless ``dryrun`` (true by default, as in Cruise Control)."""
        run_dryrun = dryrun(query)
        requested = sorted(set(query.integers("brokerid"))) if endpoint in ("add_broker", "remove_broker") else []
        if endpoint in ("add_broker", "remove_broker") and not requested:
            raise UserRequestError(f"Target broker ID is not provided for {endpoint.upper()} request")
        disk = endpoint == "rebalance" and query.boolean("rebalance_disk", False)
        if disk and query.strings("goals"):  # ParameterUtils.getGoals
            raise UserRequestError("Rebalance disk mode does not support explicitly specifying goals in request.")
        if disk and query.boolean("kafka_assigner", False):
            raise UserRequestError("Kafka assigner mode and rebalance disk mode cannot be set the at the same time.")
        options = self._execution_options(query)
        excluded_regex = query.get("excluded_topics") or None
        verbose = query.boolean("verbose", False)

        async def operation(task: SimTask) -> None:
            await self._queued()
            await self.refresh_model(0.5)  # a broker that has just joined must be known
            brokers = self._check_brokers(endpoint, requested)
            # With rebalance_disk, Cruise Control optimizes with the intra-broker goals only.
            goals = optimizer.INTRA_BROKER_GOALS if disk else proposals.parse_goals(endpoint, query)
            excluded = proposals.excluded(self.cluster, excluded_regex)

            def propose() -> Proposal:
                if disk:
                    return Proposal(intra=optimizer.propose_disk_balance(self.cluster, self.load))
                if endpoint == "fix_offline_replicas":
                    return Proposal(proposals.fix_offline(self.cluster))
                try:
                    return Proposal(optimizer.propose(self.cluster, endpoint, brokers, excluded_regex,
                                                      avoid=self._recently_removed(exclude=brokers)))
                except (PlacementError, re.error) as exc:
                    raise failure(endpoint, str(exc), "java.lang.IllegalStateException") from None
            await self._run(task, endpoint, propose, run_dryrun, goals, verbose=verbose, excluded=excluded,
                            leaving=brokers if endpoint == "remove_broker" else None, **options)
        return operation

    def _remove_disks(self, query: Params) -> Operation:
        """``remove_disks``: every replica off the named log directories, onto the other disks of the same broker
        (``RemoveDisksRunnable``: IntraBrokerDiskCapacityGoal only, one intra-broker movement per broker at a time)."""
        run_dryrun = dryrun(query)
        removal = broker_and_logdirs(query)

        async def operation(task: SimTask) -> None:
            await self._queued()
            await self.refresh_model(0.5)
            if unknown := sorted(b for b in removal if b not in self.cluster.alive_ids):
                raise failure("remove_disks", f"Broker {java_collection(unknown)} does not exist.",
                              "java.lang.IllegalArgumentException")

            def propose() -> Proposal:
                try:
                    return Proposal(intra=optimizer.propose_remove_disks(self.cluster, self.load, removal))
                except optimizer.DiskRemovalRefused as exc:
                    raise CruiseControlFailure(500, responses.error_body(
                        "POST", "remove_disks", str(exc), "java.lang.IllegalArgumentException")) from None
            await self._run(task, "remove_disks", propose, run_dryrun, ["IntraBrokerDiskCapacityGoal"],
                            intra_concurrency=1, removed_dirs=removal)
        return operation

    def _proposals(self, query: Params) -> Operation:
        """GET ``proposals``: the cached proposal of a full rebalance with the default goals."""
        verbose = query.boolean("verbose", False)
        excluded_regex = query.get("excluded_topics") or None

        async def operation(task: SimTask) -> None:
            await self._queued()
            goals = proposals.parse_goals("proposals", query)
            excluded = proposals.excluded(self.cluster, excluded_regex)

            def propose() -> Proposal:
                return Proposal(optimizer.propose(self.cluster, "rebalance", [], excluded_regex,
                                                  avoid=self._recently_removed()))
            await self._run(task, "proposals", propose, True, goals, verbose=verbose, excluded=excluded,
                            method="GET")
        return operation

    @staticmethod
    def _execution_options(query: Params) -> dict[str, Any]:
        return {"throttle": throttle(query), "concurrency": concurrency(query),
                "intra_concurrency": concurrency(query, "intra")}

    def _check_brokers(self, endpoint: str, brokers: list[int]) -> list[int]:
        """add_broker checks presence against the metadata's nodes, which are the alive brokers only
        (``sanityCheckBrokerPresence``: the set printed); remove_broker takes dead brokers too (their replicas go).
        While warming up, the model holds no broker yet."""
        if endpoint not in ("add_broker", "remove_broker"):
            return []
        known = set() if self.warm_up.phase == "metadata" else \
            (self.cluster.alive_ids if endpoint == "add_broker" else set(self.cluster.brokers))
        if unknown := sorted(b for b in brokers if b not in known):
            named = java_collection(unknown) if endpoint == "add_broker" else ", ".join(map(str, unknown))
            raise failure(endpoint, f"Broker {named} does not exist.", "java.lang.IllegalArgumentException")
        return brokers

    def _recently_removed(self, exclude: list[int] | None = None) -> set[int]:
        now = time.monotonic()
        return {b for b, at in self.removed_brokers.items()
                if now - at < REMOVAL_HISTORY_S and b not in (exclude or [])}

    async def _run(self, task: SimTask, endpoint: str, propose: Callable[[], Proposal], run_dryrun: bool,
                   goals: list[str], *, verbose: bool = False, throttle: int | None = None,
                   concurrency: int | None = None, leaving: list[int] | None = None,
                   intra_concurrency: int | None = None, excluded: set[str] | None = None,
                   removed_dirs: Mapping[int, set[str]] | None = None, method: str = "POST") -> None:
        """A proposal task: answered, and executed unless a dry run (refused at once while another execution runs)."""
        self._check_windows(endpoint, method=method)
        if not run_dryrun and (self.execution is not None or self.orphaned
                               or await self.backend.reassignments_in_progress()):
            raise CruiseControlFailure(500, responses.error_body(method, endpoint, ONGOING,
                                                                 "java.lang.IllegalStateException"))
        proposed = await self._propose(propose)
        avoided = self._recently_removed(exclude=leaving)
        result = responses.optimization_result(
            self.cluster, proposed.moves, goals=goals, verbose=verbose, leaving=leaving or (), intra=proposed.intra,
            excluded_topics=sorted(excluded or ()), excluded_brokers=sorted(avoided), load=self.load,
            removed_dirs=removed_dirs or {})
        if run_dryrun or not proposed:  # nothing moves, between brokers or directories
            task.finish(200, result, time.monotonic())
            return
        task.finish(200, result, time.monotonic())
        self.tasks.began_execution(task)
        self._start_execution(task, proposed, throttle, concurrency, intra_concurrency, leaving or [])

    async def _propose(self, propose: Callable[[], Proposal]) -> Proposal:
        """The proposal on a fresh view of the cluster. A real cluster's metadata may not show a topic created a
        moment ago yet (Cruise Control's own metadata lags the same way): asked again before giving up."""
        attempts = 4 if self.backend.real else 1
        for attempt in range(1, attempts + 1):
            await self.refresh_model()
            try:
                return propose()
            except CruiseControlFailure as refused:
                if attempt == attempts or "There is no topic in cluster matching" not in str(refused):
                    raise
                await asyncio.sleep(0.5)
        raise AssertionError("unreachable")

    async def _queued(self) -> None:
        """A proposal's task waits its turn before its request is even checked (it answers 202 meanwhile)."""
        await asyncio.sleep(self.tuning.proposal_s)

    def _check_windows(self, endpoint: str, *, method: str) -> None:
        """What needs the load model, while it cannot be built: bootstrap-only metadata, then no valid window."""
        phase = self.warm_up.phase
        if phase == "metadata" and endpoint != "topic_configuration":
            cause = "java.lang.IllegalArgumentException"
            raise CruiseControlFailure(500, responses.error_body(
                method, endpoint, "The broker id(-1) should be non-negative.",
                cause if endpoint in ("load", "partition_load") else f"{proposals.KCC}: {cause}"))
        if phase == "windows" and endpoint != "topic_configuration":
            partitions = sum(len(t.partitions) for t in self.cluster.topics.values())
            raise CruiseControlFailure(500, responses.error_body(
                method, endpoint,
                f"There are only 0 valid windows when aggregating in range [-1, {int(time.time() * 1000)}] for "
                "aggregation options (minValidEntityRatio=0.95, minValidEntityGroupRatio=0.00, minValidWindows=1, "
                f"numEntitiesToInclude={partitions}, granularity=ENTITY)",
                f"{proposals.KCC}: {NOT_ENOUGH_WINDOWS}"))

    # -- executor ----------------------------------------------------------------------------------------------

    def _start_execution(self, task: SimTask, proposal: Proposal, throttle_bytes_s: int | None,
                         concurrency: int | None, intra_concurrency: int | None, leaving: list[int]) -> None:
        t = self.tuning
        execution = self.backend.execution(
            task.id, proposal.moves, throttle_bytes_s, time_scale=t.time_scale,
            bandwidth_mb_s=t.replica_bandwidth_mb_s, min_execution_s=t.min_execution_s,
            check_interval_s=t.execution_check_s, movements_per_broker=concurrency or t.movements_per_broker,
            intra_moves=proposal.intra, intra_per_broker=intra_concurrency or INTRA_BROKER_CONCURRENCY)
        self.execution, self._execution_task = execution, task
        self._runner = self._spawn(self._execute(execution, task, leaving))

    async def _execute(self, execution: Execution, task: SimTask, leaving: list[int]) -> None:
        await execution.run()  # cancelled by a restart, which forgets the task
        if self.execution is execution:
            self.execution = self._execution_task = None
        if not execution.ended_with_error:
            now = time.monotonic()
            self.removed_brokers.update({b: now for b in leaving})
        self.tasks.finished_execution(task, with_error=execution.ended_with_error)

    def stop_execution(self, *, force: bool = False) -> dict[str, Any]:
        """stop_proposal_execution: answered at once. Movements not started are dropped; those in flight finish
        (the executor is STOPPING_EXECUTION until they have), and the task then ends CompletedWithError."""
        if self.execution is not None:
            self.execution.request_stop(force=force)
        return {"message": "Proposal execution stopped.", "version": 1}

    def executor_state(self, verbose: bool = False) -> dict[str, Any]:
        ex, task = self.execution, self._execution_task
        if ex is None or task is None:
            return {"state": "NO_TASK_IN_PROGRESS"}
        return ex.state(task.execution_reason(), verbose=verbose)

    # -- read-only endpoints -----------------------------------------------------------------------------------

    def _user_tasks(self, query: Params) -> Operation:
        """``UserTaskState``: active tasks first, then completed ones, each filter applied only when given; unknown
        endpoint names and task types are ignored (all of them unknown: no filter), ``entries`` caps the list."""
        from services.cluster_sim.request import ENDPOINT_NAMES

        ids = query.uuids("user_task_ids")
        clients = set(query.strings("client_ids"))
        endpoints = {e.upper() for e in query.strings("endpoints")} & ENDPOINT_NAMES
        types = set(query.strings("types")) & {"Active", "InExecution", "Completed", "CompletedWithError"}
        entries = query.integer("entries")
        if entries is not None and entries <= 0:
            raise UserRequestError(f"The requested entries must be positive (Requested: {entries}).")
        fetch = query.boolean("fetch_completed_task", False)

        def listing() -> dict[str, Any]:
            rows = [t.as_json(fetch) for t in self.tasks.all()
                    if (not ids or t.id in ids) and (not clients or t.client in clients)
                    and (not endpoints or t.endpoint.upper() in endpoints) and (not types or t.status in types)]
            return {"userTasks": rows[:entries] if entries is not None else rows, "version": 1}
        return self._answer(listing)

    def state(self, wanted: set[str] | None = None, *, verbose: bool = False) -> dict[str, Any]:
        partitions = sum(len(t.partitions) for t in self.cluster.topics.values())
        body = responses.cruise_control_state(executor=self.executor_state(verbose), warm_up=self.warm_up.phase,
                                              loaded=self.warm_up.progress() / 0.12, num_partitions=partitions,
                                              goals=proposals.DEFAULT_GOALS)
        return {k: v for k, v in body.items() if wanted is None or k in wanted or k == "version"}
