"""Benchmark: what a replication-factor change moves, with Cruise Control's default parameters and with Ballast's.

    python -m bench.rf_movements [--topics 120] [--write BENCHMARKS.md]

Cruise Control's ``topic_configuration`` adds or drops the replicas, then runs its goal optimizer over the whole
cluster: with its default goals, leadership goals even out leaders across every topic, so a change to one topic
moves partitions of others (on the real one: raising one 3-partition topic from RF 2 to 3 moved 35 partitions and 33
leaders). Ballast sends the batch's scope instead (``replicas_change.logic.optimization_params``): every other topic
excluded, the placement goals only. Both are asked as dry runs (``verbose``: the proposal's movements listed) of the
simulator, on one cluster with some leader skew, side by side, and each proposal is counted against the lower
bound: the replicas the change itself adds or drops.
"""

from __future__ import annotations

import argparse
import asyncio
import random
from dataclasses import dataclass
from pathlib import Path

from bench.markdown import replace_section
from services.cluster_sim.app import Simulator
from services.adapters.cruise_control import CruiseControlClient
from services.common.settings import CruiseControlSettings, SimulatorSettings
from services.local.broker import free_port
from services.replicas_change.logic import optimization_params

BROKERS = ["1:/dc1/r1", "2:/dc1/r2", "3:/dc2/r1", "4:/dc2/r2", "5:/dc3/r1", "6:/dc3/r2"]
COMMAND = "python -m bench.rf_movements --write BENCHMARKS.md"


@dataclass(frozen=True)
class Case:
    name: str
    topics: list[str]
    target: int


@dataclass(frozen=True)
class Moved:
    partitions: int  # partitions whose replica list changes at all
    outside: int  # of them, partitions of topics the request does not change
    replicas: int  # replicas added or dropped
    leaders: int  # partitions whose leader changes
    lower_bound: int  # the replicas the change itself must add or drop


def build_cluster(sim: Simulator, topics: int, seed: int) -> None:
    """``topics`` topics of 6 partitions at RF 2 or 3, and __consumer_offsets, placed with leader skew: a cluster
    that has lived a while (leaders pile on the brokers that were up first after restarts)."""
    rng = random.Random(seed)
    ids = sorted(sim.cluster.brokers)
    for index in range(topics):
        rf = 2 if index % 3 else 3
        assignment = []
        for _ in range(6):
            replicas = rng.sample(ids, rf)
            if rng.random() < 0.25:  # the skew: broker 1 or 2 leads
                lead = rng.choice([1, 2])
                replicas = [lead, *[b for b in replicas if b != lead]][:rf]
            assignment.append(replicas)
        sim.cluster.create_topic(f"t{index:03d}", 6, rf, {}, assignment=assignment)
    sim.cluster.create_topic("__consumer_offsets", 50, 3, {})


def count(sim: Simulator, case: Case, proposals: list[dict]) -> Moved:
    changed = set(case.topics)
    partitions = outside = replicas = leaders = 0
    for p in proposals:
        old, new = p["oldReplicas"], p["newReplicas"]
        if old == new:
            continue
        partitions += 1
        topic = p["topicPartition"].rsplit("-", 1)[0]
        outside += topic not in changed
        replicas += len(set(new) ^ set(old))
        leaders += old[:1] != new[:1]
    bound = sum(abs(case.target - len(part.replicas)) for name in case.topics
                for part in sim.cluster.topics[name].partitions)
    return Moved(partitions, outside, replicas, leaders, bound)


async def measure(topics: int, seed: int) -> list[tuple[Case, str, Moved]]:
    sim = Simulator(SimulatorSettings(cruise_control_port=free_port(), admin_port=free_port(), brokers=BROKERS,
                                      proposal_s=0.0, task_scanner_period_s=0.01))
    await sim.start()
    try:
        build_cluster(sim, topics, seed)
        cases = [Case("one topic, 6 partitions, RF 2 -> 3", ["t001"], 3),
                 Case("a batch of 10 topics, RF 2 -> 3", [f"t{i:03d}" for i in range(1, 16) if i % 3][:10], 3),
                 Case("one topic, 6 partitions, RF 3 -> 2", ["t000"], 2)]
        rows = []
        async with CruiseControlClient(CruiseControlSettings(port=sim.settings.cruise_control_port,
                                                             rack_enabled=True)) as cc:
            for case in cases:
                for label, scope in (("Cruise Control's defaults", "cluster"), ("Ballast's (batch scope)", "batch")):
                    params = optimization_params(case.topics, scope=scope, goals=[], rack_enabled=True)
                    answer = await cc.topic_configuration({case.target: case.topics}, dryrun=True, verbose=True,
                                                          **params)
                    assert answer.result is not None and answer.result.proposals is not None
                    rows.append((case, label, count(sim, case, answer.result.proposals)))
        return rows
    finally:
        await sim.stop()


def section(rows: list[tuple[Case, str, Moved]], topics: int) -> str:
    lines = [
        "## Replication-factor changes: what moves, Cruise Control's defaults and Ballast's scope side by side",
        "",
        f"Command: `{COMMAND}`. The simulator (in memory, 6 brokers in 3 DCs, {topics} topics of 6 partitions at RF "
        "2 or 3 and `__consumer_offsets`, leaders skewed towards brokers 1 and 2); each change asked as a dry run "
        "with `verbose`, once with no optimization parameter (what Strimzi sends) and once with Ballast's "
        "(`excluded_topics` = every topic but the batch's, `goals=RackAwareGoal`, `skip_hard_goal_check`). Lower "
        "bound: the replicas the change itself adds or drops.",
        "",
        "| change | parameters | partitions moved | of other topics | replicas added / dropped | leaders moved "
        "| lower bound |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for case, label, moved in rows:
        lines.append(f"| {case.name} | {label} | {moved.partitions} | {moved.outside} | {moved.replicas} | "
                     f"{moved.leaders} | {moved.lower_bound} |")
    lines += ["", "On the real Cruise Control (its main branch of August 2026, Ballast's local Kafka cluster, 4 "
                  "brokers): raising one topic of 3 partitions from RF 2 to 3 with its defaults executed 35 partition "
                  "movements and 33 leader movements; see the closing note of issue 28 for Ballast's parameters "
                  "there.", ""]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--topics", type=int, default=120)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--write", type=Path, help="replace this benchmark's section in that file (BENCHMARKS.md)")
    args = parser.parse_args()
    rows = asyncio.run(measure(args.topics, args.seed))
    text = section(rows, args.topics)
    print(text)
    if args.write:
        replace_section(args.write, text)


if __name__ == "__main__":
    main()
