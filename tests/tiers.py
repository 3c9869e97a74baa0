"""The suite's two tiers, decided here and nowhere else (tests/conftest.py marks every test with its tier).

- ``fast`` (`make test-fast`): the unit tests and the tests on the embedded stack (Tansu, the simulator, the services).
  They need only the Python packages (`make install`'s pip step).
- ``system`` (`make test-system`): the tests that need a heavy install: Kafka's jars and the broker plugin (the real
  local cluster of tests/kafka, its secured bus included), Spark's JVM Kafka source, Kafka's own placer (a jar built
  with Maven), the images and podman (tests/containers), root and network namespaces (tests/spark_cluster), Debian's
  Chromium (the dashboard's browser test), Spark's JVM (the Spark job in process: a JVM of its own and its Python
  workers: in a fresh clone's fast run on a 2-core machine, its three modules' longest tests and their sessions' starts
  took 411 s, 2026-12-02).

`make test` runs both in one run (docs/testing.md).
"""

from __future__ import annotations

FAST = "fast"
SYSTEM = "system"

# Directories whose every test needs a heavy install, and the modules elsewhere that need one (what it is).
SYSTEM_DIRS = ("tests/kafka/", "tests/containers/", "tests/spark_cluster/")
SYSTEM_MODULES = {
    "tests/integration/shared_stack/test_dashboard.py": "Debian's Chromium (`make test` installs it)",
    "tests/integration/test_spark_source.py": "Spark's JVM (a session in process)",
    "tests/integration/test_spark_aggregates.py": "Spark's JVM (a session in process)",
    "tests/integration/test_load_flow.py": "Spark's JVM (the stack's Spark job)",
}


def tier_of(nodeid: str) -> str:
    """A test's tier, from its node id (its module's path from the repository's root)."""
    module = nodeid.split("::", 1)[0]
    return SYSTEM if module.startswith(SYSTEM_DIRS) or module in SYSTEM_MODULES else FAST
