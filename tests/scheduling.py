"""How `make test` shares the suite between its workers (pytest-xdist, ``TEST_WORKERS``, three by default).

A group of tests runs in one worker, so a stack, cluster or Spark session its tests share starts once: the tests in
tests/kafka that use its shared cluster are one group; the modules of tests/integration/shared_stack, which share one
local stack, are another; the modules that drive Spark in process are a third (they share the worker's session,
tests/conftest.py); every other module is a group of its own (its module-scoped stack, or a cluster of its own, as
test_up's). The longest groups go first, so no worker is left with a long one when the others
are done.

The last worker runs only the unit tests, at a lower priority (``UNIT_NICENESS``): they are pure CPU, and the other
workers leave a core idle for minutes of a run while they wait on their stacks. Run last by every worker instead, they
took the final fifty seconds of a run, with the cores half idle for the hundred before. Whatever unit tests are left
when the other workers run out of groups, those take too.

pytest-xdist's own ``--dist loadgroup`` reads groups from a suffix it writes into each test's node id, which pytest 9
no longer lets it write; a scheduler that computes the group from the node id needs no suffix.
"""

from __future__ import annotations

from xdist.scheduler import LoadScopeScheduling
from xdist.workermanage import WorkerController

KAFKA = "tests/kafka/"
UNIT = "tests/unit/"
UNIT_NICENESS = 10
SHARED_STACK = "tests/integration/shared_stack/"
ORDER = (KAFKA, "tests/integration/", "tests/unit/")
# Modules of tests/kafka that start clusters of their own, or none: off the shared cluster's worker (test_up's two
# minutes were the last of that worker's group, the longest of the suite).
OWN_CLUSTERS = {f"{KAFKA}{name}.py" for name in ("test_up", "test_striped_vs_kafka", "test_topic_regex_java")}
SPARK = "spark"
IN_PROCESS_SPARK = {"tests/integration/test_spark_source.py", "tests/integration/test_spark_aggregates.py",
                    f"{KAFKA}test_spark_sources.py"}


def group_of(nodeid: str) -> str:
    module = nodeid.split("::", 1)[0]
    if module in IN_PROCESS_SPARK:
        return SPARK
    if module.startswith(SHARED_STACK):
        return SHARED_STACK
    return KAFKA if module.startswith(KAFKA) and module not in OWN_CLUSTERS else module


# Modules of tests/integration that take minutes mostly waiting on their stacks (services restarting, executions
# running): they go before the others, so that at the end of a run the cores are busy with short modules and the unit
# tests instead of idling beside them (the cores were half idle for the last hundred seconds when these went last).
WAITING_FIRST = tuple(f"tests/integration/{name}.py" for name in (
    "test_instances", "test_load_flow", "test_rebalance", "test_shards"))


def rank_of(nodeid: str) -> tuple[int, int]:
    """The Kafka group first (the longest), the Spark group with it, then the modules that start stacks (the shared
    stack's group, then those that mostly wait, then the rest), then the unit tests."""
    group = group_of(nodeid)
    if group == SPARK:
        return 0, 0
    folder = next((rank for rank, folder in enumerate(ORDER) if nodeid.startswith(folder)), len(ORDER))
    if group in (KAFKA, SHARED_STACK) or not nodeid.startswith("tests/integration/"):
        return folder, 0
    return folder, 1 if group in WAITING_FIRST else 2


def unit_worker(workers: int) -> str | None:
    """The worker (its pytest-xdist id) that runs the unit tests only, when there are two workers or more."""
    return f"gw{workers - 1}" if workers >= 2 else None


def next_group(groups: list[str], *, unit_only: bool) -> str | None:
    """The group a worker runs next, of those not yet given out (in the order they are to go): the unit worker's first
    unit group, another worker's first other group, or its first unit group once no other is left."""
    units = [group for group in groups if group.startswith(UNIT)]
    if unit_only:
        return units[0] if units else None
    return next((group for group in groups if not group.startswith(UNIT)), units[0] if units else None)


class GroupScheduling(LoadScopeScheduling):
    """Whole groups to a worker, in the order the suite was collected in (``pytest_collection_modifyitems``); the
    unit tests to the unit worker (``unit_worker``)."""

    def _split_scope(self, nodeid: str) -> str:
        return group_of(nodeid)

    def _assign_work_unit(self, node: WorkerController) -> None:
        group = next_group(list(self.workqueue), unit_only=node.gateway.id == unit_worker(self.numnodes))
        if group is None:  # the unit worker, with no unit tests left to give it
            node.shutdown()
            return
        self.workqueue.move_to_end(group, last=False)
        super()._assign_work_unit(node)
