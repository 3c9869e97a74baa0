from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

# Faster loops than production defaults, so failure paths resolve within seconds in tests.
TEST_ENV = {
    "BALLAST_REPLICAS_CHANGE__RETRY_INITIAL_S": "0.5",
    "BALLAST_REPLICAS_CHANGE__RETRY_MAX_S": "2",
    "BALLAST_REPLICAS_CHANGE__POLL_INTERVAL_S": "0.5",
    "BALLAST_RECONCILER__RESYNC_INTERVAL_S": "2",
    # A topic the cluster refused is asked again after 2 s, not 30 s (the backoff doubles up to 10 s).
    "BALLAST_RECONCILER__RETRY_INITIAL_S": "2",
    "BALLAST_RECONCILER__RETRY_MAX_S": "10",
    "BALLAST_SIMULATOR__MIN_EXECUTION_S": "0.3",
    # A burst applied at once reaches the service over several stream batches; on a loaded machine they can be more
    # than the default 0.3 s apart, and the tests count requests.
    "BALLAST_REPLICAS_CHANGE__BATCH_QUIET_S": "0.3",
    "BALLAST_REPLICAS_CHANGE__BATCH_WINDOW_S": "1.5",
}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "integration" in str(item.path):
            item.add_marker(pytest.mark.integration)


@pytest.fixture(autouse=True)
def clean_faults(request: pytest.FixtureRequest) -> Iterator[None]:
    yield
    if "ballast" in request.fixturenames:
        request.getfixturevalue("ballast").fault("reset")


@pytest.fixture
def name(request: pytest.FixtureRequest) -> str:
    """A topic-name prefix unique to the test, so tests sharing the stack never meet."""
    return f"{request.node.name.removeprefix('test_')[:30].replace('_', '-')}-{uuid.uuid4().hex[:6]}"
