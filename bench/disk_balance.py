"""Benchmark: the disk-balance planner against round robin and Kafka's own choice, on one JBOD broker.

    python -m bench.disk_balance [--seeds 20] [--write BENCHMARKS.md]

Each workload starts from a broker whose existing replicas Kafka placed (fewest partitions first), with skewed
sizes and growth rates (log-normal), a fifth of them deleted since (and, in one workload, a disk added since). New partitions then arrive every day for ``days_placing`` days and start empty,
each with a growth rate the placer cannot know in advance; every directory's growth rate is what the Spark log-dir
aggregates measure (the sum over its replicas). After the arrivals, everything grows for ``days_growing`` more days.
Reported: the spread of directory utilization (max - min, % of capacity) when the arrivals end and after the
growth, the fullest directory, and then, from each strategy's final state, the bytes the planner moves to bring every
directory within 5 % of its share, against the lower bound (the surplus above the band).

Strategies, on the same arrivals:
- round robin: directories in turn;
- Kafka's default (``LogManager.nextLogDirs``): fewest partitions, ties by directory order (it differs from round
  robin once topics are deleted or a disk is added);
- Ballast (``disk_balance.choose_dir``): utilization by bytes against capacity, projected 30 days at the measured
  growth rate; and the same with growth ignored, to show what the growth rate adds.
"""

from __future__ import annotations

import argparse
import platform
import random
import statistics
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from bench.markdown import replace_section
from services.placement.disk_balance import (
    Directory, Replica, after, bytes_lower_bound, choose_dir, plan_moves, spread)

GB = 1024.0  # MB


@dataclass(frozen=True)
class Workload:
    name: str
    capacities_gb: tuple[float, ...]
    existing: int
    size_median_gb: float
    growth_median_mb_day: float
    days_placing: int = 30
    per_day: int = 10
    days_growing: int = 60
    new_disk: bool = False  # the last directory was added after the existing partitions were placed
    deleted: float = 0.2  # share of the existing partitions deleted since (topics come and go)


WORKLOADS = [
    Workload("3 x 4 TB, 150 existing partitions, 10 new a day for 30 days", (4096, 4096, 4096), 150, 8.0, 40.0),
    Workload("2 x 2 TB + a new empty 4 TB disk, 150 existing, 10 new a day for 30 days", (2048, 2048, 4096), 150,
             6.0, 30.0, new_disk=True),
    Workload("4 x 2 TB, 400 small existing, 20 new a day for 30 days", (2048, 2048, 2048, 2048), 400, 1.5, 20.0,
             per_day=20),
]


@dataclass
class _Part:
    size_mb: float
    growth_mb_day: float
    log_dir: int


@dataclass
class Broker:
    capacities_mb: list[float]
    parts: list[_Part] = field(default_factory=list)

    def used(self) -> list[float]:
        used = [0.0] * len(self.capacities_mb)
        for p in self.parts:
            used[p.log_dir] += p.size_mb
        return used

    def growth(self) -> list[float]:
        growth = [0.0] * len(self.capacities_mb)
        for p in self.parts:
            growth[p.log_dir] += p.growth_mb_day
        return growth

    def counts(self) -> list[int]:
        counts = [0] * len(self.capacities_mb)
        for p in self.parts:
            counts[p.log_dir] += 1
        return counts

    def directories(self) -> list[Directory]:
        return [Directory(f"/data-{i}", cap, used, growth)
                for i, (cap, used, growth) in enumerate(zip(self.capacities_mb, self.used(), self.growth()))]

    def grow(self, days: float) -> None:
        for p in self.parts:
            p.size_mb += p.growth_mb_day * days

    def spread_pct(self) -> float:
        return spread(self.directories())

    def fullest_pct(self) -> float:
        return max(100.0 * u / c for u, c in zip(self.used(), self.capacities_mb))


Strategy = Callable[[Broker, int], int]


def round_robin(broker: Broker, n: int) -> int:
    return n % len(broker.capacities_mb)


def kafka_default(broker: Broker, n: int) -> int:
    counts = broker.counts()
    return min(range(len(counts)), key=lambda i: (counts[i], i))


def ballast(broker: Broker, n: int) -> int:
    return int(choose_dir(broker.directories()).rsplit("-", 1)[1])


def bytes_only(broker: Broker, n: int) -> int:
    return int(choose_dir(broker.directories(), horizon_days=0.0).rsplit("-", 1)[1])


STRATEGIES: dict[str, Strategy] = {"round robin": round_robin, "Kafka default": kafka_default,
                                   "Ballast, bytes only (growth ignored)": bytes_only, "Ballast": ballast}


def _draw(rng: random.Random, median: float, sigma: float) -> float:
    return rng.lognormvariate(0.0, sigma) * median


def run(workload: Workload, strategy: Strategy, seed: int) -> Broker:
    rng = random.Random(seed)
    capacities = [c * GB for c in workload.capacities_gb]
    history = Broker(capacities[:-1] if workload.new_disk else capacities)
    for n in range(workload.existing):  # the history: placed by Kafka, then some topics deleted
        history.parts.append(_Part(0.0, 0.0, kafka_default(history, n)))
        history.parts[-1].size_mb = _draw(rng, workload.size_median_gb * GB, 1.2)
        history.parts[-1].growth_mb_day = _draw(rng, workload.growth_median_mb_day / 4, 1.5)
    kept = [p for p in history.parts if rng.random() >= workload.deleted]
    broker = Broker(capacities, kept)
    arrivals = [_draw(rng, workload.growth_median_mb_day, 1.5)
                for _ in range(workload.days_placing * workload.per_day)]
    n = 0
    for _day in range(workload.days_placing):
        for _ in range(workload.per_day):
            broker.parts.append(_Part(0.0, arrivals[n], strategy(broker, n)))
            n += 1
        broker.grow(1.0)
    return broker


@dataclass
class Figures:
    spread_placed: list[float] = field(default_factory=list)
    spread_grown: list[float] = field(default_factory=list)
    fullest: list[float] = field(default_factory=list)
    planner_gb: list[float] = field(default_factory=list)
    bound_gb: list[float] = field(default_factory=list)
    moves: list[float] = field(default_factory=list)
    spread_after_plan: list[float] = field(default_factory=list)


def measure(workload: Workload, seeds: int) -> dict[str, Figures]:
    results = {name: Figures() for name in STRATEGIES}
    for seed in range(seeds):
        for name, strategy in STRATEGIES.items():
            figures = results[name]
            broker = run(workload, strategy, seed)
            figures.spread_placed.append(broker.spread_pct())
            broker.grow(workload.days_growing)
            figures.spread_grown.append(broker.spread_pct())
            figures.fullest.append(broker.fullest_pct())
            dirs = broker.directories()
            replicas = [Replica("t", i, p.size_mb, f"/data-{p.log_dir}") for i, p in enumerate(broker.parts)]
            moves = plan_moves(dirs, replicas, tolerance=0.05)
            figures.planner_gb.append(sum(m.size_mb for m in moves) / GB)
            figures.bound_gb.append(bytes_lower_bound(dirs, 0.05) / GB)
            figures.moves.append(float(len(moves)))
            figures.spread_after_plan.append(spread(after(dirs, moves)))
    return results


def _mean_worst(values: list[float]) -> str:
    return f"{statistics.mean(values):.1f} / {max(values):.1f}"


def report(seeds: int) -> str:
    lines = [
        "## Disk balance on a JBOD broker: where new replicas go, and what evening out moves",
        "",
        f"`python -m bench.disk_balance --seeds {seeds}` ({platform.python_implementation()} "
        f"{platform.python_version()}, {seeds} random workloads per row, the same arrivals for each strategy; "
        "mean / worst). Spread = max - min directory utilization, % of capacity. Bytes to even out: what "
        "`disk_balance.plan_moves` moves to bring every directory within 5 % of its share, against the lower bound "
        "(the surplus above that band).",
        "",
    ]
    for workload in WORKLOADS:
        results = measure(workload, seeds)
        lines += [f"**{workload.name}**, then {workload.days_growing} days of growth:", "",
                  "| strategy | spread after placing | spread after growth | fullest dir % | to even out, planner GB "
                  "| lower bound GB | moves | spread after the plan |",
                  "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
        for name, f in results.items():
            lines.append(f"| {name} | {_mean_worst(f.spread_placed)} | {_mean_worst(f.spread_grown)} | "
                         f"{_mean_worst(f.fullest)} | {_mean_worst(f.planner_gb)} | {_mean_worst(f.bound_gb)} | "
                         f"{_mean_worst(f.moves)} | {_mean_worst(f.spread_after_plan)} |")
        lines.append("")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, default=20, help="random workloads per row (default 20)")
    parser.add_argument("--write", type=Path, help="replace this benchmark's section in that Markdown file")
    args = parser.parse_args()
    section = report(args.seeds)
    print(section)
    if args.write:
        replace_section(args.write, section)


if __name__ == "__main__":
    main()
