"""``ballast log-dirs``: the reassignment file as kafka-reassign-partitions.sh checks it, and the commands on the
simulator (the same port as on a real cluster, tested in tests/kafka/test_log_dirs_cli.py)."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from services.cli.commands.log_dirs import parse_reassignment
from services.cluster_sim.app import Simulator
from services.adapters.admin.simulator import SimulatorClusterAdmin
from tests.unit.simulated import simulated_cluster


@pytest.mark.parametrize(("text", "error"), [
    ("not json", "not JSON"),
    ('{"partitions": 3}', '"partitions": [...]'),
    ('{"partitions": [{"topic": "t", "partition": 0, "replicas": []}]}', "non-empty list"),
    ('{"partitions": [{"topic": "t", "partition": 0, "replicas": [1, 1]}]}', "a broker twice"),
    ('{"partitions": [{"topic": "t", "partition": 0, "replicas": [1, 2], "log_dirs": ["any"]}]}', "one entry per"),
    ('{"partitions": [{"topic": "t", "partition": 0, "replicas": [1], "log_dirs": ["data"]}]}', "absolute path"),
    ('{"partitions": [{"topic": "t", "partition": -1, "replicas": [1]}]}', "non-negative"),
    ('{"partitions": [{"topic": "t", "partition": 0, "replicas": [1]}, {"topic": "t", "partition": 0, '
     '"replicas": [2]}]}', "listed twice"),
])
def test_reassignment_files_are_checked(text: str, error: str) -> None:
    with pytest.raises(ValueError, match=error.replace("[", r"\[").replace("]", r"\]")):
        parse_reassignment(text, "f.json")


def test_log_dirs_default_to_any() -> None:
    (wanted,) = parse_reassignment('{"version": 1, "partitions": [{"topic": "t", "partition": 2, "replicas": [3, 1]}]}')
    assert wanted.log_dirs == ("any", "any") and wanted.replicas == (3, 1)


@pytest.fixture
async def sim() -> AsyncIterator[Simulator]:
    async with simulated_cluster() as cluster:
        yield cluster.simulator


async def _cli(sim: Simulator, *args: str) -> tuple[int, str, str]:
    env = {**os.environ, "BALLAST_CLUSTER_ADMIN__KIND": "simulator",
           "BALLAST_CLUSTER_ADMIN__SIMULATOR_URL": f"http://127.0.0.1:{sim.settings.admin_port}"}
    process = await asyncio.create_subprocess_exec(sys.executable, "-m", "services.cli", *args, env=env,
                                                   stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await process.communicate()
    return process.returncode or 0, out.decode(), err.decode()


async def test_describe_and_move_on_the_simulator(sim: Simulator, tmp_path: Path) -> None:
    admin = SimulatorClusterAdmin(f"http://127.0.0.1:{sim.settings.admin_port}")
    await admin.create_topic("jbod", 1, 2, assignment=[[1, 2]])
    code, out, _ = await _cli(sim, "log-dirs", "describe", "--json", "--topic", "jbod", "--broker", "1")
    document = json.loads(out)
    assert code == 0 and [b["broker"] for b in document["brokers"]] == [1]
    (before,) = [d["logDir"] for d in document["brokers"][0]["logDirs"] if d["partitions"]]
    other = next(d["logDir"] for d in document["brokers"][0]["logDirs"] if d["logDir"] != before)

    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": "jbod", "partition": 0, "replicas": [1, 2], "log_dirs": [other, "any"]}]}))
    code, out, err = await _cli(sim, "log-dirs", "move", "-f", str(plan), "--throttle", "5000000")
    assert code == 0 and "every replica is in the directory asked for" in out, err
    assert "throttle not set" in err  # the simulator has no dynamic broker configs: said, not failed
    described = (await admin.describe_topics(["jbod"]))["jbod"]
    assert dict(described.partitions[0].log_dirs)[1] == other
    code, out, _ = await _cli(sim, "log-dirs", "move", "--verify", "-f", str(plan))
    assert code == 0 and out.count("done") == 2
    await admin.aclose()


def test_place_with_log_dirs_sends_new_replicas_to_the_least_used_directories(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from services.cli.main import app

    heavy = {"/a": {"diskMb": 300, "replicas": 3}, "/b": {"diskMb": 100, "replicas": 1}}
    path = tmp_path / "cluster.json"
    path.write_text(json.dumps({"brokers": [{"id": 1, "rack": "/dc1/r1", "logDirs": heavy},
                                            {"id": 2, "rack": "/dc2/r1", "logDirs": heavy}]}))
    result = CliRunner().invoke(app, ["place", "--cluster", str(path), "--partitions", "6", "--replication-factor",
                                      "2", "--log-dirs"])
    assert result.exit_code == 0, result.output
    chosen = [d for p in json.loads(result.stdout)["partitions"] for d in p["log_dirs"]]
    # The emptier directory first, and not every one there: each new replica counts as an average replica.
    assert chosen.count("/b") > chosen.count("/a") > 0 and "any" not in chosen
    plain = CliRunner().invoke(app, ["place", "--cluster", str(path), "--partitions", "1", "--replication-factor", "2"])
    assert json.loads(plain.stdout)["partitions"][0]["log_dirs"] == ["any", "any"]


def test_release_by_broker_and_directory_releases_the_rebalance_that_drained_it(monkeypatch: pytest.MonkeyPatch
                                                                                ) -> None:
    """`ballast log-dirs release --broker B --log-dir D` finds the remove-disks rebalance that keeps D empty (the
    command failed on an import before it read its arguments)."""
    from datetime import UTC, datetime

    from typer.testing import CliRunner

    from events import RebalanceRequest, RebalanceStatus
    from services.cli.commands import rebalance
    from services.cli.main import app
    from services.rebalancer.disks import resolve_disk_removal

    drain = RebalanceRequest.model_validate({"name": "drain", "mode": "remove-disks",
                                             "moveReplicasOffVolumes": [{"brokerId": 2, "logDirs": ["/k/data-0"]}]})
    ready = RebalanceStatus(name="drain", state="Ready", request=drain, updated_at=datetime.now(UTC),
                            removed_log_dirs=resolve_disk_removal(drain, {2: ["/k/data-0", "/k/data-1"]}))
    sent: list[tuple[str, str]] = []
    monkeypatch.setattr(rebalance, "latest_rebalances", lambda: {"drain": ready})
    monkeypatch.setattr(rebalance, "_act", lambda name, action: sent.append((name, action)))

    released = CliRunner().invoke(app, ["log-dirs", "release", "--broker", "2", "--log-dir", "/k/data-0"])
    assert released.exit_code == 0, released.output
    assert sent == [("drain", "release")]
    other = CliRunner().invoke(app, ["log-dirs", "release", "--broker", "2", "--log-dir", "/k/data-1"])
    assert other.exit_code != 0 and "no remove-disks rebalance keeps /k/data-1 of broker 2 empty" in other.output
    assert sent == [("drain", "release")]


async def test_brokers_cordon_and_uncordon_show_the_change_then_set_it(sim: Simulator) -> None:
    """`ballast brokers cordon|uncordon` on the simulator (which models cordoned.log.dirs as Kafka 4.3 does)."""
    first, second = sim.cluster.brokers[2].log_dirs
    code, out, err = await _cli(sim, "brokers", "cordon", "2", "--dir", second, "--yes")
    assert code == 0 and f"broker 2: cordoned.log.dirs: none -> {second}" in out and "cordoned" in out, err
    assert sim.cluster.brokers[2].cordoned_log_dirs == (second,)
    code, out, _ = await _cli(sim, "brokers", "cordon", "2", "--dir", second, "--yes")
    assert code == 0 and "unchanged" in out
    code, out, _ = await _cli(sim, "brokers", "cordon", "2", "--yes")
    assert code == 0 and f"{second} -> *" in out and 2 not in sim.cluster.usable_ids
    code, out, _ = await _cli(sim, "brokers", "uncordon", "2", "--yes")
    assert code == 0 and "* -> none" in out and sim.cluster.brokers[2].cordoned_log_dirs == ()
    code, _, err = await _cli(sim, "brokers", "cordon", "2", "--dir", "/nowhere", "--yes")
    assert code == 2 and "not a log directory of the broker: /nowhere" in err
    code, _, err = await _cli(sim, "brokers", "cordon", "2")  # no terminal to ask: refused, nothing set
    assert code == 1 and "pass --yes" in err and sim.cluster.brokers[2].cordoned_log_dirs == ()
