"""The simulated Cruise Control: user tasks with Cruise Control's semantics and an executor over accelerated time.

What it reproduces (seed 000, reference/cruise-control.md): tasks Active -> InExecution -> Completed /
CompletedWithError; at most ``max_active_user_tasks`` Active tasks (the servlet-capacity error); one execution at a
time (OngoingExecutionException); NotEnoughValidWindowsException while warming up; a target RF above the alive
brokers refused with Cruise Control's words; the 202 progress answer while a proposal is computed, and the same
task's answer when the request is repeated with its ``User-Task-ID``; every task forgotten on restart.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from services.cluster_sim import optimizer, responses
from services.cluster_sim.backend import Backend
from services.cluster_sim.execution import INTRA_BROKER_CONCURRENCY, Execution
from services.cluster_sim.model import ClusterError, Proposal, ReplicaMove
from services.cluster_sim.request import ENDPOINT_NAMES, Params, UserRequestError, parse_int
from services.common.admin.port import AdminError
from services.common.logging import get_logger
from services.placement.model import PlacementError

log = get_logger(__name__)

HARD_GOALS = ["NetworkInboundCapacityGoal", "DiskCapacityGoal", "RackAwareGoal", "NetworkOutboundCapacityGoal",
              "CpuCapacityGoal", "ReplicaCapacityGoal"]
KNOWN_GOALS = {*HARD_GOALS, "RackAwareDistributionGoal", "ReplicaDistributionGoal", "LeaderReplicaDistributionGoal",
               "TopicReplicaDistributionGoal", "DiskUsageDistributionGoal", "NetworkInboundUsageDistributionGoal",
               "NetworkOutboundUsageDistributionGoal", "CpuUsageDistributionGoal", "PotentialNwOutGoal",
               "LeaderBytesInDistributionGoal", "PreferredLeaderElectionGoal", "MinTopicLeadersPerBrokerGoal",
               "IntraBrokerDiskCapacityGoal", "IntraBrokerDiskUsageDistributionGoal"}
DEFAULT_GOALS = ["RackAwareGoal", "ReplicaCapacityGoal", "DiskCapacityGoal", "ReplicaDistributionGoal",
                 "LeaderReplicaDistributionGoal", "TopicReplicaDistributionGoal"]
OPERATIONS = {"topic_configuration": "Topic configuration", "rebalance": "Rebalance", "add_broker": "Add brokers",
              "remove_broker": "Remove brokers", "remove_disks": "Remove disks",
              "fix_offline_replicas": "Fix offline replicas"}
KCC = "com.linkedin.kafka.cruisecontrol.exception.KafkaCruiseControlException"


def _literal_alternatives(regex: str) -> set[str] | None:
    """``a\\.c|b`` -> {"a.c", "b"}; None if any alternative uses a regex construct."""
    names, current, escaped = set(), [], False
    for ch in regex:
        if escaped:
            if ch.isalnum():
                return None  # \d, \w, ...: a character class, not a literal
            current.append(ch)
            escaped = False
        elif ch == "\\":
            escaped = True
        elif ch == "|":
            names.add("".join(current))
            current = []
        elif ch.isalnum() or ch in "_-":
            current.append(ch)
        else:
            return None
    if escaped:
        return None
    names.add("".join(current))
    return names


def _throttle(params: Params) -> int | None:
    """``replication_throttle`` in bytes per second (``Long.valueOf``); None when absent."""
    value = params.integer("replication_throttle", bits=64)
    if value is not None and value < 0:
        raise UserRequestError(f"Requested rebalance throttle must be non-negative (Requested: {value}).")
    return value or None


def _concurrency(params: Params, kind: str = "inter") -> int | None:
    """``concurrent_partition_movements_per_broker`` (``kind`` inter) or ``concurrent_intra_broker_partition_movements``
    (intra): the executor's cap for this execution, positive."""
    name = ("concurrent_partition_movements_per_broker" if kind == "inter"
            else "concurrent_intra_broker_partition_movements")
    value = params.integer(name)
    if value is not None and value <= 0:
        raise UserRequestError(f"The requested {kind}-broker partition movement concurrency must be positive "
                               f"(Requested: {value}).")
    return value


def _broker_and_logdirs(params: Params) -> dict[int, set[str]]:
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


def _dryrun(params: Params) -> bool:
    dryrun = params.boolean("dryrun", True)
    if dryrun and params.boolean("stop_ongoing_execution", False):
        raise UserRequestError("stop_ongoing_execution and dryrun cannot both be set to true.")
    return dryrun


def _rf_request(params: Params, body: dict[str, Any] | None) -> dict[int, str]:
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


class CruiseControlFailure(Exception):
    """An error answer: HTTP status and Cruise Control's error body."""

    def __init__(self, status: int, body: dict[str, Any]) -> None:
        super().__init__(body.get("errorMessage"))
        self.status = status
        self.body = body


@dataclass
class SimTask:
    id: str
    endpoint: str
    request_url: str
    client: str
    start_ms: int
    status: str = "Active"
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    completed_ms: int | None = None
    proposal_ready: asyncio.Event = field(default_factory=asyncio.Event)

    def as_json(self, fetch_completed: bool) -> dict[str, Any]:
        row = {"UserTaskId": self.id, "RequestURL": self.request_url, "ClientIdentity": self.client,
               "StartMs": str(self.start_ms), "Status": self.status}
        if fetch_completed and self.status != "Active":  # an execution's proposal is known already
            row["originalResponse"] = json.dumps(self.result if self.result is not None else self.error)
        return row


@dataclass
class SimTuning:
    time_scale: float = 60.0  # simulated seconds per real second
    replica_bandwidth_mb_s: float = 100.0  # simulated throttle per execution
    min_execution_s: float = 0.5  # real seconds; long enough to be seen InExecution
    proposal_s: float = 0.1  # real seconds a task stays Active computing its proposal
    max_block_s: float = 10.0  # how long a request waits for its proposal before answering 202
    warmup_s: float = 0.0  # NotEnoughValidWindows for this long after (re)start
    max_active_user_tasks: int = 5
    execution_check_s: float = 0.5  # execution.progress.check.interval.ms (real backend)
    movements_per_broker: int = 5  # num.concurrent.partition.movements.per.broker (real backend)


class SimCruiseControl:
    def __init__(self, backend: Backend, tuning: SimTuning | None = None) -> None:
        self.backend = backend
        self.cluster = backend.cluster
        self.load = backend.load
        self.tuning = tuning or SimTuning()
        self.tasks: dict[str, SimTask] = {}
        self.execution: Execution | None = None
        self._runner: asyncio.Task[None] | None = None
        self._background: set[asyncio.Task[None]] = set()
        self.started_at = time.monotonic()
        self.requests_served = 0
        # Executions a restart orphaned: their reassignments are still running in Kafka.
        self.orphaned = 0

    # -- lifecycle ---------------------------------------------------------------------------------------------

    def restart(self, warmup_s: float | None = None) -> None:
        """Forget every task, as a restarted Cruise Control does. Reassignments already handed to Kafka still
        finish in the cluster; nobody reports on them any more."""
        self.tasks.clear()
        if warmup_s is not None:
            self.tuning.warmup_s = warmup_s
        self.started_at = time.monotonic()
        if self.execution is not None:
            orphan = self.execution
            self.execution = None
            if self._runner is not None:
                self._runner.cancel()
            self._spawn(self._finish_orphan(orphan))

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
        return time.monotonic() - self.started_at >= self.tuning.warmup_s

    def active_count(self) -> int:
        return sum(1 for t in self.tasks.values() if t.status == "Active")

    # -- endpoints ---------------------------------------------------------------------------------------------

    async def topic_configuration(self, params: dict[str, str], body: dict[str, Any] | None, request_url: str,
                                  client: str, task_id_header: str | None) -> tuple[int, dict[str, Any], str]:
        if task_id_header and task_id_header in self.tasks:
            return await self._answer(self.tasks[task_id_header], "topic_configuration")
        query = Params(params)
        dryrun = _dryrun(query)
        by_rf = _rf_request(query, body)
        goals = self._parse_goals("topic_configuration", query)
        skip_rack = query.boolean("skip_rack_awareness_check", False)
        throttle = _throttle(query)
        concurrency = _concurrency(query)
        self._check_capacity("POST", "topic_configuration")
        task = self._new_task("topic_configuration", request_url, client)
        self._spawn(self._run(task, "topic_configuration", lambda: Proposal(self._propose_rf_change(by_rf, skip_rack)), dryrun,
                              goals, throttle=throttle, concurrency=concurrency))
        return await self._answer(task, "topic_configuration")

    async def optimize(self, endpoint: str, params: dict[str, str], request_url: str, client: str,
                       task_id_header: str | None) -> tuple[int, dict[str, Any], str]:
        """``rebalance``, ``add_broker`` and ``remove_broker``: a proposal from the optimizer, executed unless
        ``dryrun`` (true by default, as in Cruise Control)."""
        if task_id_header and task_id_header in self.tasks:
            return await self._answer(self.tasks[task_id_header], endpoint)
        query = Params(params)
        dryrun = _dryrun(query)
        await self.refresh_model(0.5)  # a broker that has just joined must be known
        brokers = self._parse_brokers(endpoint, query)
        disk = endpoint == "rebalance" and query.boolean("rebalance_disk", False)
        if disk and query.strings("goals"):  # ParameterUtils.getGoals
            raise UserRequestError("Rebalance disk mode does not support explicitly specifying goals in request.")
        if disk and query.boolean("kafka_assigner", False):
            raise UserRequestError("Kafka assigner mode and rebalance disk mode cannot be set the at the same time.")
        # With rebalance_disk, Cruise Control optimizes with the intra-broker goals only.
        goals = optimizer.INTRA_BROKER_GOALS if disk else self._parse_goals(endpoint, query)
        throttle = _throttle(query)
        concurrency = _concurrency(query)
        intra_concurrency = _concurrency(query, "intra")
        self._check_capacity("POST", endpoint)
        task = self._new_task(endpoint, request_url, client)
        excluded = query.get("excluded_topics") or None

        def proposal() -> Proposal:
            if disk:
                return Proposal(intra=optimizer.propose_disk_balance(self.cluster, self.load))
            if endpoint == "fix_offline_replicas":
                return Proposal(self._propose_fix_offline())
            try:
                return Proposal(optimizer.propose(self.cluster, endpoint, brokers, excluded))
            except (PlacementError, re.error) as exc:
                raise CruiseControlFailure(500, responses.error_body(
                    "POST", endpoint, str(exc), f"{KCC}: java.lang.IllegalStateException")) from None

        self._spawn(self._run(task, endpoint, proposal, dryrun, goals, verbose=query.boolean("verbose", False),
                              throttle=throttle, concurrency=concurrency, intra_concurrency=intra_concurrency,
                              leaving=brokers if endpoint == "remove_broker" else None))
        return await self._answer(task, endpoint)

    async def remove_disks(self, params: dict[str, str], request_url: str, client: str,
                           task_id_header: str | None) -> tuple[int, dict[str, Any], str]:
        """``remove_disks``: every replica off the named log directories, onto the other disks of the same broker
        (``RemoveDisksRunnable``: IntraBrokerDiskCapacityGoal only, one intra-broker movement per broker at a time)."""
        if task_id_header and task_id_header in self.tasks:
            return await self._answer(self.tasks[task_id_header], "remove_disks")
        query = Params(params)
        dryrun = _dryrun(query)
        removal = _broker_and_logdirs(query)
        await self.refresh_model(0.5)
        if unknown := sorted(b for b in removal if b not in self.cluster.alive_ids):
            raise CruiseControlFailure(500, responses.error_body(
                "POST", "remove_disks", f"Broker {_java_collection(unknown)} does not exist.",
                f"{KCC}: java.lang.IllegalArgumentException"))
        self._check_capacity("POST", "remove_disks")
        task = self._new_task("remove_disks", request_url, client)

        def proposal() -> Proposal:
            try:
                return Proposal(intra=optimizer.propose_remove_disks(self.cluster, self.load, removal))
            except optimizer.DiskRemovalRefused as exc:
                raise CruiseControlFailure(500, responses.error_body(
                    "POST", "remove_disks", str(exc), "java.lang.IllegalArgumentException")) from None

        self._spawn(self._run(task, "remove_disks", proposal, dryrun, ["IntraBrokerDiskCapacityGoal"],
                              verbose=False, intra_concurrency=1))
        return await self._answer(task, "remove_disks")

    def _parse_brokers(self, endpoint: str, params: Params) -> list[int]:
        if endpoint in ("rebalance", "fix_offline_replicas"):
            return []
        brokers = sorted(set(params.integers("brokerid")))
        if not brokers:
            raise UserRequestError(f"Target broker ID is not provided for {endpoint.upper()} request")
        # add_broker checks presence against the metadata's nodes, which are the alive brokers only
        # (KafkaCruiseControl.sanityCheckBrokerPresence); remove_broker takes dead brokers too (their replicas go).
        known = self.cluster.alive_ids if endpoint == "add_broker" else set(self.cluster.brokers)
        if unknown := sorted(b for b in brokers if b not in known):
            raise CruiseControlFailure(500, responses.error_body(
                "POST", endpoint, f"Broker {_java_collection(unknown)} does not exist.",
                f"{KCC}: java.lang.IllegalArgumentException"))
        return brokers

    def _parse_goals(self, endpoint: str, params: Params) -> list[str]:
        """``sanityCheckGoals`` (in the task, so a 500): names are not trimmed; unknown goals, then missing hard
        goals, are refused unless ``skip_hard_goal_check``."""
        goals = params.strings("goals")
        if not goals:
            return DEFAULT_GOALS
        if params.boolean("skip_hard_goal_check", False) or goals == ["PreferredLeaderElectionGoal"]:
            return goals
        if unknown := sorted({g for g in goals if g not in KNOWN_GOALS}):
            raise CruiseControlFailure(500, responses.error_body(
                "POST", endpoint, f"Goals {_java_collection(unknown)} are not supported. Supported: "
                f"{_java_collection(sorted(KNOWN_GOALS))}", "java.lang.IllegalArgumentException"))
        missing = [g for g in HARD_GOALS if g not in goals]
        if missing:
            raise CruiseControlFailure(500, responses.error_body(
                "POST", endpoint, f"Missing hard goals [{', '.join(missing)}] in the provided goals: "
                f"[{', '.join(goals)}]. Add skip_hard_goal_check=true parameter to ignore this sanity check.",
                "java.lang.IllegalArgumentException"))
        return goals

    def stop_execution(self) -> dict[str, Any]:
        """stop_proposal_execution: movements already done stay; the rest are dropped."""
        execution = self.execution
        if execution is not None and execution.request_stop():
            # Nothing in flight to roll back: stopped now. Otherwise the executor rolls back what is in flight
            # (STOPPING_EXECUTION) and ends the task itself.
            self.execution = None
            if self._runner is not None:
                self._runner.cancel()
            self._end_task(execution)
        return {"message": "Proposal execution stopped.", "version": 1}

    def _end_task(self, execution: Execution) -> None:
        """A stopped or failed execution ends its task CompletedWithError (``notifyFinishedTask``)."""
        task = self.tasks.get(execution.task_id)
        if task is not None:
            task.status = "CompletedWithError" if execution.ended_with_error else "Completed"
            task.completed_ms = int(time.time() * 1000)

    def _check_capacity(self, method: str, endpoint: str) -> None:
        active = self.active_count()
        if active >= self.tuning.max_active_user_tasks:
            raise CruiseControlFailure(500, responses.error_body(
                method, endpoint, f"There are already {active} active user tasks, which has reached the servlet capacity.",
                "java.lang.RuntimeException"))

    def _new_task(self, endpoint: str, request_url: str, client: str) -> SimTask:
        task = SimTask(id=str(uuid.uuid4()), endpoint=endpoint, request_url=request_url, client=client,
                       start_ms=int(time.time() * 1000))
        self.tasks[task.id] = task
        return task

    async def _answer(self, task: SimTask, endpoint: str) -> tuple[int, dict[str, Any], str]:
        try:
            await asyncio.wait_for(task.proposal_ready.wait(), timeout=self.tuning.max_block_s)
        except TimeoutError:
            elapsed = int(time.time() * 1000) - task.start_ms
            return 202, responses.progress_body(OPERATIONS.get(endpoint, endpoint), elapsed), task.id
        if task.error is not None:
            raise CruiseControlFailure(500, task.error)
        return 200, task.result or {}, task.id

    async def _run(self, task: SimTask, endpoint: str, propose: Callable[[], Proposal], dryrun: bool,
                   goals: list[str], verbose: bool = False, throttle: int | None = None,
                   concurrency: int | None = None, leaving: list[int] | None = None,
                   intra_concurrency: int | None = None) -> None:
        await asyncio.sleep(self.tuning.proposal_s)
        if self.tasks.get(task.id) is not task:
            return  # forgotten by a restart
        try:
            self._check_warm(endpoint)
            proposed = await self._propose(propose)
        except CruiseControlFailure as failure:
            task.error, task.status = failure.body, "CompletedWithError"
            task.proposal_ready.set()
            return
        task.result = responses.optimization_result(self.cluster, proposed.moves, goals=goals, verbose=verbose,
                                                    leaving=leaving or (), intra=proposed.intra)
        busy_cluster = bool(self.orphaned) or (
            not dryrun and bool(proposed) and await self.backend.reassignments_in_progress())
        if dryrun or not proposed:  # nothing moves, between brokers or directories
            task.status = "Completed"
        elif self.execution is not None or busy_cluster:
            cause = ("Cannot execute new proposals while there is an ongoing execution." if self.execution
                     else "There are ongoing partition reassignments in the cluster.")
            task.error = responses.error_body(
                "POST", endpoint, cause, f"{KCC}: com.linkedin.kafka.cruisecontrol.executor.OngoingExecutionException")
            task.status = "CompletedWithError"
        else:
            task.status = "InExecution"
            self._start_execution(task, proposed, throttle, concurrency, intra_concurrency)
        task.proposal_ready.set()

    async def _propose(self, propose: Callable[[], Proposal]) -> Proposal:
        """The proposal on a fresh view of the cluster. A real cluster's metadata may not show a topic created a
        moment ago yet (Cruise Control's own metadata lags the same way): asked again before giving up."""
        attempts = 4 if self.backend.real else 1
        for attempt in range(1, attempts + 1):
            await self.refresh_model()
            try:
                return propose()
            except CruiseControlFailure as failure:
                if attempt == attempts or "There is no topic in cluster matching" not in str(failure):
                    raise
                await asyncio.sleep(0.5)
        raise AssertionError("unreachable")

    def _check_warm(self, endpoint: str) -> None:
        if not self.warm:
            raise CruiseControlFailure(500, responses.error_body(
                "POST", endpoint,
                f"There are only 0 valid windows when aggregating in range [-1, {int(time.time() * 1000)}] for "
                "aggregation options (minValidEntityRatio=0.95, minValidEntityGroupRatio=0.00, minValidWindows=1, "
                f"numEntitiesToInclude={sum(len(t.partitions) for t in self.cluster.topics.values())}, "
                "granularity=ENTITY)",
                f"{KCC}: com.linkedin.cruisecontrol.exception.NotEnoughValidWindowsException"))

    def _propose_rf_change(self, by_rf: dict[int, str], skip_rack_awareness_check: bool) -> list[ReplicaMove]:
        """UpdateTopicConfigurationRunnable, check for check and message for message: no partition may have an
        offline replica; every pattern must match a topic; something must be left to change; then
        RunnableUtils.populateRackInfoForReplicationFactorChange (RF against alive brokers and racks)."""
        alive = self.cluster.alive_ids
        for name in sorted(self.cluster.topics):
            for p in self.cluster.topics[name].partitions:
                if offline := sorted(b for b in p.replicas if b not in alive):
                    raise self._rf_failure(f"Topic partition {name}-{p.index} has offline replicas on brokers "
                                           f"{_java_collection(offline)}.", "java.lang.IllegalStateException")
        to_change: dict[int, list[str]] = {}
        for rf, regex in sorted(by_rf.items()):
            topics = self._matching_topics(regex)
            if not topics:
                raise self._rf_failure(f"There is no topic in cluster matching pattern '{regex}'.",
                                       "java.lang.IllegalStateException")
            changing = [t for t in topics if any(len(p.replicas) != rf for p in self.cluster.topics[t].partitions)]
            if changing:
                to_change[rf] = changing
        if not to_change:
            requested = "{" + ", ".join(f"{rf}={regex}" for rf, regex in sorted(by_rf.items())) + "}"
            raise self._rf_failure("All topics matching given pattern already have target replication factor. "
                                   f"Requested topic pattern by replication factor: {requested}.",
                                   "java.lang.IllegalStateException")
        if not alive:
            raise self._rf_failure("All brokers are dead in the cluster.", "java.lang.IllegalArgumentException")
        racks = {self.cluster.brokers[b].rack or "127.0.0.1" for b in alive}
        moves: list[ReplicaMove] = []
        for rf, topics in to_change.items():
            if rf > len(alive):
                raise self._rf_failure(
                    f"Unable to change replication factor (RF) of topics {_java_collection(topics)} to {rf} since "
                    f"there are only {len(alive)} alive brokers in the cluster. Requested RF cannot be more than "
                    "number of alive brokers.", "java.lang.RuntimeException")
            if rf > len(racks) and not skip_rack_awareness_check:
                raise self._rf_failure(
                    f"Unable to change replication factor of topics {_java_collection(topics)} to {rf} since there "
                    f"are only {len(racks)} racks in the cluster, to skip the rack-awareness check, set "
                    "skip_rack_awareness_check to true in the request.", "java.lang.RuntimeException")
        for rf, topics in to_change.items():
            try:
                moves.extend(self.cluster.plan_replication_factor(topics, rf))
            except ClusterError as exc:
                raise self._rf_failure(str(exc), "java.lang.IllegalStateException") from None
        return moves

    def _propose_fix_offline(self) -> list[ReplicaMove]:
        """FixOfflineReplicasRunnable: refused when nothing is offline (``sanityCheckOfflineReplicaPresence``) or
        every broker is dead; otherwise each offline replica moves to an alive broker."""
        if not self.cluster.alive_ids:
            raise CruiseControlFailure(500, responses.error_body(
                "POST", "fix_offline_replicas", "All brokers are dead in the cluster.",
                f"{KCC}: java.lang.IllegalArgumentException"))
        moves = self.cluster.plan_fix_offline()
        if not moves:
            brokers = ", ".join(str(b) for b in sorted(self.cluster.brokers))
            raise CruiseControlFailure(500, responses.error_body(
                "POST", "fix_offline_replicas", f"Cluster has no offline replica on brokers [{brokers}] to fix.",
                f"{KCC}: java.lang.IllegalStateException"))
        return moves

    @staticmethod
    def _rf_failure(message: str, exception: str) -> CruiseControlFailure:
        return CruiseControlFailure(500, responses.error_body("POST", "topic_configuration", message,
                                                              f"{KCC}: {exception}"))

    def _matching_topics(self, regex: str) -> list[str]:
        literals = _literal_alternatives(regex)
        if literals is not None:
            # A pure alternation of escaped names (what Ballast sends): a set lookup instead of backtracking
            # through thousands of alternatives for every topic. Same answer as the regex.
            return sorted(name for name in literals if name in self.cluster.topics)
        try:
            pattern = re.compile(regex)
        except re.error as exc:
            raise CruiseControlFailure(400, responses.error_body(
                "POST", "topic_configuration", f"Invalid topic regex {regex!r}: {exc}",
                "java.util.regex.PatternSyntaxException")) from None
        return sorted(name for name in self.cluster.topics if pattern.fullmatch(name))

    # -- executor ----------------------------------------------------------------------------------------------

    def _start_execution(self, task: SimTask, proposal: Proposal, throttle_bytes_s: int | None = None,
                         concurrency: int | None = None, intra_concurrency: int | None = None) -> None:
        t = self.tuning
        execution = self.backend.execution(
            task.id, proposal.moves, throttle_bytes_s, time_scale=t.time_scale,
            bandwidth_mb_s=t.replica_bandwidth_mb_s, min_execution_s=t.min_execution_s,
            check_interval_s=t.execution_check_s, movements_per_broker=concurrency or t.movements_per_broker,
            intra_moves=proposal.intra, intra_per_broker=intra_concurrency or INTRA_BROKER_CONCURRENCY)
        self.execution = execution
        self._runner = self._spawn(self._execute(execution))

    async def _execute(self, execution: Execution) -> None:
        await execution.run()  # cancelled by a restart (the task is forgotten) or an instant stop (ended there)
        if self.execution is execution:
            self.execution = None
        self._end_task(execution)

    def executor_state(self) -> dict[str, Any]:
        ex = self.execution
        if ex is None:
            return {"state": "NO_TASK_IN_PROGRESS"}
        task = self.tasks.get(ex.task_id)
        return ex.state(OPERATIONS.get(task.endpoint, "") if task is not None else "")

    # -- read-only endpoints -----------------------------------------------------------------------------------

    def user_tasks(self, params: dict[str, str]) -> dict[str, Any]:
        """``UserTaskState``: active tasks first, then completed ones, each filter applied only when given; unknown
        endpoint names and task types are ignored (all of them unknown: no filter), ``entries`` caps the list."""
        query = Params(params)
        ids = query.uuids("user_task_ids")
        clients = set(query.strings("client_ids"))
        endpoints = {e.upper() for e in query.strings("endpoints")} & ENDPOINT_NAMES
        types = set(query.strings("types")) & {"Active", "InExecution", "Completed", "CompletedWithError"}
        entries = query.integer("entries")
        if entries is not None and entries <= 0:
            raise UserRequestError(f"The requested entries must be positive (Requested: {entries}).")
        fetch = query.boolean("fetch_completed_task", False)
        ordered = sorted(self.tasks.values(), key=lambda t: t.status != "Active")
        rows = [
            t.as_json(fetch)
            for t in ordered
            if (not ids or t.id in ids) and (not clients or t.client in clients)
            and (not endpoints or t.endpoint.upper() in endpoints) and (not types or t.status in types)
        ]
        return {"userTasks": rows[:entries] if entries is not None else rows, "version": 1}

    def state(self) -> dict[str, Any]:
        partitions = sum(len(t.partitions) for t in self.cluster.topics.values())
        return responses.cruise_control_state(executor=self.executor_state(), warm=self.warm,
                                              num_partitions=partitions, goals=DEFAULT_GOALS)


def _java_collection(items: list[Any]) -> str:
    """A Java collection's toString: ``[a, b]`` (Cruise Control formats topic sets and broker ids so)."""
    return "[" + ", ".join(str(i) for i in items) + "]"
