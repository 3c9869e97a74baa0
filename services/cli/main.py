"""``ballast``: apply specs, watch status, record and replay the bus, run services, and run the embedded stack."""

from __future__ import annotations

import base64
import json
import sys
import time
from pathlib import Path
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Annotated, Optional

import typer
from rich.markup import escape

from events import TOPICS, InvalidEvent, TopicSpecDeleted, TopicStatus, decode
from events.models import Event
from events.schema import json_schemas
from events.topics import BusTopic
from services.common import busio
from services.common.busio import BusUnavailable, NoSuchTopic
from services.cli.manifests import ManifestError, load_file
from services.cli.log_dirs import log_dirs_app
from services.cli.rebalance import rebalance_app
from services.cli.output import JsonFlag, Output, OutputOption, chosen, console, emit, emit_one, err, fail
from services.cli.views import status_table
from services.common.wording import transition_line
from services.common.settings import get_settings

if TYPE_CHECKING:
    from services.local.stack import StackInfo
    from services.placement.model import ClusterView

app = typer.Typer(
    help="Ballast: declare how Kafka topics are replicated; Ballast makes the cluster match through Cruise Control.",
    no_args_is_help=True, pretty_exceptions_enable=False)

SERVICES = ("topic-reconciler", "replicas-change", "rebalancer", "load-collector", "spark-aggregates", "cluster-sim")
BOOTSTRAP = "BALLAST_BUS__BOOTSTRAP_SERVERS"
# Commands that start a stack (or run in one) and must not inherit a running stack's settings.
_STARTS_ITS_OWN = {"demo", "up", "run"}


def _print_version(value: bool) -> None:
    if value:
        from importlib.metadata import version

        print(f"ballast {version('ballast')}")
        raise typer.Exit()


@app.callback()
def _global_options(
    ctx: typer.Context,
    bootstrap_server: Annotated[Optional[str], typer.Option(  # noqa: UP007 -- typer
        "--bootstrap-server", metavar="HOST:PORT[,...]",
        help="the Kafka cluster carrying Ballast's events (the bus). Default: BALLAST_BUS__BOOTSTRAP_SERVERS, else "
             "the stack `ballast up` started, else 127.0.0.1:9092")] = None,
    version: Annotated[bool, typer.Option("--version", help="print the version and exit", is_eager=True,
                                          callback=_print_version)] = False,
) -> None:
    # Settings come from the environment of each invocation (one per process from a shell; several in tests, each
    # with its own stack's environment).
    import os

    from services.local.stack_state import running_stack

    get_settings.cache_clear()
    os.environ.update(invocation_environment(bootstrap_server, ctx.invoked_subcommand, os.environ,
                                             lambda: running_stack(get_settings().state_dir)))
    get_settings.cache_clear()


def invocation_environment(bootstrap_server: str | None, command: str | None, environ: Mapping[str, str],
                           stack: Callable[[], StackInfo | None]) -> dict[str, str]:
    """What this invocation adds to its environment: ``--bootstrap-server`` as the bus; else, when nothing says where
    the bus is, the client settings of the stack `ballast up` started (settings set explicitly still win); nothing
    for the commands that start a stack of their own."""
    from services.local.stack_state import client_env

    if bootstrap_server:
        return {BOOTSTRAP: bootstrap_server}
    if BOOTSTRAP in environ or command in _STARTS_ITS_OWN or (running := stack()) is None:
        return {}
    return {key: value for key, value in client_env(running).items() if key not in environ}


@app.command()
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
    return (f"placer {placer}: {added}, {placed.replicas} replicas; spread violations by level "
            f"{placed.spread_violations or 'none'}; new partitions with two replicas in one top-level domain while "
            f"another has none: {placed.top_level_doubled:.0%}. Every broker afterwards (all topics): replicas "
            f"{after.replicas_per_broker[0]}-{after.replicas_per_broker[1]}, leaders "
            f"{after.leaders_per_broker[0]}-{after.leaders_per_broker[1]}")


def _chosen_log_dirs(cluster: Path, assignment: list[list[int]]) -> dict[tuple[int, int], str]:
    """Directories for the new replicas, by the placement package's rule (least used by bytes, counting what this
    placement already sent there); usage from the cluster file, or DescribeLogDirs of the live cluster's online
    directories."""
    import asyncio

    from services.common.admin import AdminError
    from services.common.admin.factory import make_cluster_admin
    from services.placement.cluster_file import read_log_dir_usage
    from services.placement.log_dirs import LogDirUsage, choose_log_dirs

    usage = read_log_dir_usage(cluster)
    if not usage:
        async def describe() -> dict[int, dict[str, LogDirUsage]]:
            admin = make_cluster_admin(get_settings().cluster_admin)
            try:
                described = await admin.describe_log_dirs(sorted({b for r in assignment for b in r}))
            finally:
                await admin.aclose()
            found: dict[int, dict[str, LogDirUsage]] = {}
            for d in described:
                if d.online:
                    found.setdefault(d.broker, {})[d.path] = LogDirUsage(
                        d.size_bytes / 1e6, sum(1 for r in d.replicas if not r.is_future))
            return found

        try:
            usage = asyncio.run(describe())
        except AdminError as exc:
            raise fail(f"--log-dirs: cannot describe the cluster's log directories ({exc}); list them in the "
                        "cluster file's brokers (logDirs)") from None
    return choose_log_dirs({index: replicas for index, replicas in enumerate(assignment)}, usage)


@app.command()
def run(service: Annotated[str, typer.Argument(help=f"one of: {', '.join(SERVICES)}")]) -> None:
    """Run one service in the foreground (settings from BALLAST_* environment variables)."""
    from services.common.garbage_collection import tune_garbage_collection
    from services.common.logging import configure_logging, stdlib_logging_config

    settings = get_settings()
    configure_logging(service, level=settings.log_level, fmt=settings.log_format)
    tune_garbage_collection()
    if service == "cluster-sim":
        import asyncio

        from services.cluster_sim.app import serve

        asyncio.run(serve(settings.simulator, settings.cluster_admin))
        return
    if service == "spark-aggregates":
        from spark.aggregates import main as run_job

        run_job()
        return
    if service == "topic-reconciler":
        from services.topic_reconciler.app import create_service
    elif service == "replicas-change":
        from services.replicas_change.app import create_service
    elif service == "rebalancer":
        from services.rebalancer.app import create_service
    elif service == "load-collector":
        from services.load_collector.app import create_service
    else:
        raise fail(f"unknown service {service!r}; choose one of: {', '.join(SERVICES)}", 2)
    from faust.worker import Worker

    from services.common.lease import Lease

    # One instance of a service runs at a time and the others stand by until it stops; the topic reconciler's
    # instances share its work by shards, one per partition of the bus topics (services/common/lease.py).
    sharded = service == "topic-reconciler"
    lease = Lease(settings.bus, service, shards=settings.bus.topic_partitions if sharded else 1)
    lease.wait(host=settings.web_host, port=getattr(settings.ports, service.replace("-", "_")))
    lease.keep()
    created = create_service(settings, lease=lease) if sharded else create_service(settings)
    worker = Worker(created.app, loglevel="warning", quiet=True, redirect_stdouts=False,
                    logging_config=stdlib_logging_config(settings.log_level, settings.log_format))
    worker.spinner = None  # a terminal progress spinner: escape codes at the top of a log file
    code = 0
    try:
        worker.execute_from_commandline()
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    lease.release(code)


@app.command()
def apply(
    file: Annotated[Path, typer.Option("-f", "--file", help="YAML: topic specs (Strimzi KafkaTopic or plain) and "
                                       "rebalances (Strimzi KafkaRebalance or plain kind: Rebalance)")],
    dry_run: Annotated[bool, typer.Option("--dry-run", help="publish nothing: show what would change (as `ballast "
                                          "diff`)")] = False,
    wait: Annotated[bool, typer.Option("--wait", help="wait until every topic applied is ready or has failed; "
                                       "exit 1 unless all are ready")] = False,
    timeout: Annotated[float, typer.Option(help="with --wait: give up after this many seconds", min=1)] = 300.0,
) -> None:
    """Publish the desired state of topics and rebalances.

    A spec identical to the one on the bus is not published again (its generation stays); warnings (partitions Kafka
    cannot remove, a replication factor too few brokers can hold) are printed first."""
    from events import RebalanceRequest, TopicSpec
    from services.cli.applying import compare, print_diffs, wait_until_settled

    try:
        manifests = load_file(file)
    except ManifestError as exc:
        raise fail(str(exc)) from None
    settings = get_settings()
    specs = [m for m in manifests if isinstance(m, TopicSpec)]
    diffs, unreachable = compare(settings, specs, need_cluster=dry_run)
    if dry_run:
        print_diffs(diffs, console)
        return
    if unreachable:
        err.print(f"[yellow]note:[/yellow] {escape(unreachable)}: changes are not compared with the cluster",
                  soft_wrap=True)
    for d in diffs.values():
        for warning in d.warnings:
            err.print(f"[yellow]warning:[/yellow] {escape(d.name)}: {escape(warning)}", soft_wrap=True)
    sent = [m for m in manifests if not isinstance(m, TopicSpec) or diffs[m.name].publish]
    offsets: dict[bytes, int] = {}  # of the specs: a spec's generation is its record's offset + 1
    if sent_specs := [m for m in sent if isinstance(m, TopicSpec)]:
        busio.publish(settings.bus, TOPICS.specs, sent_specs, offsets_by_key=offsets)
    if requests := [m for m in sent if isinstance(m, RebalanceRequest)]:
        busio.publish(settings.bus, TOPICS.rebalance_requests, requests)
    for m in manifests:
        if isinstance(m, RebalanceRequest):
            brokers = f" brokers={m.brokers}" if m.brokers else ""
            console.print(f"rebalance {escape(m.name)}: mode={m.mode}{brokers}"
                          f"{' (auto-approved)' if m.auto_approve else ''} applied", soft_wrap=True)
        elif diffs[m.name].publish:
            console.print(f"topic spec {escape(m.name)}: partitions={m.partitions} replicas={m.replicas} applied",
                          soft_wrap=True)
        else:
            console.print(f"topic spec {escape(m.name)}: unchanged", soft_wrap=True)
    if wait and specs:
        # An unchanged spec keeps the generation it has.
        generations = {key.decode(): offset + 1 for key, offset in offsets.items()}
        raise typer.Exit(wait_until_settled(settings, specs, generations, timeout_s=timeout, console=console))


@app.command()
def diff(
    file: Annotated[Path, typer.Option("-f", "--file", help="YAML, as for `ballast apply`")],
    output: OutputOption = None,
) -> None:
    """Show what `ballast apply -f FILE` would change, per topic.

    Compared with the live cluster and the specs on the bus: created, partitions, replication factor, config keys,
    placement choices; unchanged for no-ops. Exit 0: nothing would change, 1: something would, 2: a spec would be
    refused or the cluster cannot be asked."""
    from events import TopicSpec
    from services.cli.applying import compare, print_diffs
    from services.cli.changes import Verdict

    try:
        manifests = load_file(file)
    except ManifestError as exc:
        raise fail(str(exc), 2) from None
    specs = [m for m in manifests if isinstance(m, TopicSpec)]
    diffs, _ = compare(get_settings(), specs, need_cluster=True)
    if output in (None, Output.table):
        print_diffs(diffs, console)
    else:
        emit([d.document() for d in diffs.values()], output, lambda: "")
    verdicts = {d.verdict for d in diffs.values()}
    raise typer.Exit(2 if Verdict.REFUSED in verdicts else 0 if verdicts <= {Verdict.UNCHANGED} else 1)


@app.command()
def delete(
    topics: Annotated[list[str], typer.Argument(help="topic names")],
    yes: Annotated[bool, typer.Option("--yes", "-y", help="do not ask for confirmation")] = False,
) -> None:
    """Withdraw topic specs. A topic Ballast created (or a spec adopted) is deleted; any other is left as it is.

    Names without a live spec are refused, and so are Kafka's internal topics and Ballast's own."""
    from events.models import check_topic_name
    from events.topics import reserved_topic

    settings = get_settings()
    for name in topics:
        try:
            check_topic_name(name)
        except ValueError as exc:  # refused before the bus is asked: no such topic can exist
            raise fail(str(exc)) from None
        if reason := reserved_topic(name):
            raise fail(reason)
    try:
        statuses = busio.latest(settings.bus, TOPICS.status, timeout_s=10)
    except BusUnavailable as exc:
        raise fail(str(exc)) from None
    deleting, retaining = [], []
    for name in topics:
        status = statuses.get(name)
        if status is None or status.deleted:
            raise fail(f"no spec for topic {name!r}: Ballast does not manage it, so there is nothing to withdraw")
        assert isinstance(status, TopicStatus)
        (deleting if status.origin is not None else retaining).append(name)
    if deleting:
        console.print(f"the topics {', '.join(deleting)} will be deleted with their data", soft_wrap=True)
    if retaining:
        console.print(f"the specs of {', '.join(retaining)} will be withdrawn; the topics stay (Ballast neither "
                      "created nor adopted them)", soft_wrap=True)
    if not yes:
        if not sys.stdin.isatty():
            raise fail("not a terminal, so nothing can be confirmed: pass --yes to delete")
        if not typer.confirm("go ahead?", default=False):
            raise fail("nothing deleted")
    events = [TopicSpecDeleted(name=name) for name in topics]
    busio.publish(settings.bus, TOPICS.specs, events)
    for name in topics:
        console.print(f"topic spec {name}: withdrawn" + ("" if name in deleting else " (topic retained)"))


brokers_app = typer.Typer(help="Brokers placement keeps room for: every broker the cluster has had, alive or not.",
                          no_args_is_help=True)
app.add_typer(brokers_app, name="brokers")


@brokers_app.command("list")
def brokers_list(output: OutputOption = None) -> None:
    """Brokers placement keeps room for, alive or not, with their racks."""
    from rich.table import Table

    from events import ObservedBroker

    registry: dict[str, ObservedBroker | None] = {}
    for event in busio.events(get_settings().bus, TOPICS.observed_brokers, follow=False, idle_s=0.7):
        registry[event.key] = event if isinstance(event, ObservedBroker) else None
    entries = sorted((e for e in registry.values() if e is not None), key=lambda e: e.id)

    def table() -> Table:
        shown = Table(title="Observed brokers")
        for column in ("id", "rack", "first seen"):
            shown.add_column(column)
        for entry in entries:
            shown.add_row(str(entry.id), entry.rack or "-", entry.first_seen.strftime("%Y-%m-%d %H:%M:%S"))
        return shown

    emit(entries, output or Output.table, table)


@brokers_app.command("forget")
def brokers_forget(broker_ids: Annotated[list[int], typer.Argument(help="ids of decommissioned brokers")]) -> None:
    """Drop decommissioned brokers from the registry.

    Placement stops keeping room for them; a broker still in the cluster is observed again at the next look."""
    from events import BrokerForgotten

    events = [BrokerForgotten(id=broker) for broker in broker_ids]
    busio.publish(get_settings().bus, TOPICS.observed_brokers, events)
    for broker in broker_ids:
        console.print(f"broker {broker}: forgotten")


@brokers_app.command("remove")
def brokers_remove(broker_ids: Annotated[list[int], typer.Argument(help="ids of the brokers to take away")]) -> None:
    """Announce a scale-down: Ballast moves every replica off these brokers first.

    The rebalancer makes a remove-brokers rebalance named auto-remove-brokers-<ids> (auto-approved when
    BALLAST_REBALANCER__AUTO__ENABLED is true; otherwise approve it with `ballast rebalance approve`). Its status says
    when the brokers are safe to remove."""
    from events import BrokerRemovalRequested

    event = BrokerRemovalRequested(brokers=broker_ids)
    busio.publish(get_settings().bus, TOPICS.scaling, [event])
    console.print(f"brokers {', '.join(map(str, event.brokers))}: removal announced; follow it with "
                  f"`ballast rebalance status auto-remove-brokers-{'-'.join(map(str, event.brokers))}`")


app.add_typer(rebalance_app, name="rebalance")
app.add_typer(log_dirs_app, name="log-dirs")


def _latest_statuses() -> dict[str, TopicStatus]:
    return busio.latest(get_settings().bus, TOPICS.status, timeout_s=10)


@app.command()
def status(
    topic: Annotated[Optional[str], typer.Argument(help="only this topic")] = None,  # noqa: UP007 -- typer
    output: OutputOption = None,
    as_json: JsonFlag = False,
    watch: Annotated[bool, typer.Option("--watch", "-w", help="keep printing transitions (Ctrl-C stops)")] = False,
) -> None:
    """Show topic statuses: the latest per topic, or every transition with --watch."""
    fmt = chosen(output, as_json)
    if not watch:
        statuses = [s for s in _latest_statuses().values() if topic is None or s.topic == topic]
        if topic is not None and not statuses:
            raise fail(f"no status for topic {topic!r} yet")
        emit(statuses, fmt, lambda: status_table(statuses))
        return
    previous: dict[str, TopicStatus] = {}
    try:
        for event in busio.events(get_settings().bus, TOPICS.status, follow=True):
            if topic is not None and event.topic != topic:
                continue
            if fmt is Output.table:
                console.print(transition_line(event, previous.get(event.topic)), soft_wrap=True)
            else:
                emit_one(event, fmt)
            previous[event.topic] = event
    except BusUnavailable as exc:
        raise fail(f"stopped watching: {exc}") from None
    except KeyboardInterrupt:
        pass


@app.command()
def describe(
    topic: Annotated[str, typer.Argument(help="topic name")],
    output: OutputOption = None,
) -> None:
    """Show one topic: its spec, the cluster and its status side by side, and every partition.

    Partitions with their replicas' racks and log directories, leader, in-sync replicas, offline replicas and
    placeholders. Works on any topic, managed or not."""
    from services.cli.describe import AdminError, document, gather, render

    try:
        view = gather(get_settings(), topic)
    except AdminError as exc:
        raise fail(f"cannot describe {topic!r}: the cluster did not answer ({exc})") from None
    if not view.exists:
        raise fail(f"no topic {topic!r}: not in the cluster, and no spec names it")
    emit([document(view)], output or Output.table, lambda: render(view))


@app.command()
def load(
    kind: Annotated[list[str], typer.Option("--kind", help="domain, broker, log-dir (repeatable)")] = ["domain",
                                                                                                    "broker"],
    output: OutputOption = None,
    as_json: JsonFlag = False,
) -> None:
    """Show the latest load aggregates (the Spark job's, per rack-tree domain, broker and log directory)."""
    from services.cli.views import latest_windows, load_table

    fmt = chosen(output, as_json)
    unknown = set(kind) - {"domain", "broker", "log-dir"}
    if unknown:
        raise fail(f"--kind: unknown {sorted(unknown)}; use domain, broker or log-dir", 2)
    aggregates = list(busio.latest(get_settings().bus, TOPICS.load_aggregates, timeout_s=10).values())
    if not aggregates:
        raise fail("no load aggregates yet: are the load collector and `ballast run spark-aggregates` running?")
    chosen_rows = [a for a in latest_windows(aggregates) if a.entity_kind in kind]  # type: ignore[arg-type]
    emit(chosen_rows, fmt, lambda: load_table(aggregates, tuple(kind)))  # type: ignore[arg-type]


@app.command()
def produce(
    topic: Annotated[str, typer.Option(help="bus topic")] = TOPICS.specs.name,
    key: Annotated[Optional[str], typer.Option(help="record key (default: the event's key)")] = None,  # noqa: UP007
    file: Annotated[Optional[Path], typer.Option("-f", "--file", help="JSON lines; - or omitted: stdin")] = None,  # noqa: UP007
    validate: Annotated[bool, typer.Option(help="refuse records that are not valid events of the topic")] = True,
) -> None:
    """Produce events, one JSON document per line, to a bus topic.

    A line is an envelope ({"schema": ..., "payload": ...}), or just the event itself, which gets the envelope of the
    topic's main event: on the specs topic {"name": "orders", "partitions": 6, "replicas": 3} is a topic spec."""
    from events.serde import envelope_for

    text = file.read_text() if file and str(file) != "-" else sys.stdin.read()
    bus_topic = TOPICS.named(topic)
    items = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        record_key, value = key, line.encode()
        if validate:
            try:
                event, enveloped = _event_of_line(line, bus_topic, topic)
            except InvalidEvent as exc:
                raise fail(f"line {number}: {exc.reason}") from None
            record_key = record_key or event.key
            if not enveloped:
                value = envelope_for(event).model_dump_json(by_alias=True).encode()
        items.append((topic, record_key.encode() if record_key else None, value, None))
    count = busio.produce(get_settings().bus, items)
    console.print(f"produced {count} record(s) to {escape(topic)}")


def _event_of_line(line: str, bus_topic: BusTopic[Event] | None, topic: str) -> tuple[Event, bool]:
    """The event a line holds, and whether the line is an envelope: decoded from its envelope, or validated as the
    topic's main event type."""
    from pydantic import ValidationError

    try:
        document = json.loads(line)
    except json.JSONDecodeError:
        document = None  # not JSON: the validation below says where
    if isinstance(document, dict) and "schema" in document:
        return decode(line, topic=bus_topic).event, True
    if bus_topic is None or not bus_topic.events:
        raise InvalidEvent(f"{topic} is not a Ballast topic with events: give whole envelopes "
                           '({"schema": ..., "version": ..., "payload": ...})')
    cls = bus_topic.events[0]
    try:
        return cls.model_validate_json(line), False
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or '(root)'}: {e['msg']}"
                             for e in exc.errors(include_url=False))
        raise InvalidEvent(f"not a valid {cls.SCHEMA.removeprefix('ballast.')} nor an envelope: {problems}") from None


@app.command()
def record(
    topics: Annotated[list[str], typer.Argument(help="bus topics to record")],
    follow: Annotated[bool, typer.Option(help="keep recording until Ctrl-C")] = False,
    idle: Annotated[float, typer.Option(help="without --follow: stop after this many idle seconds")] = 1.0,
) -> None:
    """Write every record of TOPICS to stdout as JSON lines (keys, headers and timestamps kept)."""
    try:
        for r in busio.consume(get_settings().bus, topics, follow=follow, idle_s=idle, must_exist=True):
            print(json.dumps({
                "topic": r.topic, "partition": r.partition, "offset": r.offset, "timestampMs": r.timestamp_ms,
                "key": _b64(r.key), "value": _b64(r.value),
                "headers": [[k, _b64(v)] for k, v in r.headers],
            }), flush=True)
    except NoSuchTopic as exc:
        raise fail(str(exc)) from None
    except KeyboardInterrupt:
        pass


@app.command()
def replay(
    log: Annotated[Path, typer.Argument(help="a log written by `ballast record`")],
    speed: Annotated[float, typer.Option(help="time compression; 0 = as fast as possible")] = 0.0,
    to_topic: Annotated[Optional[str], typer.Option(help="send everything to this topic instead")] = None,  # noqa: UP007
) -> None:
    """Feed a recorded log into the bus in order, keys and headers kept."""
    settings = get_settings()
    entries = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    entries.sort(key=lambda e: (e["timestampMs"], e["offset"]))
    start_wall, start_log = time.monotonic(), entries[0]["timestampMs"] if entries else 0
    for entry in entries:
        if speed > 0:
            due = (entry["timestampMs"] - start_log) / 1000.0 / speed
            delay = due - (time.monotonic() - start_wall)
            if delay > 0:
                time.sleep(delay)
        headers = [(k, _unb64(v)) for k, v in entry.get("headers", [])]
        busio.produce(settings.bus, [(to_topic or entry["topic"], _unb64(entry["key"]), _unb64(entry["value"]), headers)])
    console.print(f"replayed {len(entries)} record(s) from {log}")


def _b64(data: bytes | None) -> str | None:
    return base64.b64encode(data).decode() if data is not None else None


def _unb64(text: str | None) -> bytes | None:
    return base64.b64decode(text) if text is not None else None


@app.command()
def schema(out: Annotated[Optional[Path], typer.Option(help="write one file per schema here")] = None) -> None:  # noqa: UP007
    """Export the JSON schemas of the envelope and every event."""
    schemas = json_schemas()
    if out is None:
        print(json.dumps(schemas, indent=2))
        return
    out.mkdir(parents=True, exist_ok=True)
    for name, document in schemas.items():
        (out / f"{name}.json").write_text(json.dumps(document, indent=2) + "\n")
    console.print(f"wrote {len(schemas)} schemas to {out}")


@app.command()
def up(
    kafka: Annotated[bool, typer.Option(
        "--kafka", help="a real Apache Kafka cluster (KRaft, 4 brokers, hierarchical racks, two log dirs each) as "
                        "the bus and the managed cluster, instead of the embedded broker and simulated cluster")] = False,
    spark: Annotated[bool, typer.Option(help="also start the Spark load-aggregates job, as the demo does")] = True,
) -> None:
    """Start the local stack in the background (stop it with `ballast down`).

    Every `ballast` command then uses it, from any directory; other tools get its settings from
    `eval "$(ballast env)"`."""
    from services.local.stack import LocalStack
    from services.local.stack_state import client_env, running_stack, state_file

    state_dir = get_settings().state_dir
    if running_stack(state_dir) is not None:
        raise fail(f"a stack is already up (see {state_file(state_dir)}); run `ballast down` first")
    run_dir = state_dir / f"stack-{int(time.time())}"
    stack = LocalStack(run_dir.resolve(), detached=True, kafka=kafka)
    try:
        stack.start(progress=lambda m: console.print(f"[dim]{escape(m)}[/dim]"))
        if spark:
            console.print("[dim]starting the Spark load-aggregates job (its first aggregates take a minute)[/dim]")
            stack.start_spark_job()
    except BaseException:
        stack.stop()
        raise
    info = stack.info()
    info.save(state_file(state_dir))
    console.print(f"stack is up ({state_file(state_dir)}): `ballast` commands use it from any directory.")
    console.print("Other tools (any Kafka client, for the bootstrap servers): eval \"$(ballast env)\", which sets")
    for key in client_env(info):
        console.print(f"  {key}={escape(info.env[key])}", soft_wrap=True)
    console.print(f"logs: {stack.logs}" + (f" and {stack.kafka.run_dir}/*/server.log" if stack.kafka else ""),
                  soft_wrap=True)


@app.command()
def env() -> None:
    """Print the running local stack's settings as shell exports: eval "$(ballast env)"."""
    import shlex

    from services.local.stack_state import client_env, running_stack

    stack = running_stack(get_settings().state_dir)
    if stack is None:
        raise fail("no stack is up: start one with `ballast up`")
    for key, value in client_env(stack).items():
        print(f"export {key}={shlex.quote(value)}")


@app.command()
def down() -> None:
    """Stop the stack started by `ballast up`."""
    from services.local.stack import StackInfo, stop_detached
    from services.local.stack_state import state_file

    path = state_file(get_settings().state_dir)
    if not path.exists():
        console.print("no stack is up")
        return
    info = StackInfo.load(path)
    stop_detached(info.pids, say=lambda m: console.print(m))
    path.unlink()


@app.command()
def dashboard(
    port: Annotated[int, typer.Option(help="port on 127.0.0.1 (0: any free port)", min=0, max=65535)] = 8642,
) -> None:
    """Serve a live web page of topics, changes, rebalances and brokers.

    Topics with their state, conditions and the history of their replication-factor change; rebalances with their
    proposal and progress; brokers by rack with their load. Fed from the status topics; Ctrl-C stops it."""
    from services.dashboard.app import serve

    settings = get_settings()
    try:
        serve(settings, port=port, ready=lambda url: console.print(f"dashboard on {url} (bus "
                                                                    f"{escape(settings.bus.bootstrap_servers)}); "
                                                                    "Ctrl-C stops it", soft_wrap=True))
    except OSError as exc:
        raise fail(f"cannot listen on 127.0.0.1:{port}: {exc.strerror or exc}") from None


@app.command()
def demo(
    timeout: Annotated[float | None, typer.Option(
        help="give up when nothing has moved for this many seconds  [default: 180; 300 with --kafka]")] = None,
    kafka: Annotated[bool, typer.Option("--kafka", help="on a real Apache Kafka cluster (a controller and 4 brokers "
                                        "from the jars `make kafka` fetched) instead of the embedded stack")] = False,
    keep: Annotated[bool, typer.Option("--keep", help="keep the run directory (logs, data) after a demo that "
                                       "succeeded; one that failed always keeps it")] = False,
) -> None:
    """Start the embedded stack, apply a sample scenario, show the status stream and a final table, stop."""
    if kafka:
        from services.cli.demo.kafka import run_kafka_demo

        raise typer.Exit(run_kafka_demo(console, stall_s=timeout or 300.0, keep=keep))
    from services.cli.demo.embedded import run_demo

    raise typer.Exit(run_demo(console, stall_s=timeout or 180.0, keep=keep))


def main() -> None:
    """Console entry point: the commands, with bus failures reported in one readable line."""
    from confluent_kafka import KafkaException

    try:
        app(prog_name="ballast")
    except (KafkaException, BusUnavailable) as exc:
        bootstrap = get_settings().bus.bootstrap_servers
        err.print(f"[red]error:[/red] cannot use the bus at {bootstrap}: {exc}\n"
                  "Is the stack up (`ballast up`), or --bootstrap-server (BALLAST_BUS__BOOTSTRAP_SERVERS) your Kafka?")
        sys.exit(1)
