from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import settings

# `make test` (and CI) runs the property tests on a fixed set of examples, so a run is reproducible and a red build
# means a change, not a new random draw. To explore further: HYPOTHESIS_PROFILE=explore make test, or pytest
# --hypothesis-seed=N.
settings.register_profile("repeatable", derandomize=True)
settings.register_profile("explore", derandomize=False)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "repeatable"))

REPO = Path(__file__).resolve().parents[1]

# The CLI uses the stack `ballast up` started when nothing else says where the bus is: tests never see a developer's
# stack (their own `ballast up` runs record theirs here, or in a directory of their own).
os.environ["BALLAST_STATE_DIR"] = tempfile.mkdtemp(prefix="ballast-test-state-")
SHARED = REPO.parent / "shared" / "reference"


@pytest.fixture(scope="session")
def recorded_dir() -> Path:
    path = SHARED / "cruise-control-recorded"
    if not path.is_dir():
        pytest.fail(f"{path} is missing: the tests read Cruise Control's recorded answers from ../shared")
    return path


@pytest.fixture(scope="session")
def openapi_dir() -> Path:
    return SHARED / "cruise-control-openapi"
