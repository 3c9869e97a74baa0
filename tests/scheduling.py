"""How `make test` shares the suite between its workers (pytest-xdist, ``TEST_WORKERS``, four by default).

A group of tests runs in one worker, so a stack, cluster or Spark session its tests share starts once: the tests in
tests/kafka that use its shared cluster are one group; the modules of tests/integration/shared_stack, which share a
local stack, are two (a stack each: ``SHARED_STACKS``); the modules that drive Spark in process are one more (they
share the worker's session, tests/conftest.py); the compose stack's module and the Spark cluster's are one more
(``CROWDS``); every other module is a group of its own (its module-scoped stack, or a cluster of its own, as
test_up's). The longest groups go first, so no worker is left with a long one when the others are done.

The last worker starts with the unit tests, and the others take them only once no other group is left: the unit
tests are pure CPU and short, so that worker is soon free to start stacks beside the other three when they have
passed the run's busiest minutes. Run last by every worker instead, the unit tests took the final fifty seconds of a
run, with the cores half idle for the hundred before, while the shared stack's group, started after test_up, ended
last of all.

pytest-xdist's own ``--dist loadgroup`` reads groups from a suffix it writes into each test's node id, which pytest 9
no longer lets it write; a scheduler that computes the group from the node id needs no suffix.
"""

from __future__ import annotations

from xdist.scheduler import LoadScopeScheduling
from xdist.workermanage import WorkerController

KAFKA = "tests/kafka/"
UNIT = "tests/unit/"
INTEGRATION = "tests/integration/"
CONTAINERS = "tests/containers/"
SHARED_STACK = f"{INTEGRATION}shared_stack/"
# The shared stack's modules in two groups, each with a stack of its own (the package's fixture starts in each worker
# that runs one of them): as one group, its 440 s were the fast tier's longest path, 90 s past its 5 minutes
# (2026-12-02), while one stack more costs about 15 CPU-seconds. The modules that kill and restart services on one
# side, those that write hostile or documented records on the other, about 190 s and 250 s.
SHARED_STACK_FIRST = {f"{SHARED_STACK}{name}.py" for name in ("test_resilience", "test_reliability",
                                                             "test_replication_factor", "test_metrics",
                                                             "test_placement")}
SHARED_STACKS = (f"{SHARED_STACK}1", f"{SHARED_STACK}2")
# Modules of tests/kafka that start clusters of their own, or none: off the shared cluster's worker (test_up's two
# minutes were the last of that worker's group, the longest of the suite).
OWN_CLUSTERS = {f"{KAFKA}{name}.py" for name in ("test_up", "test_striped_vs_kafka", "test_topic_regex_java",
                                                 "test_throttle")}
# The secured cluster's modules (one cluster of their own, tests/kafka/secure/conftest.py): one group.
SECURE = f"{KAFKA}secure/"
SPARK = "spark"
IN_PROCESS_SPARK = {f"{INTEGRATION}test_spark_source.py", f"{INTEGRATION}test_spark_aggregates.py",
                    f"{KAFKA}test_spark_sources.py"}
# The two modules that each start a crowd of JVMs and processes: the compose stack (four Kafka JVMs, a Spark session
# and eight Python services, in containers) and the Spark cluster (a master, a worker, two drivers and two executors
# at once, and their Python workers). One after the other in one worker, never side by side: in CI (2026-11-28),
# side by side with the rest of the suite on two cores, the compose stack's brokers did not answer within three
# minutes, and a Spark job's Python planner missed Spark's fixed ten seconds to connect back nine times running.
CROWDS = "crowds"
CROWDED = (f"{CONTAINERS}test_compose.py", "tests/spark_cluster/test_standalone_cluster.py")


def group_of(nodeid: str) -> str:
    module = nodeid.split("::", 1)[0]
    if module in IN_PROCESS_SPARK:
        return SPARK
    if module in CROWDED:
        return CROWDS
    if module.startswith(SHARED_STACK):
        return SHARED_STACKS[0] if module in SHARED_STACK_FIRST else SHARED_STACKS[1]
    if module.startswith(SECURE):
        return SECURE
    return KAFKA if module.startswith(KAFKA) and module not in OWN_CLUSTERS else module


# Modules that take minutes mostly waiting on their stacks (services restarting, executions running) or clusters:
# they go before the others, so that at the end of a run the cores are busy with short modules instead of idling
# beside them (the cores were half idle for the last hundred seconds when these went last). Longest first (idle
# minutes: 2.3, 2, 1.7, 1.5, 1.1, not counting test_throttle): test_up, after the others, was the last module of the
# slowest idle run. test_throttle follows test_up: a cluster of its own too, then moves held back by throttles (219 s
# on its own). The crowds go before them all: the compose stack's containers wait on each other for minutes, and so
# does the Spark cluster (a master, a worker and four jobs: 100 s on an idle machine, two CPU-minutes). Moved right
# after the crowds, test_throttle would begin while the compose stack runs (by the groups' order), and in the one
# fresh clone's run with that order (2026-12-04) the compose stack's Spark job wrote no aggregates within its 180 s;
# after test_up it begins once the compose stack is down.
# The secured cluster's group (two minutes, a cluster of its own) follows them: left among the short modules, which go
# in the order collected, it was collected last and ran last, alone for its final hundred seconds (2026-12-04: from
# 664 s to 789 s, with two workers done at 679 and 692 s).
WAITING_FIRST = (CROWDS, f"{INTEGRATION}test_instances.py", f"{KAFKA}test_up.py", f"{KAFKA}test_throttle.py", SECURE,
                 f"{INTEGRATION}test_rebalance.py", f"{INTEGRATION}test_load_flow.py", f"{INTEGRATION}test_shards.py")


def rank_of(nodeid: str) -> tuple[int, int]:
    """The Kafka and Spark groups first (the longest), then the shared stack's, then the modules that mostly wait
    (longest first), then the others, then the unit tests."""
    group = group_of(nodeid)
    if group in (KAFKA, SPARK):
        return 0, 0
    if group in SHARED_STACKS:
        return 1, 0
    if group in WAITING_FIRST:
        return 2, WAITING_FIRST.index(group)
    return (4, 0) if group.startswith(UNIT) else (3, 0)


def unit_worker(workers: int) -> str | None:
    """The worker (its pytest-xdist id) that starts with the unit tests, when there are two workers or more."""
    return f"gw{workers - 1}" if workers >= 2 else None


def next_group(groups: list[str], *, units_first: bool) -> str:
    """The group a worker runs next, of those not yet given out (in the order they are to go): the first of the kind
    it prefers (unit tests for the unit worker, any other for the others), else the first of the other kind."""
    preferred = [group for group in groups if group.startswith(UNIT) == units_first]
    return (preferred or groups)[0]


class GroupScheduling(LoadScopeScheduling):
    """Whole groups to a worker, in the order the suite was collected in (``pytest_collection_modifyitems``); the
    unit tests to the unit worker first (``unit_worker``)."""

    def _split_scope(self, nodeid: str) -> str:
        return group_of(nodeid)

    def _assign_work_unit(self, node: WorkerController) -> None:
        group = next_group(list(self.workqueue), units_first=node.gateway.id == unit_worker(self.numnodes))
        self.workqueue.move_to_end(group, last=False)
        super()._assign_work_unit(node)

    def _reschedule(self, node: WorkerController) -> None:
        """The next group once one test of the worker's is left, not two as pytest-xdist does: a worker runs a test
        only once it holds the one after (pytest's teardown needs it), so one left is when it needs more, and a group
        taken a test earlier waits behind that test. The Spark cluster's module is two tests of one and two minutes:
        the worker that began it took test_throttle's six minutes at once, which then began three minutes later than
        on a worker free meanwhile, and ended the run (2026-12-04: 865 s, against 798 s in the run before)."""
        if self.workqueue and self._pending_of(self.assigned_work[node]) > 1:
            return
        super()._reschedule(node)
