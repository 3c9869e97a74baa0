"""The suite's two tiers, decided here and nowhere else (tests/conftest.py marks every test with its tier).

- ``fast`` (`make test-fast`): the unit tests and the tests on the embedded stack (Tansu, the simulator, the services,
  a Spark session in process). They need only the Python packages (`make install`'s pip step), Java and Maven being on
  the machine.
- ``system`` (`make test-system`): the tests that need a heavy install: Kafka's jars and the broker plugin (the real
  local cluster of tests/kafka, its secured bus included), Spark's JVM Kafka source, Kafka's own placer (a jar built
  with Maven), the images and podman (tests/containers), root and network namespaces (tests/spark_cluster), Debian's
  Chromium (the dashboard's browser test).

`make test` runs both in one run (docs/testing.md).
"""

from __future__ import annotations

FAST = "fast"
SYSTEM = "system"

# Directories whose every test needs a heavy install, and the modules elsewhere that need one (what it is).
SYSTEM_DIRS = ("tests/kafka/", "tests/containers/", "tests/spark_cluster/")
SYSTEM_MODULES = {
    "tests/integration/shared_stack/test_dashboard.py": "Debian's Chromium (`make test` installs it)",
}


def tier_of(nodeid: str) -> str:
    """A test's tier, from its node id (its module's path from the repository's root)."""
    module = nodeid.split("::", 1)[0]
    return SYSTEM if module.startswith(SYSTEM_DIRS) or module in SYSTEM_MODULES else FAST
