"""deploy/spark-worker-requirements.txt, what a Spark cluster's workers install: pinned as the project is, and enough
for what the executors import of Ballast (tests/spark_cluster runs its worker on exactly this list)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from packaging.utils import canonicalize_name

from tests.spark_cluster.worker_env import closure, listed

REPO = Path(__file__).resolve().parents[2]
# What Spark runs of Ballast's in Python away from the driver: the ballast_bus source, which plans its offsets and
# reads its partitions through busio.
EXECUTOR_MODULES = ("spark.bus_source", "services.common.busio")


def pins(path: Path) -> dict[str, str]:
    found = {}
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if "==" in line:
            name, _, version = line.partition("==")
            found[canonicalize_name(name)] = version.strip()
    return found


def test_every_requirement_is_pinned_at_the_projects_version() -> None:
    requirements = listed()
    assert requirements
    project = pins(REPO / "constraints.txt")
    for requirement in requirements:
        (spec,) = requirement.specifier
        assert spec.operator == "==", requirement
        assert project[canonicalize_name(requirement.name)] == spec.version, requirement


def test_the_requirements_cover_what_the_executors_import() -> None:
    probe = ("import json, sys; from importlib.metadata import packages_distributions; before = set(sys.modules); "
             + "; ".join(f"import {m}" for m in EXECUTOR_MODULES)
             + "; names = {m.split('.')[0] for m in set(sys.modules) - before}; pd = packages_distributions(); "
             "print(json.dumps(sorted({d for n in names for d in pd.get(n, [])})))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=REPO, timeout=120,
                          check=True)
    imported = {canonicalize_name(name) for name in json.loads(done.stdout)} - {"ballast"}
    assert {"confluent-kafka", "pyspark"} <= imported  # the probe sees third-party imports at all
    assert imported <= set(closure(listed())), imported - set(closure(listed()))
