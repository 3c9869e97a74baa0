"""Ballast's ``striped`` against Kafka's own ``StripedReplicaPlacer`` (the pinned kafka-metadata 4.3.1), on the same
inputs: random topologies and the edge cases (uneven racks, fenced brokers, no racks, mixed rack-less brokers, RF
equal to the brokers, invalid RFs, brokers whose every log directory is cordoned: left out of the usable brokers, on
Kafka's side as its ClusterControlManager does, on Ballast's by its own rule). Kafka's class runs in a JVM through
jvm/placer-harness; Ballast draws from its
Python ``java.util.Random`` with the same seed, so assignments must be identical, replica for replica, and refusals
must carry the same message."""

from __future__ import annotations

import random
import subprocess
from dataclasses import dataclass

import pytest

from services.local.kafka_cluster import REPO_ROOT, kafka_lib_dir
from services.domain.cordons import Cordons, usable
from services.placement.java_random import JavaRandom
from services.placement.model import Broker, BrokerState, InvalidReplicationFactor
from services.placement.striped import place_striped

HARNESS = REPO_ROOT / ".kafka" / "harness" / "ballast-placer-harness.jar"


@dataclass(frozen=True)
class Case:
    seed: int
    replication_factor: int
    partitions: int
    brokers: tuple[tuple[int, str | None, bool], ...]  # id, rack, fenced
    cordoned: frozenset[int] = frozenset()  # brokers whose every log directory is cordoned

    def line(self) -> str:
        brokers = ",".join(f"{b}|{rack if rack is not None else '-'}|{str(fenced).lower()}|"
                           f"{str(b in self.cordoned).lower()}" for b, rack, fenced in self.brokers)
        return f"{self.seed}\t{self.replication_factor}\t{self.partitions}\t{brokers}"

    def ballast(self) -> str:
        cordons = Cordons({b: frozenset({"/data"}) for b in self.cordoned},
                          {b: frozenset({"/data"}) for b, _, _ in self.brokers})
        brokers = usable([Broker(b, rack, BrokerState.FENCED if fenced else BrokerState.ALIVE)
                          for b, rack, fenced in self.brokers], cordons)
        try:
            placed = place_striped(JavaRandom(self.seed), brokers, self.replication_factor, self.partitions)
        except InvalidReplicationFactor as exc:
            return f"error\tInvalidReplicationFactorException\t{exc}"
        return "ok\t" + ";".join(",".join(map(str, replicas)) for replicas in placed)


def _random_case(rng: random.Random) -> Case:
    count = rng.randint(1, 14)
    style = rng.choice(["flat", "paths", "none", "mixed", "uneven"])
    racks: list[str | None]
    if style == "flat":
        racks = [f"rack-{chr(97 + i)}" for i in range(rng.randint(1, 5))]
    elif style == "paths":
        racks = [f"/dc{d}/r{r}" for d in range(1, rng.randint(2, 4)) for r in range(1, rng.randint(2, 4))]
    elif style == "none":
        racks = [None]
    elif style == "mixed":
        racks = [None, "a", "b"]
    else:  # one big rack and small ones
        racks = ["big"] * 6 + ["small-1", "small-2"]
    ids = rng.sample(range(0, 40), count)
    if rng.random() < 0.5:
        ids.sort()
    brokers = tuple((b, rng.choice(racks), rng.random() < 0.2) for b in ids)
    replication_factor = rng.choice([rng.randint(1, 4), rng.randint(1, 4), count, count + 1, 0, -1])
    cordoned = frozenset(b for b in ids if rng.random() < 0.15)
    return Case(seed=rng.randint(-2**63, 2**63 - 1), replication_factor=replication_factor,
                partitions=rng.randint(1, 40), brokers=brokers, cordoned=cordoned)


EDGE_CASES = [
    Case(0, 3, 12, tuple((b, None, False) for b in range(1, 7))),  # no racks at all
    Case(1, 6, 10, tuple((b, f"r{b % 3}", False) for b in range(1, 7))),  # RF = brokers
    Case(2, 3, 30, tuple((b, "big" if b < 7 else f"s{b}", False) for b in range(1, 10))),  # uneven racks
    Case(3, 3, 20, tuple((b, f"r{b % 3}", b in (2, 5)) for b in range(1, 10))),  # fenced brokers
    Case(4, 3, 5, tuple((b, f"r{b % 3}", b != 4) for b in range(1, 7))),  # one unfenced broker
    Case(5, 2, 3, tuple((b, None, True) for b in range(1, 4))),  # all fenced
    Case(6, 4, 3, tuple((b, "r", False) for b in range(1, 4))),  # RF above the brokers
    Case(7, 0, 3, tuple((b, "r", False) for b in range(1, 4))),  # RF 0
    Case(8, 1, 3, ()),  # no broker
    Case(9, 3, 100, tuple((b, f"/dc{b % 3}/r{b % 2}", False) for b in range(1, 13))),  # beyond one round: reshuffles
    Case(10, 3, 30, tuple((b, f"r{b % 3}", False) for b in range(1, 10)), frozenset({3, 4})),  # cordoned brokers
    Case(11, 3, 5, tuple((b, f"r{b % 3}", False) for b in range(1, 4)), frozenset({2})),  # RF only cordoned could give
    Case(12, 1, 5, tuple((b, "r", False) for b in range(1, 3)), frozenset({1, 2})),  # every broker cordoned
]


def _kafka_answers(cases: list[Case]) -> list[str]:
    if not HARNESS.is_file():
        pytest.fail(f"{HARNESS} is missing: `make test` builds it (make placer-harness)")
    result = subprocess.run(["java", "-cp", f"{kafka_lib_dir()}/*:{HARNESS}", "io.ballast.kafka.StripedPlacerHarness"],
                            input="\n".join(c.line() for c in cases) + "\n", capture_output=True, text=True,
                            timeout=120, check=True)
    answers = result.stdout.splitlines()
    assert len(answers) == len(cases), result.stderr[-2000:]
    return answers


def test_ballasts_striped_is_kafkas_striped_replica_placer_replica_for_replica() -> None:
    rng = random.Random(20261124)
    cases = EDGE_CASES + [_random_case(rng) for _ in range(1800)]
    kafka = _kafka_answers(cases)
    ours = [case.ballast() for case in cases]
    mismatches = [(c, theirs, mine) for c, theirs, mine in zip(cases, kafka, ours) if mine != theirs]
    assert not mismatches, "\n".join(f"{c.line()}\n  kafka:   {k}\n  ballast: {b}" for c, k, b in mismatches[:5])
    placed = sum(1 for answer in kafka if answer.startswith("ok"))
    refusals = {kind for answer in kafka if answer.startswith("error")
                for kind in ("must be positive", "currently fenced", "cannot be reached") if kind in answer}
    # The comparison covered placements and each of the refusals Kafka's placer has.
    assert placed > 500 and refusals == {"must be positive", "currently fenced", "cannot be reached"}, placed
