"""Moving replicas onto brokers that joined, as few as possible.

1. Repair: a grown tree can change a partition's spread rule (RF 3 over two DCs, then a third joins); such
   partitions first get a replica moved onto a new broker.
2. Fill: each new broker takes its fair share (floor of replicas / brokers), from brokers above that share only,
   nearest in the rack tree first (a move inside one rack keeps every spread and every domain's total), followers
   before leaders, and only where the partition stays spread at every level.
3. Level: brokers still outside floor..ceiling are evened out, through a chain of moves where replicas may not cross
   a domain boundary directly.
4. Leaders: evened out by reordering replicas - a preferred-leader change, which copies no data - and, where
   groups of brokers share no partitions, by trading a leader replica for a follower replica (two moves, within the
   5% budget unless the leader range is above 2).

Every move in 2 goes from a broker above its final count to one below it, so the replicas moved equal the lower
bound whenever such moves exist; 1 and 3 add moves only where the contract needs them.
"""

from __future__ import annotations

import heapq
from collections import Counter, deque
from collections.abc import Iterable, Iterator

from services.placement.metrics import best_spread
from services.placement.model import Assignment, ClusterView, PlacementError
from services.placement.rack_tree import Domain, broker_paths, build_tree

PartitionRef = tuple[str, int]


def fair_share(cluster: ClusterView) -> int:
    """Replicas each broker should hold at least: the lower bound of what a new broker must receive."""
    alive = {b.id for b in cluster.brokers if b.alive}
    total = sum(1 for parts in cluster.assignments.values() for r in parts for b in r if b in alive)
    return total // len(alive) if alive else 0


def lower_bound(cluster: ClusterView) -> int:
    """The fewest replicas any balanced result moves: every replica above a broker's final count must leave it, and
    the final counts are floor or ceil of the average with the ceilings going to the brokers holding the most."""
    alive = [b.id for b in cluster.brokers if b.alive]
    if not alive:
        return 0
    load = Counter({b: 0 for b in alive})
    for parts in cluster.assignments.values():
        for replicas in parts:
            for b in replicas:
                if b in load:
                    load[b] += 1
    low, extra = divmod(sum(load.values()), len(alive))
    ordered = sorted(load.values(), reverse=True)
    return sum(max(0, n - low - (1 if i < extra else 0)) for i, n in enumerate(ordered))


def spread_onto(cluster: ClusterView, new_brokers: Iterable[int], *, only_onto_new: bool = False
                ) -> dict[str, Assignment]:
    """New assignments (every topic) after filling ``new_brokers`` to their fair share and evening out leaders.
    ``only_onto_new``: every replica moved goes to one of ``new_brokers`` (Cruise Control's add_broker); the old
    brokers are not levelled among themselves and leaders move only by reordering."""
    new = sorted(set(new_brokers))
    alive = [b for b in cluster.brokers if b.alive]
    if unknown := [b for b in new if b not in {x.id for x in alive}]:
        raise PlacementError(f"new broker(s) {unknown} are not alive brokers of the cluster")
    mover = _Mover(cluster, alive)
    target = fair_share(cluster)
    mover.repair_spread(new, target, only_new=only_onto_new)
    for broker in new:
        mover.fill(broker, target)
    if only_onto_new:
        balance_leaders(mover.assignments, {b.id for b in alive})
        return mover.assignments
    mover.level()
    balance_leaders(mover.assignments, {b.id for b in alive})
    # Trades for leadership cost two moves each: within the 5% over the lower bound the contract allows, and
    # beyond it only to bring the leader range down to 2.
    mover.swap_for_leaders(budget=int(lower_bound(cluster) * 1.05))
    return mover.assignments


def even_out(cluster: ClusterView) -> dict[str, Assignment]:
    """A full rebalance: replicas and leaders per broker within one of each other, spread kept, as few moves as the
    levelling finds (Cruise Control's rebalance)."""
    alive = [b for b in cluster.brokers if b.alive]
    mover = _Mover(cluster, alive)
    mover.level()
    balance_leaders(mover.assignments, {b.id for b in alive})
    mover.swap_for_leaders(budget=int(lower_bound(cluster) * 1.05))
    return mover.assignments


def drain(cluster: ClusterView, leaving: Iterable[int]) -> dict[str, Assignment]:
    """Every replica moved off the ``leaving`` brokers (Cruise Control's remove_broker): each goes to the remaining
    broker holding fewest replicas among those that keep the partition's spread (nearest to the leaving one among
    equals). A partition already badly spread, or one no remaining broker can spread well, goes where its spread is
    least exceeded. Raises PlacementError when a replica has nowhere to go."""
    gone = set(leaving)
    stay = [b for b in cluster.brokers if b.alive and b.id not in gone]
    if not stay:
        raise PlacementError("no broker would remain to take the replicas")
    mover = _Mover(cluster, [b for b in cluster.brokers if b.alive or b.id in gone])
    mover.spread = Spread(build_tree(stay))  # the rule of the cluster they leave behind
    for source in sorted(gone):
        near = mover.paths.get(source, ())
        for topic, index in sorted(mover.hosting.get(source, ())):
            replicas = mover.assignments[topic][index]
            options = sorted((b.id for b in stay if b.id not in replicas),
                             key=lambda b: (mover.load[b], -_shared_domains(mover.paths[b], near), b))
            if not options:
                raise PlacementError(f"{topic}-{index} cannot leave broker {source}: every remaining broker already "
                                     "holds one of its replicas")
            target = next((b for b in options if mover.spread.ok(_swap(replicas, source, b))), None)
            if target is None:
                target = min(options, key=lambda b: mover.spread.excess(_swap(replicas, source, b)))
            mover._apply(topic, index, _swap(replicas, source, target), source, target)
    balance_leaders(mover.assignments, {b.id for b in stay})
    return mover.assignments


def _swap(replicas: list[int], source: int, target: int) -> list[int]:
    return [target if b == source else b for b in replicas]


class _Mover:
    def __init__(self, cluster: ClusterView, alive: list) -> None:
        self.spread = Spread(build_tree(alive))
        self.paths = self.spread.paths
        self.assignments = {t: [list(r) for r in parts] for t, parts in cluster.assignments.items()}
        self.hosting: dict[int, set[PartitionRef]] = {b.id: set() for b in alive}
        for topic, parts in self.assignments.items():
            for index, replicas in enumerate(parts):
                for b in replicas:
                    if b in self.hosting:
                        self.hosting[b].add((topic, index))
        self.load: Counter[int] = Counter({b: len(refs) for b, refs in self.hosting.items()})
        self.solo: Counter[int] = Counter(
            {b: sum(1 for t, i in refs if len(self.assignments[t][i]) == 1) for b, refs in self.hosting.items()})
        self.solo_floor, extra = divmod(sum(self.solo.values()), max(1, len(self.load)))
        self.solo_ceiling = self.solo_floor + (1 if extra else 0)
        self.moves = 0
        self.ceiling = -(-sum(self.load.values()) // max(1, len(self.load)))

    def repair_spread(self, new: list[int], target: int, only_new: bool = False) -> None:
        """Partitions the grown tree finds badly spread (say a third DC joined: RF 3 now means one replica per DC)
        get a replica moved onto a new broker first, always from the most loaded broker that has such a partition;
        these moves count towards the new brokers' share."""
        broken = [(t, i) for t, parts in self.assignments.items() for i, r in enumerate(parts)
                  if not self.spread.ok(r)]
        if not broken:
            return
        hosted: dict[int, list[PartitionRef]] = {}
        for topic, index in broken:
            for b in self.assignments[topic][index]:
                hosted.setdefault(b, []).append((topic, index))
        candidates = {b: iter(refs) for b, refs in hosted.items() if b in self.load}
        heap = [(-self.load[b], b) for b in candidates]
        heapq.heapify(heap)
        while heap:
            negative_load, source = heapq.heappop(heap)
            if -negative_load != self.load[source]:
                heapq.heappush(heap, (-self.load[source], source))
                continue
            # New brokers while they are below their share, then whichever broker holds the fewest: the spread
            # comes first, the levelling afterwards evens the counts out.
            options = sorted(new if only_new else self.load,
                             key=lambda b: (not (b in new and self.load[b] < target), self.load[b], b))
            if self._repair_one(source, options, candidates[source]):
                heapq.heappush(heap, (-self.load[source], source))

    def _repair_one(self, source: int, options: list[int], refs: Iterator[PartitionRef]) -> bool:
        for topic, index in refs:
            replicas = self.assignments[topic][index]
            if source not in replicas or self.spread.ok(replicas):
                continue
            for to in options:
                if to == source:
                    continue
                moved = [to if b == source else b for b in replicas]
                if to not in replicas and self.spread.ok(moved):
                    self._apply(topic, index, moved, source, to)
                    return True
        return False

    def _apply(self, topic: str, index: int, moved: list[int], source: int, to: int) -> None:
        self.assignments[topic][index] = moved
        self.hosting[source].discard((topic, index))
        self.hosting[to].add((topic, index))
        if len(moved) == 1:
            self.solo[source] -= 1
            self.solo[to] += 1
        self.load[source] -= 1
        self.load[to] += 1
        self.moves += 1

    def fill(self, to: int, goal: int) -> None:
        """Move replicas onto ``to`` until it holds ``goal``, or no move keeps the spread.

        Only brokers above ``goal`` give, so no broker is drained below what it must finally hold (each move is
        then one the lower bound counts). Nearest first: a move inside a rack changes no domain's total, so sibling
        domains stay even, and it keeps every partition's spread whatever the partition; among equally near
        brokers, those above the ceiling, most loaded first."""
        near = self.paths[to]

        def key(b: int) -> tuple[int, bool, int, int]:
            return (-_shared_domains(self.paths[b], near), self.load[b] <= self.ceiling, -self.load[b], b)

        heap = [key(b) for b in self.load if b != to and self.load[b] > goal]
        heapq.heapify(heap)
        candidates: dict[int, dict[str, Iterator[PartitionRef]]] = {}
        while self.load[to] < goal and heap:
            popped = heapq.heappop(heap)
            source = popped[-1]
            if self.load[source] <= goal:
                continue
            if popped != key(source):
                heapq.heappush(heap, key(source))
                continue
            if source not in candidates:
                candidates[source] = self._hosted(source)
            if self._move_from(source, to, candidates[source]):
                heapq.heappush(heap, key(source))
            # else: nothing on this source can go to ``to`` without breaking the spread; it leaves the heap.

    def _hosted(self, broker: int) -> dict[str, Iterator[PartitionRef]]:
        """The partitions ``broker`` could give, by the role it has in them. Snapshots: a partition that leaves
        ``broker`` meanwhile is skipped when reached."""
        kinds: dict[str, list[PartitionRef]] = {"follower": [], "leader": [], "solo": []}
        for ref in sorted(self.hosting[broker]):
            replicas = self.assignments[ref[0]][ref[1]]
            kinds["solo" if len(replicas) == 1 else "leader" if replicas[0] == broker else "follower"].append(ref)
        return {kind: iter(refs) for kind, refs in kinds.items()}

    def _move_from(self, source: int, to: int, refs: dict[str, Iterator[PartitionRef]]) -> bool:
        found = self._first_movable(source, to, refs)
        if found is None:
            return False
        topic, index = found
        self._apply(topic, index, [to if b == source else b for b in self.assignments[topic][index]], source, to)
        return True

    def _first_movable(self, source: int, to: int, refs: dict[str, Iterator[PartitionRef]]) -> PartitionRef | None:
        """The first partition on ``source`` that can go to ``to`` with its spread kept.

        Followers first: leadership of a replicated partition is evened out afterwards by reordering, for free.
        A single-replica partition's leadership moves only with it, so those go first while ``to`` holds fewer
        than its share of them (the ceiling) and ``source`` more than the floor, and last otherwise."""
        order = ["follower", "leader", "solo"]
        if self.solo[to] < self.solo_ceiling and self.solo[source] > self.solo_floor:
            order = ["solo", *order[:2]]
        for kind in order:
            for topic, index in refs[kind]:
                replicas = self.assignments[topic][index]
                if source not in replicas or to in replicas:
                    continue
                if self.spread.ok([to if b == source else b for b in replicas]):
                    return topic, index
        return None

    def swap_for_leaders(self, budget: int, limit: int = 10_000) -> None:
        """Where reordering cannot even out leaders - the brokers that follow each other's partitions split into
        groups with different shares of single-replica partitions, whose leadership moves only with the replica -
        trade a leader replica of the broker leading most for a follower replica of the one leading fewest.
        Replica counts stay as they are; each trade moves two replicas."""
        for _ in range(limit):
            leaders = Counter({b: 0 for b in self.load})
            for parts in self.assignments.values():
                for replicas in parts:
                    if replicas and replicas[0] in leaders:
                        leaders[replicas[0]] += 1
            most = max(leaders, key=lambda b: (leaders[b], -b))
            fewest = min(leaders, key=lambda b: (leaders[b], b))
            spread = leaders[most] - leaders[fewest]
            if spread <= 1 or (spread == 2 and self.moves + 2 > budget):
                return
            # The extremes first; when they cannot trade (a spread rule keeps their replicas apart), any pair that
            # narrows the gap at one end.
            ordered = sorted(leaders, key=lambda b: (leaders[b], b))
            pairs = [(most, fewest)]
            pairs += [(most, b) for b in ordered if leaders[b] < leaders[most] - 1 and b != fewest]
            pairs += [(b, fewest) for b in reversed(ordered) if leaders[b] > leaders[fewest] + 1 and b != most]
            if not any(self._trade(giver, taker) for giver, taker in pairs):
                return

    def _trade(self, most: int, fewest: int) -> bool:
        led = [(t, i) for t, i in sorted(self.hosting[most]) if self.assignments[t][i][0] == most]
        followed = [(t, i) for t, i in sorted(self.hosting[fewest]) if self.assignments[t][i][0] != fewest]
        for lt, li in led:
            given = self.assignments[lt][li]
            if fewest in given:
                continue
            moved_lead = [fewest if b == most else b for b in given]
            if not self.spread.ok(moved_lead):
                continue
            for ft, fi in followed:
                taken = self.assignments[ft][fi]
                if most in taken or (ft, fi) == (lt, li):
                    continue
                moved_follow = [most if b == fewest else b for b in taken]
                if self.spread.ok(moved_follow):
                    self._apply(lt, li, moved_lead, most, fewest)
                    self._apply(ft, fi, moved_follow, fewest, most)
                    return True
        return False

    def level(self) -> None:
        """Bring every broker to within one replica of the others, where the new brokers' share did not (a grown
        tree whose spread rules changed can leave old brokers uneven)."""
        total = sum(self.load.values())
        low = total // len(self.load)
        for goal in (low, low + (1 if total % len(self.load) else 0)):
            for broker in sorted(self.load, key=lambda b: (self.load[b], b)):
                if max(self.load.values()) <= goal:
                    break  # nobody left to give: those below the ceiling are the ones the total leaves there
                if self.load[broker] < goal:
                    self.fill(broker, goal)
                while self.load[broker] < goal and self._chain(broker, goal):
                    pass

    def _chain(self, to: int, goal: int) -> bool:
        """One replica more for ``to`` when no broker above ``goal`` can give it one directly: a broker that can
        gives, and takes from one that can give to it, ... back to one above ``goal`` (breadth first, so the
        fewest extra moves). Needed when replicas may not cross a domain boundary and the loaded broker is
        behind one."""
        parent: dict[int, tuple[int, PartitionRef] | None] = {to: None}
        queue = deque([to])
        while queue:
            taker = queue.popleft()
            for giver in sorted(self.load, key=lambda b: (-self.load[b], b)):
                if giver in parent:
                    continue
                ref = self._first_movable(giver, taker, self._hosted(giver))
                if ref is None:
                    continue
                parent[giver] = (taker, ref)
                if self.load[giver] > goal:
                    step = parent[giver]
                    while step is not None:
                        taker, (topic, index) = step
                        replicas = self.assignments[topic][index]
                        self._apply(topic, index, [taker if b == giver else b for b in replicas], giver, taker)
                        giver, step = taker, parent[taker]
                    return True
                queue.append(giver)
        return False


def balance_leaders(assignments: dict[str, Assignment], alive: set[int]) -> None:
    """Even out leaders per broker (within one where the replica sets allow) by making a follower the leader."""
    refs = [(t, i) for t, parts in assignments.items() for i, r in enumerate(parts) if r and r[0] in alive]
    if not refs or not alive:
        return
    leaders = Counter({b: 0 for b in alive})
    following: dict[int, list[PartitionRef]] = {b: [] for b in alive}
    for topic, index in refs:
        replicas = assignments[topic][index]
        leaders[replicas[0]] += 1
        for b in replicas[1:]:
            if b in following:
                following[b].append((topic, index))
    low = len(refs) // len(alive)
    high = low + (1 if len(refs) % len(alive) else 0)

    def lead(follower: int, ref: PartitionRef) -> int:
        replicas = assignments[ref[0]][ref[1]]
        current = replicas[0]
        at = replicas.index(follower)
        replicas[0], replicas[at] = follower, current
        following[current].append(ref)
        return current

    def shift_one(start: int, goal: int) -> bool:
        """One more leadership for ``start``: it leads a partition it follows, whose leader leads another it
        follows, ... until a broker leading more than ``goal`` gives one up (breadth first: shortest chain)."""
        parent: dict[int, tuple[int, PartitionRef] | None] = {start: None}
        queue = deque([start])
        while queue:
            broker = queue.popleft()
            for ref in following[broker]:
                replicas = assignments[ref[0]][ref[1]]
                current = replicas[0]
                if current == broker or broker not in replicas or current in parent:
                    continue
                parent[current] = (broker, ref)
                if leaders[current] > goal:
                    leaders[current] -= 1
                    leaders[start] += 1
                    step = parent[current]
                    while step is not None:
                        broker, ref = step
                        lead(broker, ref)
                        step = parent[broker]
                    return True
                queue.append(current)
        return False

    # First bring everyone up to the floor, then drain those above the ceiling.
    for goal in (low, high):
        for broker in sorted(alive, key=lambda b: leaders[b]):
            while leaders[broker] < goal and shift_one(broker, goal):
                pass


def _shared_domains(a: tuple[Domain, ...], b: tuple[Domain, ...]) -> int:
    """How many domains, from the root down, two brokers' paths have in common."""
    return sum(1 for x, y in zip(a, b) if x is y)


class Spread:
    """The contract's spread rule on one rack tree: no domain holds more of a partition's replicas than the best
    spread of its parent's count over the parent's children allows."""

    def __init__(self, root: Domain) -> None:
        self.paths = broker_paths(root)
        self._capacities = {id(d): tuple(c.capacity for c in d.children) for d in root.walk() if d.children}
        self._allowed: dict[tuple[int, int], int] = {}

    def ok(self, replicas: list[int]) -> bool:
        inside: dict[int, int] = {}
        for b in replicas:
            for domain in self.paths.get(b, ()):
                inside[id(domain)] = inside.get(id(domain), 0) + 1
        # Only domains holding some of the replicas can be over; a broker holds one at most.
        for b in replicas:
            path = self.paths.get(b, ())
            for parent, child in zip(path, path[1:-1]):
                if inside[id(child)] > self.allowed(parent, inside[id(parent)]):
                    return False
        return True

    def excess(self, replicas: list[int]) -> int:
        """How many replicas over the rule, summed over domains (0 when ``ok``)."""
        inside: dict[int, int] = {}
        for b in replicas:
            for domain in self.paths.get(b, ()):
                inside[id(domain)] = inside.get(id(domain), 0) + 1
        over, seen = 0, set()
        for b in replicas:
            path = self.paths.get(b, ())
            for parent, child in zip(path, path[1:-1]):
                if id(child) not in seen:
                    seen.add(id(child))
                    over += max(0, inside[id(child)] - self.allowed(parent, inside[id(parent)]))
        return over

    def allowed(self, parent: Domain, k: int) -> int:
        key = (id(parent), k)
        if key not in self._allowed:
            self._allowed[key] = best_spread(k, self._capacities[id(parent)])
        return self._allowed[key]
