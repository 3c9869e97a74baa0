"""Which tier a test is in (tests/tiers.py): `make test-fast` runs the tests that need only the Python packages,
`make test-system` those that need a heavy install."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from tests.tiers import FAST, SYSTEM, SYSTEM_DIRS, SYSTEM_MODULES, tier_of

ROOT = Path(__file__).resolve().parents[2]


def test_the_unit_tests_and_the_embedded_stacks_are_fast() -> None:
    assert tier_of("tests/unit/test_events.py::test_x") == FAST
    assert tier_of("tests/integration/test_shards.py::test_x[a]") == FAST
    assert tier_of("tests/integration/shared_stack/test_bus.py::test_x") == FAST


def test_what_needs_a_heavy_install_is_system() -> None:
    assert tier_of("tests/kafka/test_admin.py::test_x") == SYSTEM
    assert tier_of("tests/kafka/secure/test_bus.py::test_x") == SYSTEM
    assert tier_of("tests/integration/test_spark_source.py::test_x") == SYSTEM  # Spark's JVM
    assert tier_of("tests/kafka/test_spark_sources.py::test_x") == SYSTEM
    assert tier_of("tests/containers/test_compose.py::test_x") == SYSTEM
    assert tier_of("tests/spark_cluster/test_standalone_cluster.py::test_y[spark-submit]") == SYSTEM
    assert tier_of("tests/integration/shared_stack/test_dashboard.py::test_x") == SYSTEM


def test_every_directory_and_module_named_for_the_system_tier_exists() -> None:
    """A module renamed or moved would otherwise fall back to the fast tier, whose installs it lacks."""
    assert [path for path in (*SYSTEM_DIRS, *SYSTEM_MODULES) if not (ROOT / path).exists()] == []


def planned(target: str) -> list[str]:
    """What `make <target>` would run from scratch (`make -n -B`: every target out of date, nothing run but make)."""
    shown = subprocess.run(["make", "-n", "-B", "--no-print-directory", target], cwd=ROOT, capture_output=True,
                           text=True, timeout=120, check=True)
    return shown.stdout.replace("\\\n", " ").splitlines()


def test_the_fast_tier_installs_only_the_python_packages_and_runs_only_fast_tests() -> None:
    plan = planned("test-fast")
    heavy = [line for line in plan if re.search(r"\b(mvn|apt-get|podman|debootstrap|kafka_classes)\b", line)]
    assert heavy == [], heavy
    assert [line for line in plan if "pytest" in line][-1].endswith(" -m fast")


def test_the_system_tier_makes_every_install_and_the_suite_runs_both_tiers() -> None:
    system, whole = planned("test-system"), planned("test")
    for install in ("kafka-runtime/pom.xml", "spark-kafka/pom.xml", "placer-harness/pom.xml", "install -y -qq"):
        assert any(install in line for line in system) and any(install in line for line in whole), install
    assert [line for line in system if "pytest" in line][-1].endswith(" -m system")
    assert " -m " not in [line for line in whole if "pytest" in line][-1]
