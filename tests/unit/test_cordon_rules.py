"""The one rule of `ballast brokers cordon|uncordon` (services/domain/cordons.py): what cordoned.log.dirs becomes."""

from __future__ import annotations

import pytest

from services.domain.cordons import cordon_value, cordoned_dirs

DIRS = ["/data-0", "/data-1", "/data-2"]


def test_a_whole_broker_is_star_so_a_directory_added_later_is_cordoned_too() -> None:
    assert cordon_value(None, DIRS, cordon=True) == "*"
    assert cordon_value("/data-0", DIRS, ["/data-1", "/data-2"], cordon=True) == "*"
    assert cordoned_dirs("*", DIRS) == frozenset(DIRS)


def test_directories_are_added_and_taken_away_one_by_one() -> None:
    assert cordon_value(None, DIRS, ["/data-1"], cordon=True) == "/data-1"
    assert cordon_value("/data-1", DIRS, ["/data-0"], cordon=True) == "/data-0,/data-1"
    assert cordon_value("*", DIRS, ["/data-2"], cordon=False) == "/data-0,/data-1"
    assert cordon_value("/data-1", DIRS, ["/data-1"], cordon=False) is None  # nothing left: the config deleted
    assert cordon_value("/data-1", DIRS, cordon=False) is None
    assert cordon_value(None, DIRS, ["/data-1"], cordon=False) is None


def test_a_directory_the_broker_does_not_have_is_refused() -> None:
    with pytest.raises(ValueError, match="not a log directory of the broker: /nowhere"):
        cordon_value(None, DIRS, ["/nowhere"], cordon=True)
