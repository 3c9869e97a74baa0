"""``ballast place``: the placement API (KIP-879's createReplicaPlacement) over a cluster file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from services.cli.output import err, fail
from services.common.settings import get_settings

if TYPE_CHECKING:
    from services.placement.model import ClusterView


def place(
    cluster: Annotated[Path, typer.Option("--cluster", help="cluster JSON: brokers (id, rack, state) and optional "
                                           "current assignments")],
    partitions: Annotated[int, typer.Option("--partitions", min=1, help="number of partitions to place")],
    replication_factor: Annotated[int, typer.Option("--replication-factor", help="replicas per partition")],
    placer: Annotated[Optional[str], typer.Option(help="striped | multi-level (default: BALLAST_PLACEMENT__PLACER)")
                      ] = None,
    seed: Annotated[Optional[int], typer.Option(help="seed of the random starts (default: BALLAST_PLACEMENT__SEED)")
                    ] = None,
    broker_ids: Annotated[Optional[str], typer.Option(help="place only on these brokers, e.g. 1,2,3")] = None,
    topic: Annotated[str, typer.Option(help="topic name; if the cluster file has it, partitions are added after "
                                       "its existing ones")] = "topic",
    force_simple_placement: Annotated[bool, typer.Option(help="ignore racks (Kafka's --disable-rack-aware)")
                                      ] = False,
    report: Annotated[bool, typer.Option(help="print the placement's quality measures to stderr")] = False,
    log_dirs: Annotated[bool, typer.Option("--log-dirs", help="choose each new replica's log directory (the least "
                                           "used, by bytes) instead of \"any\": from the brokers' logDirs in the "
                                           "cluster file, else from the live cluster (DescribeLogDirs)")] = False,
) -> None:
    """Compute where a topic's replicas would go, and print kafka-reassign-partitions.sh JSON.

    The same placement the topic reconciler makes (Kafka's createReplicaPlacement contract), from a cluster file."""
    from services.placement.cluster_file import read_cluster, reassignment_json
    from services.placement.model import PlacementError
    from services.placement.request import create_replica_placement

    settings = get_settings().placement
    chosen = "striped" if force_simple_placement else placer or settings.placer
    try:
        view = read_cluster(cluster)
        ids = [int(part) for part in broker_ids.split(",") if part.strip()] if broker_ids else None
        first = len(view.assignments.get(topic, []))
        assignment = create_replica_placement(view, topic, partitions, replication_factor, placer=chosen,
                                              seed=seed if seed is not None else settings.seed,
                                              force_simple_placement=force_simple_placement, broker_ids=ids)
    except ValueError as exc:  # PlacementError, and a --broker-ids entry that is not a number
        message = str(exc) if isinstance(exc, PlacementError) else f"--broker-ids: {exc}"
        raise fail(message, 2) from None
    chosen_dirs = _chosen_log_dirs(cluster, assignment) if log_dirs else None
    typer.echo(json.dumps(reassignment_json(topic, assignment, first, chosen_dirs)))
    if report:
        err.print(placement_report(view, topic, assignment, chosen), soft_wrap=True, markup=False)

def placement_report(view: ClusterView, topic: str, assignment: list[list[int]], placer: str) -> str:
    """The new partitions judged on their own (spread), the brokers on everything they hold after it (balance)."""
    from services.placement.metrics import evaluate

    placed = evaluate(view.with_assignment(topic, assignment), topics=[topic])
    after = evaluate(view.with_assignment(topic, [*view.assignments.get(topic, []), *assignment]))
    existing = len(view.assignments.get(topic, []))
    added = f"{placed.partitions} new partitions" + (f" (after its {existing} existing)" if existing else "")
    mine = evaluate(view.with_assignment(topic, [*view.assignments.get(topic, []), *assignment]), topics=[topic])
    return (f"placer {placer}: {added}, {placed.replicas} replicas; spread violations by level "
            f"{placed.spread_violations or 'none'}; new partitions with two replicas in one top-level domain while "
            f"another has none: {placed.top_level_doubled:.0%}. The topic's own spread (max - min per broker it "
            f"could use): replicas {mine.topic_replicas_range}, leaders {mine.topic_leaders_range}. Every broker "
            f"afterwards (all topics): replicas {after.replicas_per_broker[0]}-{after.replicas_per_broker[1]}, "
            f"leaders {after.leaders_per_broker[0]}-{after.leaders_per_broker[1]}")

def _chosen_log_dirs(cluster: Path, assignment: list[list[int]]) -> dict[tuple[int, int], str]:
    """Directories for the new replicas, by the placement package's rule (least used by bytes, counting what this
    placement already sent there); usage from the cluster file, or DescribeLogDirs of the live cluster's online
    directories."""
    from services.adapters.admin import AdminError
    from services.adapters.admin.factory import ask_cluster
    from services.placement.cluster_file import read_log_dir_usage
    from services.placement.log_dirs import LogDirUsage, choose_log_dirs

    usage = read_log_dir_usage(cluster)
    if not usage:
        brokers = sorted({b for r in assignment for b in r})
        try:
            described = ask_cluster(get_settings().cluster_admin, lambda admin: admin.describe_log_dirs(brokers))
            usage = {}
            for d in described:
                if d.online:
                    usage.setdefault(d.broker, {})[d.path] = LogDirUsage(
                        d.size_bytes / 1e6, sum(1 for r in d.replicas if not r.is_future))
        except AdminError as exc:
            raise fail(f"--log-dirs: cannot describe the cluster's log directories ({exc}); list them in the "
                        "cluster file's brokers (logDirs)") from None
    return choose_log_dirs({index: replicas for index, replicas in enumerate(assignment)}, usage)
