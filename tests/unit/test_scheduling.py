"""How `make test` groups the suite between its workers (tests/scheduling.py): the tests that share a cluster, a
stack or a Spark session are one group each, so what they share starts once per run."""

from __future__ import annotations

from tests.scheduling import CROWDS, KAFKA, SECURE, SHARED_STACKS, SPARK, group_of, next_group, rank_of, unit_worker


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
    compose = rank_of("tests/containers/test_compose.py::t")
    # The secured cluster's two minutes before the short modules: collected last, it would run last.
    secured = rank_of("tests/kafka/secure/test_tenant_gate.py::t")
    assert kafka == spark < shared < compose < instances < up < secured < waiting < short < unit


def test_the_last_worker_starts_with_the_unit_tests_and_the_others_take_them_when_nothing_else_is_left() -> None:
    assert (unit_worker(4), unit_worker(2), unit_worker(1)) == ("gw3", "gw1", None)
    groups = [KAFKA, "tests/integration/test_shards.py", "tests/unit/test_events.py", "tests/unit/test_wording.py"]
    assert next_group(groups, units_first=True) == "tests/unit/test_events.py"
    assert next_group(groups, units_first=False) == KAFKA
    assert next_group(groups[2:], units_first=False) == "tests/unit/test_events.py"
    assert next_group(groups[:2], units_first=True) == KAFKA
