"""What each endpoint of the simulated Cruise Control does: ``ENDPOINTS`` (at the end) maps an endpoint to its reader.

A reader reads the request's parameters as the servlet does, raising what Cruise Control answers 400
(``UserRequestError``, ``RequestError``) before any user task exists, and returns the operation the request's task
then runs; the operation answers through ``task.finish`` or raises a ``CruiseControlFailure``. The endpoints that
propose take one course (``_propose_and_execute``): wait their turn, refuse while the load model cannot be built or
another execution runs, propose on a fresh model, answer, then execute unless a dry run.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Protocol

from services.cluster_sim import optimizer, proposals, responses
from services.cluster_sim.backend import Backend
from services.cluster_sim.executor import Executor
from services.cluster_sim.load import LoadModel
from services.cluster_sim.model import Cluster, Proposal
from services.cluster_sim.proposals import CruiseControlFailure, failure, java_collection
from services.cluster_sim.request import (
    ENDPOINT_NAMES,
    Params,
    Request,
    RequestError,
    UserRequestError,
    broker_and_logdirs,
    concurrency,
    dryrun,
    replication_factors,
    substates,
    throttle,
)
from services.cluster_sim.tuning import SimTuning
from services.cluster_sim.user_tasks import SimTask, UserTaskManager
from services.cluster_sim.warm_up import WarmUp
from services.placement.model import PlacementError


class CruiseControl(Protocol):
    """What an endpoint reads and drives of the simulated Cruise Control (``cruise_control.SimCruiseControl``, which
    dispatches each request here): its model, its tasks, its executor, its warm-up."""

    backend: Backend
    cluster: Cluster
    load: LoadModel
    tasks: UserTaskManager
    executor: Executor
    warm_up: WarmUp
    tuning: SimTuning

    async def refresh_model(self, max_age_s: float = 0.0, *, within_s: float | None = None) -> None: ...

    def stop_execution(self, *, force: bool = False) -> dict[str, Any]: ...

    def state(self, wanted: set[str] | None = None, *, verbose: bool = False) -> dict[str, Any]: ...


# What a parsed request does, once it has its task: it answers through ``task.finish`` (or raises a failure).
Operation = Callable[[SimTask], Awaitable[None]]
# An endpoint's parameters read, and the operation they ask for.
Reader = Callable[[CruiseControl, Request], Operation]


def operation(cc: CruiseControl, request: Request) -> Operation:
    """The request's parameters read (raising what Cruise Control answers 400), and what its task does."""
    read = ENDPOINTS.get(request.endpoint)
    if read is None:
        raise UserRequestError(f"Unsupported endpoint {request.endpoint}")
    return read(cc, request)


# -- answered from the model ---------------------------------------------------------------------------------------

# How long the state endpoint waits for a fresh model before it answers from the last one: health checks ask it.
STATE_WITHIN_S = 2.0


def _answer(cc: CruiseControl, compute: Callable[[], dict[str, Any]], *, refresh: float | None = None,
            refresh_within_s: float | None = None, needs_model: str | None = None,
            advance_load: bool = False) -> Operation:
    """An operation answered at once from the model (``needs_model``: refused while warming up)."""
    async def answer(task: SimTask) -> None:
        if advance_load:
            cc.load.advance()
        if refresh is not None:
            await cc.refresh_model(refresh, within_s=refresh_within_s)
        if needs_model:
            cc.warm_up.refuse_without_load_model(cc.cluster, needs_model, method="GET")
        task.finish(200, compute(), time.monotonic())
    return answer


def state(cc: CruiseControl, request: Request) -> Operation:
    query = request.query
    wanted, verbose = substates(query), query.boolean("verbose", False)
    return _answer(cc, lambda: cc.state(wanted, verbose=verbose), refresh=1.0, refresh_within_s=STATE_WITHIN_S)


def kafka_cluster_state(cc: CruiseControl, request: Request) -> Operation:
    verbose = request.query.boolean("verbose", False)
    return _answer(cc, lambda: responses.kafka_cluster_state(cc.cluster, verbose=verbose), refresh=1.0)


def load(cc: CruiseControl, request: Request) -> Operation:
    disk_info = request.query.boolean("populate_disk_info", False)
    return _answer(cc, lambda: responses.broker_load(cc.cluster, cc.load, disk_info=disk_info),
                   refresh=1.0, needs_model="load", advance_load=True)


def partition_load(cc: CruiseControl, request: Request) -> Operation:
    query = request.query
    params = {k: v for k, v in ((name, query.get(name)) for name in ("topic", "resource", "entries"))
              if v is not None}
    try:
        re.compile(params.get("topic", ""))
    except re.error as exc:
        raise RequestError(str(exc)) from None
    if (entries := query.integer("entries")) is not None and entries <= 0:
        raise UserRequestError(f"The requested entries must be positive (Requested: {entries}).")
    return _answer(cc, lambda: responses.partition_load(cc.load, params), refresh=1.0,
                   needs_model="partition_load", advance_load=True)


def user_tasks(cc: CruiseControl, request: Request) -> Operation:
    """``UserTaskState``: active tasks first, then completed ones, each filter applied only when given; unknown
    endpoint names and task types are ignored (all of them unknown: no filter), ``entries`` caps the list."""
    query = request.query
    ids = query.uuids("user_task_ids")
    clients = set(query.strings("client_ids"))
    endpoints = {e.upper() for e in query.strings("endpoints")} & ENDPOINT_NAMES
    types = set(query.strings("types")) & {"Active", "InExecution", "Completed", "CompletedWithError"}
    entries = query.integer("entries")
    if entries is not None and entries <= 0:
        raise UserRequestError(f"The requested entries must be positive (Requested: {entries}).")
    fetch = query.boolean("fetch_completed_task", False)

    def listing() -> dict[str, Any]:
        rows = [t.as_json(fetch) for t in cc.tasks.all()
                if (not ids or t.id in ids) and (not clients or t.client in clients)
                and (not endpoints or t.endpoint.upper() in endpoints) and (not types or t.status in types)]
        return {"userTasks": rows[:entries] if entries is not None else rows, "version": 1}
    return _answer(cc, listing)


def stop_proposal_execution(cc: CruiseControl, request: Request) -> Operation:
    query = request.query
    return _answer(cc, lambda: cc.stop_execution(force=query.boolean("force_stop", False)))


# -- proposed, then executed unless a dry run ----------------------------------------------------------------------

def topic_configuration(cc: CruiseControl, request: Request) -> Operation:
    """A replication-factor change (``proposals.replication_factor_change``), then the request's goals."""
    query = request.query
    run_dryrun = dryrun(query)
    by_rf = replication_factors(query, request.body)
    skip_rack = query.boolean("skip_rack_awareness_check", False)
    options = _execution_options(query)
    excluded_regex = query.get("excluded_topics") or None
    verbose = query.boolean("verbose", False)

    async def change_replication_factor(task: SimTask) -> None:
        await _wait_turn(cc)
        goals = proposals.parse_goals("topic_configuration", query)
        excluded = proposals.excluded(cc.cluster, excluded_regex)

        def propose() -> Proposal:
            return Proposal(proposals.replication_factor_change(
                cc.cluster, by_rf, skip_rack_awareness_check=skip_rack, goals=goals, excluded_topics=excluded,
                model_holds_topics=cc.warm_up.phase != "metadata"))
        await _propose_and_execute(cc, task, "topic_configuration", propose, run_dryrun, goals, excluded=excluded,
                                   verbose=verbose, **options)
    return change_replication_factor


def optimization(cc: CruiseControl, request: Request) -> Operation:
    """``rebalance``, ``add_broker``, ``remove_broker`` and ``fix_offline_replicas``: a proposal from the
    optimizer, executed unless ``dryrun`` (true by default, as in Cruise Control)."""
    query, endpoint = request.query, request.endpoint
    run_dryrun = dryrun(query)
    requested = sorted(set(query.integers("brokerid"))) if endpoint in ("add_broker", "remove_broker") else []
    if endpoint in ("add_broker", "remove_broker") and not requested:
        raise UserRequestError(f"Target broker ID is not provided for {endpoint.upper()} request")
    destinations = set(query.integers("destination_broker_ids")) if endpoint in ("rebalance", "remove_broker") \
        else set()
    disk = endpoint == "rebalance" and query.boolean("rebalance_disk", False)
    if disk and query.strings("goals"):  # ParameterUtils.getGoals
        raise UserRequestError("Rebalance disk mode does not support explicitly specifying goals in request.")
    if disk and query.boolean("kafka_assigner", False):
        raise UserRequestError("Kafka assigner mode and rebalance disk mode cannot be set the at the same time.")
    options = _execution_options(query)
    excluded_regex = query.get("excluded_topics") or None
    verbose = query.boolean("verbose", False)

    async def optimize(task: SimTask) -> None:
        await _wait_turn(cc)
        await cc.refresh_model(0.5)  # a broker that has just joined must be known
        brokers = _check_brokers(cc, endpoint, requested)
        _check_present(cc, endpoint, destinations)
        # destination_broker_ids: no replica moves onto the other brokers (GoalUtils keeps only these as candidates).
        not_destinations = set(cc.cluster.alive_ids) - destinations if destinations else set()
        # With rebalance_disk, Cruise Control optimizes with the intra-broker goals only.
        goals = optimizer.INTRA_BROKER_GOALS if disk else proposals.parse_goals(endpoint, query)
        excluded = proposals.excluded(cc.cluster, excluded_regex)

        def propose() -> Proposal:
            if disk:
                return Proposal(intra=optimizer.propose_disk_balance(cc.cluster, cc.load))
            if endpoint == "fix_offline_replicas":
                return Proposal(proposals.fix_offline(cc.cluster))
            try:
                avoid = set(cc.executor.recently_removed(exclude=brokers)) | not_destinations
                return Proposal(optimizer.propose(cc.cluster, endpoint, brokers, excluded_regex, avoid=avoid))
            except (PlacementError, re.error) as exc:
                raise failure(endpoint, str(exc), "java.lang.IllegalStateException") from None
        await _propose_and_execute(cc, task, endpoint, propose, run_dryrun, goals, verbose=verbose,
                                   excluded=excluded, leaving=brokers if endpoint == "remove_broker" else None,
                                   **options)
    return optimize


def remove_disks(cc: CruiseControl, request: Request) -> Operation:
    """``remove_disks``: every replica off the named log directories, onto the other disks of the same broker
    (``RemoveDisksRunnable``: IntraBrokerDiskCapacityGoal only, one intra-broker movement per broker at a time)."""
    query = request.query
    run_dryrun = dryrun(query)
    removal = broker_and_logdirs(query)

    async def empty_disks(task: SimTask) -> None:
        await _wait_turn(cc)
        await cc.refresh_model(0.5)
        if unknown := sorted(b for b in removal if b not in cc.cluster.alive_ids):
            raise failure("remove_disks", f"Broker {java_collection(unknown)} does not exist.",
                          "java.lang.IllegalArgumentException")

        def propose() -> Proposal:
            try:
                return Proposal(intra=optimizer.propose_remove_disks(cc.cluster, cc.load, removal))
            except optimizer.DiskRemovalRefused as exc:
                raise CruiseControlFailure(500, responses.error_body(
                    "POST", "remove_disks", str(exc), "java.lang.IllegalArgumentException")) from None
        await _propose_and_execute(cc, task, "remove_disks", propose, run_dryrun, ["IntraBrokerDiskCapacityGoal"],
                                   intra_concurrency=1, removed_dirs=removal)
    return empty_disks


def get_proposals(cc: CruiseControl, request: Request) -> Operation:
    """GET ``proposals``: the cached proposal of a full rebalance with the default goals."""
    query = request.query
    verbose = query.boolean("verbose", False)
    excluded_regex = query.get("excluded_topics") or None

    async def propose_rebalance(task: SimTask) -> None:
        await _wait_turn(cc)
        goals = proposals.parse_goals("proposals", query)
        excluded = proposals.excluded(cc.cluster, excluded_regex)

        def propose() -> Proposal:
            return Proposal(optimizer.propose(cc.cluster, "rebalance", [], excluded_regex,
                                              avoid=cc.executor.recently_removed()))
        await _propose_and_execute(cc, task, "proposals", propose, True, goals, verbose=verbose, excluded=excluded,
                                   method="GET")
    return propose_rebalance


def _execution_options(query: Params) -> dict[str, Any]:
    return {"throttle": throttle(query), "concurrency": concurrency(query),
            "intra_concurrency": concurrency(query, "intra")}


def _check_brokers(cc: CruiseControl, endpoint: str, brokers: list[int]) -> list[int]:
    """add_broker checks presence against the metadata's nodes, which are the alive brokers only
    (``sanityCheckBrokerPresence``: the set printed); remove_broker takes dead brokers too (their replicas go).
    While warming up, the model holds no broker yet."""
    if endpoint not in ("add_broker", "remove_broker"):
        return []
    known = set() if cc.warm_up.phase == "metadata" else \
        (cc.cluster.alive_ids if endpoint == "add_broker" else set(cc.cluster.brokers))
    if unknown := sorted(b for b in brokers if b not in known):
        named = java_collection(unknown) if endpoint == "add_broker" else ", ".join(map(str, unknown))
        raise failure(endpoint, f"Broker {named} does not exist.", "java.lang.IllegalArgumentException")
    return brokers


def _check_present(cc: CruiseControl, endpoint: str, brokers: set[int]) -> None:
    """``sanityCheckBrokerPresence`` of the destination brokers: each must be in the metadata (an alive broker)."""
    if unknown := sorted(brokers - set(cc.cluster.alive_ids)):
        raise failure(endpoint, f"Broker {java_collection(unknown)} does not exist.", "java.lang.IllegalArgumentException")


async def _wait_turn(cc: CruiseControl) -> None:
    """A proposal's task waits its turn before its request is even checked (it answers 202 meanwhile)."""
    await asyncio.sleep(cc.tuning.proposal_s)


async def _propose_and_execute(
        cc: CruiseControl, task: SimTask, endpoint: str, propose: Callable[[], Proposal], run_dryrun: bool,
        goals: list[str], *, verbose: bool = False, throttle: int | None = None, concurrency: int | None = None,
        leaving: list[int] | None = None, intra_concurrency: int | None = None, excluded: set[str] | None = None,
        removed_dirs: Mapping[int, set[str]] | None = None, method: str = "POST") -> None:
    """A proposal task: answered, and executed unless a dry run (refused at once while another execution runs)."""
    cc.warm_up.refuse_without_load_model(cc.cluster, endpoint, method=method)
    if not run_dryrun:
        await cc.executor.refuse_while_busy(endpoint, method=method)
    proposed = await _fresh_proposal(cc, propose)
    avoided = cc.executor.recently_removed(exclude=leaving)
    result = responses.optimization_result(
        cc.cluster, proposed.moves, goals=goals, verbose=verbose, leaving=leaving or (), intra=proposed.intra,
        excluded_topics=sorted(excluded or ()), excluded_brokers=sorted(avoided), load=cc.load,
        removed_dirs=removed_dirs or {})
    task.finish(200, result, time.monotonic())
    if run_dryrun or not proposed:  # nothing moves, between brokers or directories
        return
    cc.executor.start(task, proposed, throttle_bytes_s=throttle, concurrency=concurrency,
                      intra_concurrency=intra_concurrency, leaving=leaving or [])


async def _fresh_proposal(cc: CruiseControl, propose: Callable[[], Proposal]) -> Proposal:
    """The proposal on a fresh view of the cluster. A real cluster's metadata may not show a topic created a
    moment ago yet (Cruise Control's own metadata lags the same way): asked again before giving up."""
    attempts = 4 if cc.backend.real else 1
    for attempt in range(1, attempts + 1):
        await cc.refresh_model()
        try:
            return propose()
        except CruiseControlFailure as refused:
            if attempt == attempts or "There is no topic in cluster matching" not in str(refused):
                raise
            await asyncio.sleep(0.5)
    raise AssertionError("unreachable")


# What each endpoint does (``fix_offline_replicas`` and the broker endpoints are optimizations like ``rebalance``).
ENDPOINTS: dict[str, Reader] = {
    "topic_configuration": topic_configuration,
    "rebalance": optimization,
    "add_broker": optimization,
    "remove_broker": optimization,
    "fix_offline_replicas": optimization,
    "remove_disks": remove_disks,
    "proposals": get_proposals,
    "stop_proposal_execution": stop_proposal_execution,
    "user_tasks": user_tasks,
    "state": state,
    "kafka_cluster_state": kafka_cluster_state,
    "load": load,
    "partition_load": partition_load,
}
