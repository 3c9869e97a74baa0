import gc

import pytest
from structlog.testing import capture_logs

from services.common import garbage_collection


@pytest.fixture
def restore_gc():
    thresholds, callbacks = gc.get_threshold(), list(gc.callbacks)
    yield
    gc.set_threshold(*thresholds)
    gc.callbacks[:] = callbacks


def test_thresholds_are_raised_and_long_collections_reported(restore_gc, monkeypatch) -> None:
    garbage_collection.tune_garbage_collection()
    assert gc.get_threshold() == garbage_collection.THRESHOLDS
    monkeypatch.setattr(garbage_collection, "SLOW_S", 0.0)  # every collection counts as long
    with capture_logs() as logs:
        gc.collect()
    (report,) = [e for e in logs if e["event"] == "slow garbage collection"]
    assert report["generation"] == 2 and report["log_level"] == "warning" and report["seconds"] >= 0


def test_short_collections_are_not_reported(restore_gc, monkeypatch) -> None:
    garbage_collection.tune_garbage_collection()
    monkeypatch.setattr(garbage_collection, "SLOW_S", 3600.0)
    with capture_logs() as logs:
        gc.collect()
    assert not [e for e in logs if e["event"] == "slow garbage collection"]
