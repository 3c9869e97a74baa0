"""The backlog gauge's arithmetic (issue 18, item 14), on a stand-in for faust's consumer: what it reads of faust is
its assignment, each partition's end offset and the last offset read. Scraped from a live service in
tests/integration/shared_stack/test_metrics.py."""

from __future__ import annotations

from collections import defaultdict
from types import SimpleNamespace

from faust.types import TP

from services.common.health import backlog


class Consumer:
    def __init__(self, ends: dict[TP, int | None], read: dict[TP, int]) -> None:
        self.ends = ends
        self._read_offset = defaultdict(lambda: None, read)

    def assignment(self) -> set[TP]:
        return set(self.ends)

    def highwater(self, tp: TP) -> int | None:
        return self.ends[tp]


def test_records_after_the_last_one_read_up_to_each_partitions_end_summed_by_topic() -> None:
    specs0, specs1, actions, unfetched = TP("specs", 0), TP("specs", 1), TP("actions", 0), TP("status", 0)
    app = SimpleNamespace(consumer=Consumer({specs0: 10, specs1: 5, actions: 3, unfetched: None},
                                            {specs0: 9, specs1: 1}))
    # specs-0 read to its end (offset 9 of 0..9), specs-1 three behind, actions never read: all 3.
    assert backlog(app) == {"specs": 3, "actions": 3}


def test_a_consumer_not_started_has_no_backlog() -> None:
    class Starting:
        @property
        def consumer(self) -> Consumer:
            raise RuntimeError("consumer not started")

    assert backlog(Starting()) == {}
