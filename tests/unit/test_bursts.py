"""Bursts: the header a publisher marks them with, and when a batch that holds them may go."""

from __future__ import annotations

import pytest

from events.bursts import HEADER, Burst, burst_of
from services.common import bursts as gathering
from services.common.bursts import BurstGathering


def test_a_burst_reads_back_from_its_header_and_unreadable_headers_are_no_burst() -> None:
    burst = Burst.new(300)
    assert burst_of([("other", b"x"), burst.header()]) == burst
    for value in (b"no-size", b"id/0", b"id/-3", b"id/\xc2\xb2", b"/5", None, b"x/" + b"9" * 5000,
                  b"x" * 1_000_000 + b"/3"):
        assert burst_of([(HEADER, value)]) is None, value[:20] if value else value
    assert burst_of(None) is None and burst_of([]) is None
    # faust's headers may be a mapping too.
    assert burst_of({HEADER: b"some-id/3"}) == Burst("some-id", 3)


def _marked(burst: Burst) -> list[tuple[str, bytes]]:
    return [burst.header()]


def test_a_batch_goes_once_every_burst_it_holds_is_complete() -> None:
    batch = BurstGathering(wait_s=5)
    a, b = Burst.new(2), Burst.new(1)
    batch.note(_marked(a))
    assert batch.holding() and not batch.done()
    batch.note(_marked(b))
    assert batch.holding() and not batch.done()
    batch.note(_marked(a))
    assert not batch.holding() and batch.done()


def test_an_unmarked_event_keeps_the_quiet_period_and_a_batch_of_none_is_not_done() -> None:
    batch = BurstGathering(wait_s=5)
    assert not batch.done()
    burst = Burst.new(1)
    batch.note(_marked(burst))
    batch.note(None)
    assert not batch.holding() and not batch.done()


def test_a_burst_larger_than_a_batch_goes_on_counting_in_the_next() -> None:
    batch = BurstGathering(wait_s=5)
    burst = Burst.new(3)
    batch.note(_marked(burst))
    batch.note(_marked(burst))
    batch.taken()  # full: the batch went with two of three
    assert not batch.holding() and not batch.done()
    batch.note(_marked(burst))
    assert batch.done()
    batch.taken()
    # Complete: a record of it delivered again is complete too, rather than a burst that never ends.
    batch.note(_marked(burst))
    assert batch.done()


def test_bursts_whose_rest_never_comes_are_forgotten_oldest_first(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gathering, "MAX_BURSTS", 3)
    batch = BurstGathering(wait_s=5)
    stalled = [Burst.new(2) for _ in range(4)]
    for burst in stalled:
        batch.note(_marked(burst))
    batch.taken()
    # The oldest was forgotten (it holds no batch): its last record alone no longer completes it, it starts it again.
    batch.note(_marked(stalled[0]))
    assert batch.holding()
    batch.taken()
    # The newest is still counted: its second record completes it.
    batch.note(_marked(stalled[3]))
    assert batch.done()


def test_a_burst_forgotten_while_its_batch_waits_no_longer_holds_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gathering, "MAX_BURSTS", 2)
    batch = BurstGathering(wait_s=5)
    stalled, a, b = Burst.new(5), Burst.new(2), Burst.new(2)
    for burst in (stalled, a, b):  # the third open burst pushes the stalled one out
        batch.note(_marked(burst))
    batch.note(_marked(a))
    assert batch.holding()
    batch.note(_marked(b))
    assert batch.done()
