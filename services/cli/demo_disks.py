"""The JBOD step of both demos (seed 004), through the cluster-admin port, so the same step runs on the simulator and
on the real cluster: one broker's replicas crowded into one directory, a disk rebalance (rebalanceDisk) evening them
out, then a directory of another broker drained (remove-disks) and kept empty while a new topic is created."""

from __future__ import annotations

import asyncio
import time

from rich.console import Console
from rich.table import Table

from events import TOPICS, RebalanceRequest, RebalanceState, TopicSpec, encode
from services.cli.demo_scaling import RebalanceFollower
from services.common import busio
from services.common.admin import ClusterAdmin, LogDirInfo, make_cluster_admin
from services.common.settings import BusSettings
from services.local.stack import LocalStack


def _dirs_table(dirs: list[LogDirInfo], title: str) -> Table:
    table = Table(title=title, title_justify="left")
    for column in ("broker", "log dir", "state", "replicas", "MB"):
        table.add_column(column, justify="right" if column in ("broker", "replicas", "MB") else "left",
                         overflow="fold")
    for d in sorted(dirs, key=lambda d: (d.broker, d.path)):
        replicas = [r for r in d.replicas if not r.is_future]
        table.add_row(str(d.broker), d.path, "online" if d.online else f"offline ({d.error})", str(len(replicas)),
                      f"{sum(r.size_bytes for r in replicas) / 1e6:,.1f}")
    return table


async def _crowd(admin: ClusterAdmin, broker: int, log_dir: str) -> int:
    """Every replica of ``broker`` into ``log_dir`` (the skew a disk that was replaced, or Kafka's count-based
    choice over skewed sizes, leaves behind). Returns how many were moved."""
    moved = 0
    for name, topic in (await admin.list_topics()).items():
        mine = {(p.id, broker): log_dir for p in topic.partitions
                if broker in p.replicas and dict(p.log_dirs).get(broker) != log_dir}
        if mine:
            await admin.alter_replica_log_dirs(name, mine)
            moved += len(mine)
    return moved


async def _settled(admin: ClusterAdmin, broker: int, path: str, replicas: int, deadline: float) -> bool:
    while time.monotonic() < deadline:
        dirs = await admin.describe_log_dirs([broker])
        there = sum(1 for d in dirs if d.path == path for r in d.replicas if not r.is_future)
        if there >= replicas and not any(r.is_future for d in dirs for r in d.replicas):
            return True
        await asyncio.sleep(0.5)
    return False


def disks_step(console: Console, stack: LocalStack, bus: BusSettings, deadline: float, *, number: int,
               skewed: int, drained: int) -> bool:
    return asyncio.run(_disks(console, stack, bus, deadline, number, skewed, drained))


async def _disks(console: Console, stack: LocalStack, bus: BusSettings, deadline: float, number: int, skewed: int,
                 drained: int) -> bool:
    admin = make_cluster_admin(stack.settings().cluster_admin)
    follow = RebalanceFollower(console, bus, only={"demo-disk-balance", "demo-drain"})
    try:
        console.rule(f"{number}. disks (JBOD): broker {skewed}'s replicas crowded into one directory, evened out by a "
                     f"disk rebalance; a directory of broker {drained} drained and kept empty")
        dirs = sorted(d.path for d in await admin.describe_log_dirs([skewed]))
        before = sum(len(d.replicas) for d in await admin.describe_log_dirs([skewed]) if d.path == dirs[0])
        moved = await _crowd(admin, skewed, dirs[0])
        if not await _settled(admin, skewed, dirs[0], before + moved, deadline):
            console.print(f"[red]timed out crowding broker {skewed}'s replicas; logs in {stack.logs}[/red]")
            return False
        console.print(_dirs_table(await admin.describe_log_dirs([skewed]), f"broker {skewed}: {moved} replicas moved "
                                  f"into {dirs[0]} (ballast log-dirs move)"))

        even = RebalanceRequest(name="demo-disk-balance", rebalance_disk=True, auto_approve=True,
                                intra_broker_throttle=50_000_000)
        console.print("[bold]ballast apply -f[/bold] kind: Rebalance, rebalanceDisk: true, autoApprove: true, "
                      "intraBrokerThrottle: 50 MB/s")
        busio.produce(bus, [(TOPICS.rebalance_requests.name, even.key.encode(), encode(even), None)])
        done = follow.until(even.name, lambda s: s.state in (RebalanceState.READY, RebalanceState.NOT_READY),
                            deadline)
        if done is None or done.state != RebalanceState.READY:
            console.print(f"[red]the disk rebalance did not finish ({done and done.message}); logs in {stack.logs}[/red]")
            return False
        console.print(_dirs_table(await admin.describe_log_dirs([skewed]), f"broker {skewed} after the disk rebalance "
                                  f"({done.summary.num_intra_broker_replica_movements if done.summary else 0} moves "
                                  "between its directories, none between brokers)"))

        drain_dirs = sorted(d.path for d in await admin.describe_log_dirs([drained]))
        drain = RebalanceRequest.model_validate({
            "name": "demo-drain", "mode": "remove-disks", "autoApprove": True, "intraBrokerThrottle": 50_000_000,
            "moveReplicasOffVolumes": [{"brokerId": drained, "volumeIds": [1]}]})
        console.print(f"[bold]ballast apply -f[/bold] KafkaRebalance mode: remove-disks, moveReplicasOffVolumes: "
                      f"[{{brokerId: {drained}, volumeIds: [1]}}]")
        busio.produce(bus, [(TOPICS.rebalance_requests.name, drain.key.encode(), encode(drain), None)])
        if follow.until(drain.name, lambda s: (c := s.condition("DisksEmpty")) is not None and c.status == "True",
                        deadline) is None:
            console.print(f"[red]timed out draining; logs in {stack.logs}[/red]")
            return False
        spec = TopicSpec(name="after-drain", partitions=12, replicas=3)
        busio.produce(bus, [(TOPICS.specs.name, spec.key.encode(), encode(spec), None)])
        while time.monotonic() < deadline:
            described = (await admin.describe_topics([spec.name]))[spec.name]
            if described is not None and all(dict(p.log_dirs).get(b) for p in described.partitions
                                             for b in p.replicas):
                break
            await asyncio.sleep(0.5)
        else:
            console.print(f"[red]timed out creating {spec.name}; logs in {stack.logs}[/red]")
            return False
        # Whatever Kafka put there on its own (the emptiest directory by count) is moved off at the next look.
        while time.monotonic() < deadline:
            after = await admin.describe_log_dirs([drained])
            if not any(d.path == drain_dirs[1] and d.replicas for d in after):
                break
            await asyncio.sleep(0.5)
        else:
            console.print(f"[red]{drain_dirs[1]} of broker {drained} did not stay empty; logs in {stack.logs}[/red]")
            return False
        console.print(_dirs_table(after, f"broker {drained}: {drain_dirs[1]} drained, and still empty after "
                                         f"{spec.name} ({spec.partitions} partitions, RF 3) was created"))
        console.print(f"Ballast keeps it empty until [bold]ballast log-dirs release {drain.name}[/bold].")
        return True
    finally:
        await admin.aclose()
