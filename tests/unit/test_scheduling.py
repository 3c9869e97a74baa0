"""How `make test` groups the suite between its workers (tests/scheduling.py): the tests that share a cluster, a
stack or a Spark session are one group each, so what they share starts once per run."""

from __future__ import annotations

from collections import OrderedDict

from tests.scheduling import (CROWDS, KAFKA, SECURE, SHARED_STACKS, SPARK, GroupScheduling, group_of, next_group,
                              rank_of, unit_worker)


def test_tests_that_share_something_are_one_group_and_the_others_a_group_per_module() -> None:
    assert group_of("tests/kafka/test_admin.py::test_x") == group_of("tests/kafka/test_disks.py::test_y") == KAFKA
    assert group_of("tests/kafka/test_up.py::test_x") == "tests/kafka/test_up.py"
    assert group_of("tests/kafka/test_throttle.py::test_x") == "tests/kafka/test_throttle.py"
    assert group_of("tests/integration/shared_stack/test_bus.py::test_x") == SHARED_STACKS[1]
    assert group_of("tests/integration/shared_stack/test_hostile_input.py::test_z") == SHARED_STACKS[1]
    assert group_of("tests/integration/shared_stack/test_resilience.py::test_y[a]") == SHARED_STACKS[0]
    assert group_of("tests/integration/test_spark_source.py::test_x") == SPARK
    assert group_of("tests/kafka/test_spark_sources.py::test_x") == SPARK
    assert group_of("tests/integration/test_instances.py::test_x") == "tests/integration/test_instances.py"
    # The secured cluster's modules share it.
    assert group_of("tests/kafka/secure/test_bus.py::test_x") == group_of(
        "tests/kafka/secure/test_tenant_gate.py::test_y") == SECURE


def test_the_compose_stack_and_the_spark_cluster_never_run_side_by_side() -> None:
    compose = group_of("tests/containers/test_compose.py::test_x")
    cluster = group_of("tests/spark_cluster/test_standalone_cluster.py::test_y[spark-submit]")
    assert compose == cluster == CROWDS
    assert group_of("tests/spark_cluster/test_hosts.py::test_z") == "tests/spark_cluster/test_hosts.py"


def test_the_groups_that_start_clusters_and_stacks_go_before_the_unit_tests() -> None:
    kafka, spark = rank_of("tests/kafka/test_admin.py::t"), rank_of("tests/integration/test_spark_source.py::t")
    shared, unit = rank_of("tests/integration/shared_stack/test_bus.py::t"), rank_of("tests/unit/test_events.py::t")
    waiting, short = rank_of("tests/integration/test_shards.py::t"), rank_of("tests/integration/test_cli_stack.py::t")
    up, instances = rank_of("tests/kafka/test_up.py::t"), rank_of("tests/integration/test_instances.py::t")
    compose, throttle = rank_of("tests/containers/test_compose.py::t"), rank_of("tests/kafka/test_throttle.py::t")
    # The secured cluster's two minutes before the short modules: collected last, it would run last.
    secured = rank_of("tests/kafka/secure/test_tenant_gate.py::t")
    assert kafka == spark < shared < compose < instances < up < throttle < secured < waiting < short < unit


def test_the_last_worker_starts_with_the_unit_tests_and_the_others_take_them_when_nothing_else_is_left() -> None:
    assert (unit_worker(4), unit_worker(2), unit_worker(1)) == ("gw3", "gw1", None)
    groups = [KAFKA, "tests/integration/test_shards.py", "tests/unit/test_events.py", "tests/unit/test_wording.py"]
    assert next_group(groups, units_first=True) == "tests/unit/test_events.py"
    assert next_group(groups, units_first=False) == KAFKA
    assert next_group(groups[2:], units_first=False) == "tests/unit/test_events.py"
    assert next_group(groups[:2], units_first=True) == KAFKA


class _Worker:
    """What the scheduler sees of a pytest-xdist worker: its id, and the tests it was sent."""

    def __init__(self, worker_id: str) -> None:
        self.gateway = type("Gateway", (), {"id": worker_id})()
        self.shutting_down = False
        self.sent: list[list[int]] = []

    def send_runtest_some(self, indexes: list[int]) -> None:
        self.sent.append(indexes)

    def shutdown(self) -> None:
        self.shutting_down = True


def test_a_worker_gets_its_next_group_when_one_test_of_its_own_is_left_not_two() -> None:
    crowds = ["tests/containers/test_compose.py::test_a", "tests/spark_cluster/test_standalone_cluster.py::test_b[1]",
              "tests/spark_cluster/test_standalone_cluster.py::test_b[2]"]
    throttle = ["tests/kafka/test_throttle.py::test_c"]
    collection = crowds + throttle
    scheduler = GroupScheduling.__new__(GroupScheduling)  # its state set here: no pytest config to read it from
    worker = _Worker("gw0")
    scheduler.numnodes = 2
    scheduler.log = lambda *_: None
    scheduler.workqueue = OrderedDict([(group_of(crowds[0]), dict.fromkeys(crowds, False)),
                                       (group_of(throttle[0]), dict.fromkeys(throttle, False))])
    scheduler.assigned_work = {worker: {}}
    scheduler.registered_collections = {worker: collection}
    scheduler._assign_work_unit(worker)
    assert worker.sent == [[0, 1, 2]]
    scheduler.mark_test_complete(worker, 0)  # two of its tests left: pytest-xdist would send the next group now
    assert worker.sent == [[0, 1, 2]]
    scheduler.mark_test_complete(worker, 1)  # one left, which the worker runs once it holds the next
    assert worker.sent == [[0, 1, 2], [3]]
    assert not worker.shutting_down
    scheduler.mark_test_complete(worker, 2)  # nothing left to give: told to run what it holds and stop
    assert worker.shutting_down and worker.sent == [[0, 1, 2], [3]]
