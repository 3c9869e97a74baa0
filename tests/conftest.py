from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
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
