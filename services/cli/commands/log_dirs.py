"""``ballast log-dirs``: describe the brokers' log directories and move replicas between them (KIP-113), on a real
cluster or the simulator, through the cluster-admin port.

``describe --json`` prints the document ``kafka-log-dirs.sh --describe`` prints; ``move`` takes the reassignment
JSON ``kafka-reassign-partitions.sh`` takes (``log_dirs`` per replica: a path, or ``"any"``)."""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Optional

import typer
from rich.markup import escape
from rich.table import Table

from services.cli.output import Output, OutputOption, chosen, console, emit, err, fail
from services.adapters.admin import INTRA_BROKER_THROTTLE, AdminError
from services.adapters.admin.factory import ask_cluster, make_cluster_admin
from services.adapters.admin.port import ClusterAdmin, LogDirInfo, UnknownTopic, Unsupported
from services.common.settings import get_settings

log_dirs_app = typer.Typer(help="Log directories (JBOD): describe them, move replicas between them.",
                           no_args_is_help=True)

# The broker's intra-broker throttle (bytes/s for moves between its log directories, KIP-113's
# intra.broker.throttled.rate as Kafka named it).


def _admin(timeout_s: float | None = None) -> ClusterAdmin:
    settings = get_settings().cluster_admin
    if timeout_s is not None:
        settings = settings.model_copy(update={"timeout_s": timeout_s})
    return make_cluster_admin(settings)


# -- describe ------------------------------------------------------------------------------------------------------

def kafka_log_dirs_document(dirs: list[LogDirInfo], topics: set[str] | None = None) -> dict[str, Any]:
    """What ``kafka-log-dirs.sh --describe`` prints: per broker, each directory with its error (null when online) and
    its partitions (size, offset lag, whether it is the future replica of a move)."""
    brokers: dict[int, list[dict[str, Any]]] = {}
    for d in dirs:
        brokers.setdefault(d.broker, []).append({
            "partitions": [{"partition": f"{r.topic}-{r.partition}", "size": r.size_bytes, "offsetLag": r.offset_lag,
                            "isFuture": r.is_future}
                           for r in sorted(d.replicas, key=lambda r: (f"{r.topic}-{r.partition}", r.is_future))
                           if topics is None or r.topic in topics],
            "error": d.error,
            "logDir": d.path,
        })
    return {"brokers": [{"broker": b, "logDirs": entries} for b, entries in sorted(brokers.items())], "version": 1}


def _size(value: int | None) -> str:
    return "?" if value is None else f"{value / 1e6:,.1f} MB"


def log_dirs_table(dirs: list[LogDirInfo], topics: set[str] | None = None) -> Table:
    table = Table(title="Log directories", title_justify="left")
    for column in ("broker", "log dir", "state", "used", "usable / total", "replicas", "moving in"):
        table.add_column(column, justify="right" if column in ("used", "replicas", "moving in") else "left")
    for d in dirs:
        replicas = [r for r in d.replicas if topics is None or r.topic in topics]
        state = "online" if d.online else f"[red]offline ({escape(d.error or '')})[/red]"
        if d.cordoned:  # KIP-1066: takes no new replica
            state += ", [yellow]cordoned[/yellow]"
        table.add_row(str(d.broker), escape(d.path), state, _size(sum(r.size_bytes for r in replicas if not r.is_future)),
                      f"{_size(d.usable_bytes)} / {_size(d.total_bytes)}",
                      str(sum(1 for r in replicas if not r.is_future)), str(sum(1 for r in replicas if r.is_future)))
    return table


def replicas_table(dirs: list[LogDirInfo], topics: set[str]) -> Table:
    table = Table(title="Replicas", title_justify="left")
    for column in ("partition", "broker", "log dir", "size", "offset lag", "future (moving here)"):
        table.add_column(column)
    rows = sorted((r.topic, r.partition, d.broker, d.path, r) for d in dirs for r in d.replicas if r.topic in topics)
    for topic, partition, broker, path, r in rows:
        table.add_row(escape(f"{topic}-{partition}"), str(broker), escape(path), _size(r.size_bytes),
                      str(r.offset_lag), "yes" if r.is_future else "")
    return table


@log_dirs_app.command()
def describe(
    broker: Annotated[Optional[list[int]], typer.Option("--broker", "-b", help="only this broker (repeatable)")] = None,  # noqa: UP007
    topic: Annotated[Optional[list[str]], typer.Option("--topic", "-t", help="only this topic's replicas (repeatable)")] = None,  # noqa: UP007
    output: OutputOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="the same as --output json: kafka-log-dirs.sh --describe's "
                                          "JSON document")] = False,
) -> None:
    """Each broker's log directories: online or offline, usable and total bytes, the replicas in each with size,
    offset lag and whether it is the future replica of a move in progress. Stopped brokers cannot answer."""
    topics = set(topic) if topic else None

    try:
        dirs = ask_cluster(get_settings().cluster_admin, lambda admin: admin.describe_log_dirs(broker or None))
    except AdminError as exc:
        raise fail(f"cannot describe log directories: {exc}") from None
    fmt = chosen(output, as_json)
    if fmt is not Output.table:
        emit([kafka_log_dirs_document(dirs, topics)], fmt, lambda: "")
        return
    console.print(log_dirs_table(dirs, topics))
    if topics:
        console.print(replicas_table(dirs, topics))


# -- move ----------------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Wanted:
    topic: str
    partition: int
    replicas: tuple[int, ...]
    log_dirs: tuple[str, ...]  # one per replica: a path or "any"


def parse_reassignment(text: str, source: str = "reassignment") -> list[Wanted]:
    """``{"version": 1, "partitions": [{"topic", "partition", "replicas", "log_dirs"}]}``, checked as
    kafka-reassign-partitions.sh checks it; ValueError with what is wrong and where."""
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{source}: not JSON: {exc}") from None
    if not isinstance(document, dict) or not isinstance(document.get("partitions"), list):
        raise ValueError(f'{source}: expected {{"version": 1, "partitions": [...]}}')
    wanted: list[Wanted] = []
    for index, entry in enumerate(document["partitions"]):
        where = f"{source}: partitions[{index}]"
        if not isinstance(entry, dict):
            raise ValueError(f"{where}: expected an object")
        topic, partition, replicas = entry.get("topic"), entry.get("partition"), entry.get("replicas")
        if not isinstance(topic, str) or not topic:
            raise ValueError(f"{where}: topic must be a non-empty string")
        if not isinstance(partition, int) or isinstance(partition, bool) or partition < 0:
            raise ValueError(f"{where}: partition must be a non-negative integer")
        if not isinstance(replicas, list) or not replicas or not all(
                isinstance(b, int) and not isinstance(b, bool) for b in replicas):
            raise ValueError(f"{where}: replicas must be a non-empty list of broker ids")
        if len(set(replicas)) != len(replicas):
            raise ValueError(f"{where}: replicas name a broker twice: {replicas}")
        dirs = entry.get("log_dirs", ["any"] * len(replicas))
        if not isinstance(dirs, list) or len(dirs) != len(replicas):
            raise ValueError(f"{where}: log_dirs must have one entry per replica ({len(replicas)})")
        for d in dirs:
            if not isinstance(d, str) or (d != "any" and not d.startswith("/")):
                raise ValueError(f'{where}: a log dir is "any" or an absolute path, not {d!r}')
        wanted.append(Wanted(topic, partition, tuple(replicas), tuple(dirs)))
    keys = [(w.topic, w.partition) for w in wanted]
    if len(set(keys)) != len(keys):
        raise ValueError(f"{source}: a partition is listed twice")
    return wanted


def placement(dirs: list[LogDirInfo]) -> dict[tuple[str, int, int], tuple[str | None, str | None]]:
    """(topic, partition, broker) -> (its current log dir, the dir a move is copying it to)."""
    where: dict[tuple[str, int, int], tuple[str | None, str | None]] = {}
    for d in dirs:
        for r in d.replicas:
            current, future = where.get((r.topic, r.partition, d.broker), (None, None))
            where[(r.topic, r.partition, d.broker)] = (current, d.path) if r.is_future else (d.path, future)
    return where


def unplaced(wanted: list[Wanted], where: dict[tuple[str, int, int], tuple[str | None, str | None]]
             ) -> list[tuple[Wanted, int, str, str | None]]:
    """Replicas not (yet) in the directory asked for: (wanted, broker, asked, current)."""
    missing = []
    for w in wanted:
        for broker, asked in zip(w.replicas, w.log_dirs):
            current, future = where.get((w.topic, w.partition, broker), (None, None))
            if asked != "any" and (current != asked or future is not None):
                missing.append((w, broker, asked, current))
    return missing


@log_dirs_app.command()
def move(
    file: Annotated[Path, typer.Option("--file", "-f", help="kafka-reassign-partitions.sh's reassignment JSON, "
                                       "with log_dirs", exists=True, dir_okay=False, readable=True)],
    verify: Annotated[bool, typer.Option("--verify", help="change nothing: report where each replica is, exit 1 "
                                         "while any is not where the file says")] = False,
    timeout: Annotated[float, typer.Option("--timeout", help="seconds to keep asking a broker that has not created "
                                           "a replica yet (ReplicaNotAvailable), and to wait for the moves")] = 300.0,
    throttle: Annotated[Optional[int], typer.Option(  # noqa: UP007
        "--throttle", help=f"bytes/s between a broker's directories ({INTRA_BROKER_THROTTLE}), set on the brokers "
        "involved for the move and cleared afterwards", min=1)] = None,
    no_wait: Annotated[bool, typer.Option("--no-wait", help="return once Kafka has the moves (throttles then stay "
                                          "until `--verify` finds every replica in place)")] = False,
) -> None:
    """Move replicas to the directories (and brokers) the file names, wait until every one is there, then clear the
    throttle. A replica a broker has not created yet is asked for again until the timeout, as
    kafka-reassign-partitions.sh does."""
    try:
        wanted = parse_reassignment(file.read_text(), str(file))
    except ValueError as exc:
        raise fail(str(exc)) from None
    brokers = sorted({b for w in wanted for b, d in zip(w.replicas, w.log_dirs) if d != "any"})
    try:
        code = asyncio.run(_verify(wanted) if verify else _move(wanted, brokers, timeout, throttle, no_wait))
    except AdminError as exc:
        raise fail(str(exc)) from None
    raise typer.Exit(code)


async def _verify(wanted: list[Wanted]) -> int:
    admin = _admin()
    try:
        return await _report(admin, wanted)
    finally:
        await admin.aclose()


async def _report(admin: ClusterAdmin, wanted: list[Wanted]) -> int:
    dirs = await admin.describe_log_dirs()
    described = await admin.describe_topics(sorted({w.topic for w in wanted}))
    throttled = await _throttled_brokers(admin, sorted({d.broker for d in dirs}))
    where = placement(dirs)
    table = Table(title="Replicas", title_justify="left")
    for column in ("partition", "broker", "wanted", "now", ""):
        table.add_column(column)
    done = True
    for w in wanted:
        topic = described.get(w.topic)
        current = topic.partitions[w.partition].replicas if topic and w.partition < len(topic.partitions) else ()
        for broker, asked in zip(w.replicas, w.log_dirs):
            now, future = where.get((w.topic, w.partition, broker), (None, None))
            ok = broker in current and (asked == "any" or (now == asked and future is None))
            done = done and ok
            state = "done" if ok else (f"moving to {future}" if future else "not yet")
            table.add_row(escape(f"{w.topic}-{w.partition}"), str(broker), escape(asked), escape(now or "-"), state)
    console.print(table)
    if done and throttled:
        for broker in throttled:
            await admin.alter_broker_configs(broker, {INTRA_BROKER_THROTTLE: None})
        console.print(f"every replica in place: throttle cleared on broker(s) {', '.join(map(str, throttled))}")
    return 0 if done else 1


async def _throttled_brokers(admin: ClusterAdmin, brokers: list[int]) -> list[int]:
    throttled = []
    for broker in brokers:
        try:
            if INTRA_BROKER_THROTTLE in await admin.broker_configs(broker):
                throttled.append(broker)
        except Unsupported:
            return []
    return throttled


async def _move(wanted: list[Wanted], brokers: list[int], timeout_s: float, throttle: int | None,
                no_wait: bool) -> int:
    admin = _admin(timeout_s)
    throttled: list[int] = []
    try:
        if throttle is not None:
            for broker in brokers:
                try:
                    await admin.alter_broker_configs(broker, {INTRA_BROKER_THROTTLE: str(throttle)})
                except Unsupported as exc:
                    err.print(f"[yellow]throttle not set on broker {broker}:[/yellow] {escape(str(exc))}")
                    break
                throttled.append(broker)
        described = await admin.describe_topics(sorted({w.topic for w in wanted}))
        if missing := sorted({w.topic for w in wanted if described.get(w.topic) is None}):
            raise UnknownTopic(f"no such topic(s): {', '.join(missing)}")
        reassign: dict[str, dict[int, list[int]]] = {}
        for w in wanted:
            topic = described[w.topic]
            assert topic is not None
            if w.partition >= len(topic.partitions):
                raise UnknownTopic(f"{w.topic} has no partition {w.partition}")
            if tuple(topic.partitions[w.partition].replicas) != w.replicas:
                reassign.setdefault(w.topic, {})[w.partition] = list(w.replicas)
        for topic, replicas in reassign.items():
            await admin.reassign_partitions(topic, replicas)
            console.print(f"{escape(topic)}: reassigning {len(replicas)} partition(s) between brokers")
        by_topic: dict[str, dict[tuple[int, int], str]] = {}
        for w in wanted:
            for broker, asked in zip(w.replicas, w.log_dirs):
                if asked != "any":
                    by_topic.setdefault(w.topic, {})[(w.partition, broker)] = asked
        for topic, dirs in by_topic.items():
            await admin.alter_replica_log_dirs(topic, dirs)  # asked again while ReplicaNotAvailable, to the timeout
            console.print(f"{escape(topic)}: {len(dirs)} replica(s) on their way to the directories asked for")
        if no_wait:
            console.print("moves started; `ballast log-dirs move --verify -f ...` reports them"
                          + (" and clears the throttle" if throttled else ""))
            throttled = []  # left for --verify, as kafka-reassign-partitions.sh leaves them
            return 0
        return await _wait_moves(admin, wanted, timeout_s)
    finally:
        for broker in throttled:
            try:
                await admin.alter_broker_configs(broker, {INTRA_BROKER_THROTTLE: None})
            except AdminError as exc:
                err.print(f"[yellow]throttle not cleared on broker {broker}:[/yellow] {escape(str(exc))}")
        await admin.aclose()


async def _wait_moves(admin: ClusterAdmin, wanted: list[Wanted], timeout_s: float) -> int:
    deadline = time.monotonic() + timeout_s
    said = -1
    while True:
        missing = unplaced(wanted, placement(await admin.describe_log_dirs()))
        moving = await admin.list_reassignments(sorted({w.topic for w in wanted}))
        left = len(missing) + len(moving)
        if left == 0:
            console.print("every replica is in the directory asked for")
            return 0
        if left != said:
            console.print(f"{len(missing)} replica(s) still moving between directories, {len(moving)} partition(s) "
                          "between brokers")
            said = left
        if time.monotonic() > deadline:
            for w, broker, asked, current in missing:
                err.print(f"{escape(w.topic)}-{w.partition} on broker {broker}: in {escape(current or '-')}, "
                          f"asked for {escape(asked)}")
            err.print(f"[red]not done within {timeout_s:.0f} s[/red]")
            return 1
        await asyncio.sleep(0.5)


@log_dirs_app.command()
def release(
    name: Annotated[Optional[str], typer.Argument(help="the remove-disks rebalance that drained them")] = None,
    broker: Annotated[Optional[int], typer.Option("--broker", help="or: the broker of a drained directory")] = None,
    log_dir: Annotated[Optional[str], typer.Option("--log-dir", help="and that directory")] = None,
) -> None:
    """Let placement use drained directories again. Ballast keeps a directory a remove-disks rebalance emptied
    empty until it is released here (by the rebalance's name, or by broker and directory)."""
    from services.cli.commands.rebalance import _act, latest_rebalances
    from services.rebalancer.disks import drained_log_dirs

    if name is None and (broker is None or log_dir is None):
        raise fail("name the remove-disks rebalance, or give --broker and --log-dir")
    statuses = latest_rebalances()
    if name is not None:
        if name not in statuses or statuses[name].request.mode != "remove-disks":
            raise fail(f"no remove-disks rebalance named {name!r}")
        names = [name]
    else:
        names = [n for n, s in statuses.items() if log_dir in drained_log_dirs([s]).get(broker or 0, set())]
        if not names:
            raise fail(f"no remove-disks rebalance keeps {log_dir} of broker {broker} empty")
    for each in names:
        _act(each, "release")
