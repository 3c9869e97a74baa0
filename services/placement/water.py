"""Water-filling: hand out units so that the emptiest members get them first, as water rises in a tank.

Members (brokers) sit in groups (the child domains of a rack-tree node), which may nest (the domains below them).
Every member has a level (the replicas or leaderships it already holds) and takes at most ``cap`` units; a group
takes at most its own ``cap`` (what the spread rule lets the domain receive), so a domain whose brokers are empty
but can only be reached one replica per partition does not look roomier than it is. The water line is the highest level the units can raise every member to;
whatever is left below the next line (fewer units than members at the line) goes one unit at a time to the groups
the caller's key ranks first, so that the caller decides how ties are broken.

The same routine drains: filling levels ``-remaining`` takes first from the groups with the most remaining.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Group:
    # (level, cap) of every member directly in the group.
    members: Sequence[tuple[int, int]]
    cap: int
    # Groups nested inside this one (sub-domains with caps of their own).
    parts: Sequence[Group] = ()

    def need(self, line: int) -> int:
        """Units that bring every member of the group up to ``line`` (as far as the caps allow)."""
        total = 0
        for level, cap in self.members:
            if level < line:
                total += min(line - level, cap)
        for part in self.parts:
            total += part.need(line)
        return min(total, self.cap)

    def room(self) -> int:
        return min(self.cap, sum(cap for _, cap in self.members) + sum(part.room() for part in self.parts))

    def spans(self) -> Iterator[tuple[int, int]]:
        yield from self.members
        for part in self.parts:
            yield from part.spans()


def fill(units: int, groups: Sequence[Group], key: Callable[[int, int], tuple], line: int | None = None
         ) -> list[int]:
    """How many of ``units`` each group receives. ``key(group, given so far)`` orders the groups for the units
    left below the next water line (lowest first; pass ``line`` when the caller has it already). Gives less than
    ``units`` only when every group is full."""
    if not groups:
        return []
    if units >= sum(group.room() for group in groups):
        return [group.room() for group in groups]
    low = water_line(units, groups) if line is None else line
    given = [group.need(low) for group in groups]
    left = units - sum(given)
    slack = [group.need(low + 1) - base for group, base in zip(groups, given)]
    extra = [0] * len(groups)
    queue = [(key(index, given[index]), index) for index, room in enumerate(slack) if room > 0]
    heapq.heapify(queue)
    while left and queue:
        _, index = heapq.heappop(queue)
        extra[index] += 1
        left -= 1
        if extra[index] < slack[index]:
            heapq.heappush(queue, (key(index, given[index] + extra[index]), index))
    return [base + more for base, more in zip(given, extra)]


def water_line(units: int, groups: Sequence[Group]) -> int:
    """The highest line whose needs fit in ``units`` (needs grow with the line)."""
    low = min((level for group in groups for level, _ in group.spans()), default=0)
    high = max((level + cap for group in groups for level, cap in group.spans()), default=0)
    while low < high:
        middle = (low + high + 1) // 2
        if sum(group.need(middle) for group in groups) <= units:
            low = middle
        else:
            high = middle - 1
    return low
