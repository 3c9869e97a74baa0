"""``java.util.Random`` and the two JDK behaviours Kafka's ``StripedReplicaPlacer`` consumes it through, in Python, so
that Ballast's ``striped`` placer can draw the very numbers Kafka's does from the same seed: the 48-bit linear
congruential generator (``next``, ``nextInt(bound)``), ``Collections.shuffle``, and the iteration order of a
``HashMap`` keyed by ``Optional<String>`` (which decides in what order the placer's racks consume random numbers).

Written from the JDK's documented algorithms (the generator's constants and ``nextInt``'s rejection loop are part of
``java.util.Random``'s specification).
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, MutableSequence, Sequence
from typing import TypeVar

T = TypeVar("T")
K = TypeVar("K", bound=Hashable)

_MULTIPLIER = 0x5DEECE66D
_ADDEND = 0xB
_MASK = (1 << 48) - 1


def _int32(value: int) -> int:
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value & 0x80000000 else value


class JavaRandom:
    """``new java.util.Random(seed)``. Offers ``randrange(n)`` (= ``nextInt(n)``) and ``shuffle(list)``
    (= ``Collections.shuffle(list, random)``), the two calls Ballast's placers make."""

    def __init__(self, seed: int) -> None:
        self._seed = (seed ^ _MULTIPLIER) & _MASK

    def _next(self, bits: int) -> int:
        self._seed = (self._seed * _MULTIPLIER + _ADDEND) & _MASK
        return _int32(self._seed >> (48 - bits))

    def next_int(self, bound: int) -> int:
        if bound <= 0:
            raise ValueError("bound must be positive")
        r = self._next(31)
        m = bound - 1
        if bound & m == 0:  # a power of two
            return _int32((bound * r) >> 31)
        u = r
        while True:
            r = u % bound
            if _int32(u - r + m) >= 0:
                return r
            u = self._next(31)

    def randrange(self, bound: int) -> int:
        return self.next_int(bound)

    def shuffle(self, items: MutableSequence[T]) -> None:
        for i in range(len(items), 1, -1):
            j = self.next_int(i)
            items[i - 1], items[j] = items[j], items[i - 1]


def java_string_hash(text: str) -> int:
    h = 0
    for unit in text.encode("utf-16-be").hex(" ", 2).split():  # UTF-16 code units, as Java strings hold them
        h = (31 * h + int(unit, 16)) & 0xFFFFFFFF
    return _int32(h)


def hashmap_order(keys: Sequence[str | None]) -> list[str | None]:
    """The order a ``HashMap<Optional<String>, V>`` filled with ``keys`` (in this order, no repeats) iterates them:
    by bucket of the final table, then insertion order within a bucket (``Optional.empty()`` hashes to 0)."""
    capacity = 16
    while len(keys) > capacity * 0.75:
        capacity *= 2

    def bucket(key: str | None) -> int:
        h = java_string_hash(key) if key is not None else 0
        h &= 0xFFFFFFFF
        return (h ^ (h >> 16)) & (capacity - 1)

    return [key for _, _, key in sorted((bucket(k), i, k) for i, k in enumerate(keys))]


def ordered(items: Iterable[K], order: Sequence[K]) -> list[K]:
    """``items`` in ``order``'s order."""
    rank = {key: i for i, key in enumerate(order)}
    return sorted(items, key=lambda item: rank[item])
