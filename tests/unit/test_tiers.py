"""Which tier a test is in (tests/tiers.py): `make test-fast` runs the tests that need only the Python packages,
`make test-system` those that need a heavy install."""

from __future__ import annotations

from pathlib import Path

from tests.tiers import FAST, SYSTEM, SYSTEM_DIRS, SYSTEM_MODULES, tier_of

ROOT = Path(__file__).resolve().parents[2]


def test_the_unit_tests_and_the_embedded_stacks_are_fast() -> None:
    assert tier_of("tests/unit/test_events.py::test_x") == FAST
    assert tier_of("tests/integration/test_shards.py::test_x[a]") == FAST
    assert tier_of("tests/integration/shared_stack/test_bus.py::test_x") == FAST
    assert tier_of("tests/integration/test_spark_source.py::test_x") == FAST


def test_what_needs_a_heavy_install_is_system() -> None:
    assert tier_of("tests/kafka/test_admin.py::test_x") == SYSTEM
    assert tier_of("tests/kafka/test_secure.py::test_x") == SYSTEM
    assert tier_of("tests/kafka/test_spark_sources.py::test_x") == SYSTEM
    assert tier_of("tests/containers/test_compose.py::test_x") == SYSTEM
    assert tier_of("tests/spark_cluster/test_standalone_cluster.py::test_y[spark-submit]") == SYSTEM
    assert tier_of("tests/integration/shared_stack/test_dashboard.py::test_x") == SYSTEM


def test_every_directory_and_module_named_for_the_system_tier_exists() -> None:
    """A module renamed or moved would otherwise fall back to the fast tier, whose installs it lacks."""
    assert [path for path in (*SYSTEM_DIRS, *SYSTEM_MODULES) if not (ROOT / path).exists()] == []
