"""The JBOD step of both demos (seed 004), through the cluster-admin port, so the same step runs on the simulator and
on the real cluster: one broker's replicas crowded into one directory, a disk rebalance (rebalanceDisk) evening them
out, then a directory of another broker drained (remove-disks) and kept empty while a new topic is created."""

from __future__ import annotations

import asyncio

from rich.console import Console
from rich.table import Table

from events import conditions
from events import TOPICS, RebalanceRequest, RebalanceState, TopicSpec
from services.cli.demo.patience import Patience
from services.cli.demo.scaling import RebalanceFollower, holds
from services.cli.output import section
from services.common import busio
from services.adapters.admin import ClusterAdmin, LogDirInfo, make_cluster_admin
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


async def _settled(admin: ClusterAdmin, broker: int, path: str, replicas: int, patience: Patience) -> bool:
    while patience.waiting:
        dirs = await admin.describe_log_dirs([broker])
        there = sum(1 for d in dirs if d.path == path for r in d.replicas if not r.is_future)
        patience.observe(f"replicas in {path}", there)
        if there >= replicas and not any(r.is_future for d in dirs for r in d.replicas):
            return True
        await asyncio.sleep(0.5)
    return False


def disks_step(console: Console, stack: LocalStack, bus: BusSettings, patience: Patience, *, number: int,
               skewed: int, drained: int) -> bool:
    return asyncio.run(_disks(console, stack, bus, patience, number, skewed, drained))


async def _disks(console: Console, stack: LocalStack, bus: BusSettings, patience: Patience, number: int, skewed: int,
                 drained: int) -> bool:
    admin = make_cluster_admin(stack.settings().cluster_admin)
    rebalances = RebalanceFollower(console, bus, only={"demo-disk-balance", "demo-drain"})
    try:
        section(console, f"{number}. disks (JBOD): broker {skewed}'s replicas crowded into one directory, evened out "
                         f"by a disk rebalance; a directory of broker {drained} drained and kept empty")
        dirs = sorted(d.path for d in await admin.describe_log_dirs([skewed]))
        before = sum(len(d.replicas) for d in await admin.describe_log_dirs([skewed]) if d.path == dirs[0])
        moved = await _crowd(admin, skewed, dirs[0])
        if not await _settled(admin, skewed, dirs[0], before + moved, patience):
            return patience.give_up(console, f"broker {skewed}'s replicas to move into {dirs[0]}")
        console.print(_dirs_table(await admin.describe_log_dirs([skewed]), f"broker {skewed}: {moved} replicas moved "
                                  f"into {dirs[0]} (ballast log-dirs move)"))

        even = RebalanceRequest(name="demo-disk-balance", rebalance_disk=True, auto_approve=True,
                                intra_broker_throttle=50_000_000)
        console.print("[bold]ballast apply -f[/bold] kind: Rebalance, rebalanceDisk: true, autoApprove: true, "
                      "intraBrokerThrottle: 50 MB/s")
        busio.publish(bus, TOPICS.rebalance_requests, [even])
        done = rebalances.until(even.name, lambda s: s.state in (RebalanceState.READY, RebalanceState.NOT_READY),
                            patience)
        if done is None:
            return patience.give_up(console, "the disk rebalance")
        if done.state != RebalanceState.READY:
            return patience.failed(console, "the disk rebalance", done.message)
        console.print(_dirs_table(await admin.describe_log_dirs([skewed]), f"broker {skewed} after the disk rebalance "
                                  f"({done.summary.num_intra_broker_replica_movements if done.summary else 0} moves "
                                  "between its directories, none between brokers)"))

        drain_dirs = sorted(d.path for d in await admin.describe_log_dirs([drained]))
        drain = RebalanceRequest.model_validate({
            "name": "demo-drain", "mode": "remove-disks", "autoApprove": True, "intraBrokerThrottle": 50_000_000,
            "moveReplicasOffVolumes": [{"brokerId": drained, "volumeIds": [1]}]})
        console.print(f"[bold]ballast apply -f[/bold] KafkaRebalance mode: remove-disks, moveReplicasOffVolumes: "
                      f"[{{brokerId: {drained}, volumeIds: [1]}}]")
        busio.publish(bus, TOPICS.rebalance_requests, [drain])
        drained_status = rebalances.until(
            drain.name, lambda s: holds(s, conditions.DISKS_EMPTY) or s.state == RebalanceState.NOT_READY, patience)
        if drained_status is None:
            return patience.give_up(console, f"broker {drained}'s directory {drain_dirs[1]} to be drained")
        if drained_status.state == RebalanceState.NOT_READY:
            return patience.failed(console, "the drain", drained_status.message)
        spec = TopicSpec(name="after-drain", partitions=12, replicas=3)
        busio.publish(bus, TOPICS.specs, [spec])
        while patience.waiting:
            described = (await admin.describe_topics([spec.name]))[spec.name]
            patience.observe("after-drain described", described is not None)
            if described is not None and all(dict(p.log_dirs).get(b) for p in described.partitions
                                             for b in p.replicas):
                break
            await asyncio.sleep(0.5)
        else:
            return patience.give_up(console, f"{spec.name} to be created")
        # Whatever Kafka put there on its own (the emptiest directory by count) is moved off at the next look.
        while patience.waiting:
            after = await admin.describe_log_dirs([drained])
            patience.observe("left in the drained directory",
                             sum(len(d.replicas) for d in after if d.path == drain_dirs[1]))
            if not any(d.path == drain_dirs[1] and d.replicas for d in after):
                break
            await asyncio.sleep(0.5)
        else:
            return patience.give_up(console, f"{drain_dirs[1]} of broker {drained} to be emptied again")
        console.print(_dirs_table(after, f"broker {drained}: {drain_dirs[1]} drained, and still empty after "
                                         f"{spec.name} ({spec.partitions} partitions, RF 3) was created"))
        console.print(f"Ballast keeps it empty until [bold]ballast log-dirs release {drain.name}[/bold].")
        return True
    finally:
        await admin.aclose()
