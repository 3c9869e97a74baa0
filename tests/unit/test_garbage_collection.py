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


@pytest.fixture
def unfreeze():
    yield
    gc.unfreeze()


def test_a_freeze_is_due_once_what_is_held_has_grown_by_the_step() -> None:
    assert not garbage_collection.freeze_due(1_999, 0, every=2_000)
    assert garbage_collection.freeze_due(2_000, 0, every=2_000)
    assert not garbage_collection.freeze_due(3_000, 2_000, every=2_000)
    assert not garbage_collection.freeze_due(10, 5_000, every=2_000)  # shrinking never is


def test_growth_freezes_what_is_held_out_of_later_collections(unfreeze) -> None:
    growth = garbage_collection.FrozenGrowth(every=100)
    held = [{"topic": i} for i in range(150)]
    gc.unfreeze()
    assert growth.held(len(held))
    frozen = gc.get_freeze_count()
    assert frozen >= len(held)
    # A full collection no longer walks them: the objects a collection sees exclude the frozen ones.
    assert not any(o is held[0] for o in gc.get_objects())
    assert not growth.held(len(held) + 99)  # not grown by a full step since


def test_growth_counts_from_what_is_left_after_shrinking(unfreeze) -> None:
    growth = garbage_collection.FrozenGrowth(every=100)
    assert growth.held(1_000)
    assert not growth.held(200)  # shards given away
    assert growth.held(300)
