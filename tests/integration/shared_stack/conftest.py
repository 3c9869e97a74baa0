"""The stack the modules of this package share: one local broker, simulator and set of services, started by the first
of them to run in a worker and stopped once the last has run (package scope). They are one scheduling group
(tests/scheduling.py), so a run starts it once; before, every worker that ran one of them started its own and kept it
up, idle at a tenth of a core, until it left tests/integration."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from services.local.stack import LocalStack
from tests.integration.conftest import TEST_ENV
from tests.integration.harness import Ballast


@pytest.fixture(scope="package")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalStack]:
    run_dir: Path = tmp_path_factory.mktemp("stack")
    # An empty policy (the default); a test may write rules into it and must empty it again (test_hostile_input).
    policy = run_dir / "policy.yaml"
    policy.write_text("")
    local = LocalStack(run_dir, env={**TEST_ENV, "BALLAST_POLICY_FILE": str(policy)})
    try:
        local.start()
        yield local
    finally:
        local.stop()


@pytest.fixture(scope="package")
def ballast(stack: LocalStack) -> Iterator[Ballast]:
    client = Ballast(stack)
    yield client
    client.close()
