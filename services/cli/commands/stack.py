"""Running Ballast: one service in the foreground, the embedded stack in the background (up, env, down), the
dashboard, and the demo."""

from __future__ import annotations

import importlib.util
import os
import time
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.markup import escape

from services.cli.output import JsonFlag, OutputOption, chosen, console, emit, err, fail
from services.common.settings import get_settings

# Where `ballast dashboard` serves unless told otherwise.
DASHBOARD_PORT = 8642
SERVICES = ("topic-reconciler", "replicas-change", "rebalancer", "load-collector", "throttle", "spark-aggregates",
            "cluster-sim")


def run(service: Annotated[str, typer.Argument(help=f"one of: {', '.join(SERVICES)}")]) -> None:
    """Run one service in the foreground (settings from BALLAST_* environment variables)."""
    if service == "spark-aggregates" and importlib.util.find_spec("pyspark") is None:
        raise fail("the Spark job needs PySpark: install Ballast with its spark extra (pip install 'ballast[spark]'), "
                   "or run it from the ballast-spark image", 2)
    from services.common.bus_topics import wait_for_bus_to_start
    from services.common.garbage_collection import tune_garbage_collection
    from services.common.logging import configure_logging, get_logger, stdlib_logging_config

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
    topics = None  # Ballast's own
    if service == "topic-reconciler":
        from services.topic_reconciler.app import create_service
        from services.topic_reconciler.tenancy import bus_topics

        topics = bus_topics(settings.tenants_file)  # and the tenants' (their spec topics are read)
    elif service == "replicas-change":
        from services.replicas_change.app import create_service
    elif service == "rebalancer":
        from services.rebalancer.app import create_service
    elif service == "load-collector":
        from services.load_collector.app import create_service
    elif service == "throttle":
        from services.throttle.app import create_service
    else:
        raise fail(f"unknown service {service!r}; choose one of: {', '.join(SERVICES)}", 2)
    wait_for_bus_to_start(settings.bus, get_logger(service), topics)  # before its bus, a service waits; it makes its topics
    from services.common.lease import Lease, restart_as_standby
    from services.common.service_worker import PAUSE_BEFORE_START_OVER_S, ServiceWorker, failed_for_a_moment

    # One instance of a service runs at a time and the others stand by until it stops; the topic reconciler's
    # instances share its work by shards, one per partition of the bus topics (services/common/lease.py).
    sharded = service == "topic-reconciler"
    lease = Lease(settings.bus, service, shards=settings.bus.topic_partitions if sharded else 1)
    lease.wait(host=settings.web_host, port=getattr(settings.ports, service.replace("-", "_")))
    lease.keep()
    created = create_service(settings, lease=lease) if sharded else create_service(settings)
    worker = ServiceWorker(created.app, loglevel="warning", quiet=True, redirect_stdouts=False,
                           logging_config=stdlib_logging_config(settings.log_level, settings.log_format))
    worker.spinner = None  # a terminal progress spinner: escape codes at the top of a log file
    code = 0
    try:
        worker.execute_from_commandline()
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    if code and failed_for_a_moment(worker.start_error):
        get_logger(service).warning("the bus failed the service's start; starting over as a standby",
                                    reason=repr(worker.start_error), pause_s=PAUSE_BEFORE_START_OVER_S)
        time.sleep(PAUSE_BEFORE_START_OVER_S)
        restart_as_standby()
    lease.release(code)

NEW_KAFKA_STACK = "A stack on a real Kafka (with --kafka)"
RUNNING_STACK = "The running stack"


def up(
    ctx: typer.Context,
    kafka: Annotated[bool, typer.Option(
        "--kafka", help="a real Apache Kafka cluster (KRaft, 4 brokers, hierarchical racks, two log dirs each, with the "
                        "throttle controller) as "
                        "the bus and the managed cluster, instead of the embedded broker and simulated cluster")] = False,
    spark: Annotated[bool, typer.Option(help="also start the Spark load-aggregates job, as the demo does")] = True,
    cruise_control: Annotated[Optional[str], typer.Option(  # noqa: UP007 -- typer
        "--cruise-control", metavar="URL", rich_help_panel=NEW_KAFKA_STACK,
        help="your own Cruise Control (e.g. http://127.0.0.1:9090; a path is its API prefix, "
             "/kafkacruisecontrol by default) for the services, instead of the simulator's, which then does not run. "
             "Your BALLAST_CRUISE_CONTROL__* settings (credentials, CA, task scanner period) reach the services as "
             "they are; credentials never go in the URL. Start Cruise Control on the cluster once `ballast env` "
             "prints its bootstrap servers: the services wait for it")] = None,
    broker_config: Annotated[Optional[list[str]], typer.Option(  # noqa: UP007 -- typer
        "--broker-config", metavar="KEY=VALUE", rich_help_panel=NEW_KAFKA_STACK,
        help="a setting of every broker, over the stack's own (repeatable), such as metric.reporters for Cruise "
             "Control's metrics reporter; not ids, listeners, directories or racks, which the stack sets")] = None,
    broker_classpath: Annotated[Optional[list[Path]], typer.Option(  # noqa: UP007 -- typer
        "--broker-classpath", metavar="PATH", rich_help_panel=NEW_KAFKA_STACK,
        help="a jar, or a directory (its classes and resources, and the jars in it), on every broker's classpath "
             "after Kafka's own (repeatable), e.g. Cruise Control's metrics reporter jar")] = None,
    secure: Annotated[bool, typer.Option(
        "--secure", rich_help_panel=NEW_KAFKA_STACK,
        help="the Kafka cluster on SASL_SSL (SCRAM-SHA-512, certificates from a CA the stack makes) with Kafka's "
             "StandardAuthorizer and ACLs; the services and your `ballast` commands authenticate as the stack's "
             "`ballast` user, their settings naming its password's file (`ballast env`), never the password")] = False,
    tenants: Annotated[Optional[Path], typer.Option(  # noqa: UP007 -- typer
        "--tenants", metavar="FILE",
        help="a tenants file (docs/teams.md; default: BALLAST_TENANTS_FILE) for the services; each tenant's bus "
             "topics are made, and its client settings written to the state directory's tenants/<name>.env. With "
             "--secure each tenant is a user of its own (not a super user) and `ballast acls`'s plan is applied: "
             "`env $(cat .../tenants/NAME.env) ballast apply -f ...` acts as that tenant")] = None,
    add_broker: Annotated[bool, typer.Option(
        "--add-broker", rich_help_panel=RUNNING_STACK,
        help="add one broker to the running stack's cluster instead of starting a stack: the next free id, with the "
             "other brokers' settings and classpath; `ballast down` stops it with the rest. The services see it "
             "join (an add-brokers rebalance when BALLAST_REBALANCER__AUTO__ENABLED is true)")] = False,
    rack: Annotated[Optional[str], typer.Option(  # noqa: UP007 -- typer
        "--rack", metavar="/DC/RACK", rich_help_panel=RUNNING_STACK,
        help="with --add-broker: the new broker's rack, at the depth of the others' (default: the rack with the "
             "fewest brokers)")] = None,
) -> None:
    """Start the local stack in the background (stop it with `ballast down`), or grow it (--add-broker).

    Every `ballast` command then uses it, from any directory; other tools get its settings from
    `eval "$(ballast env)"`. With --kafka the brokers run on the jars `make kafka` put in .kafka/lib, or on those
    of the folder BALLAST_KAFKA_LIB names (another Kafka's libs/). Running it against your own Cruise Control,
    step by step: docs/operations.md."""
    # What the command line said, defaults aside (typer carries click's ParameterSource as its own copy).
    given = {name for name in ("kafka", "spark", "cruise_control", "broker_config", "broker_classpath", "secure",
                               "tenants")
             if getattr(ctx.get_parameter_source(name), "name", "DEFAULT") != "DEFAULT"}
    if add_broker:
        if given:
            options = ", ".join(f"--{name.replace('_', '-')}" for name in sorted(given))
            raise fail(f"--add-broker adds a broker to the running stack as it was started; leave out {options} "
                       "(for a new stack)", 2)
        _add_broker(rack)
        return
    if rack is not None:
        raise fail("--rack is the rack of a broker --add-broker adds", 2)
    if (cruise_control or broker_config or broker_classpath or secure) and not kafka:
        raise fail("--cruise-control, --broker-config, --broker-classpath and --secure need --kafka: the embedded "
                   "stack's cluster is the simulator's model", 2)
    from services.local import stack_options
    from services.local.stack import LocalStack
    from services.local.stack_settings import OPTIONAL_SERVICES
    from services.local.stack_settings import SERVICES as STACK_SERVICES
    from services.local.stack_state import client_env, endpoints, running_stack, state_file, tenants_env_dir

    try:
        cruise_control_env = stack_options.cruise_control_env(cruise_control) if cruise_control else None
        config = stack_options.broker_config(broker_config or [])
        classpath = stack_options.classpath_entries(broker_classpath or [])
    except ValueError as exc:
        raise fail(str(exc), 2) from None
    if kafka:
        _kafka_installed()
    state_dir = get_settings().state_dir
    if running_stack(state_dir) is not None:
        raise fail(f"a stack is already up (see {state_file(state_dir)}); run `ballast down` first")
    run_dir = state_dir / f"stack-{int(time.time())}"
    # The throttle controller needs a real Kafka's throttles (the simulator keeps none): on --kafka only.
    services = (*STACK_SERVICES, *OPTIONAL_SERVICES) if kafka else STACK_SERVICES
    tenants = tenants or get_settings().tenants_file
    try:
        stack = LocalStack(run_dir.resolve(), detached=True, kafka=kafka, services=services, broker_config=config,
                           broker_classpath=classpath, cruise_control=cruise_control_env, secure=secure,
                           tenants=tenants, tenants_env_dir=tenants_env_dir(state_dir))
    except ValueError as exc:  # the tenants file is not one, or names a principal the stack cannot make
        raise fail(str(exc), 2) from None
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
    console.print("Endpoints:")
    for name, where in endpoints(info, DASHBOARD_PORT):
        console.print(f"  {name:<17} {escape(where)}", soft_wrap=True)
    console.print(f"logs: {stack.logs}" + (f" and {stack.kafka.run_dir}/*/server.log" if stack.kafka else ""),
                  soft_wrap=True)
    if cruise_control_env and "BALLAST_CRUISE_CONTROL__PASSWORD" in os.environ \
            and "BALLAST_CRUISE_CONTROL__PASSWORD_FILE" not in os.environ:
        console.print("Cruise Control's password is not recorded: other shells' `ballast doctor` needs it in "
                      "BALLAST_CRUISE_CONTROL__PASSWORD, or give it as BALLAST_CRUISE_CONTROL__PASSWORD_FILE",
                      soft_wrap=True)


def _add_broker(rack: str | None) -> None:
    import httpx

    from services.local.stack_growth import add_broker, stack_lock
    from services.local.stack_state import running_stack, state_file

    state_dir = get_settings().state_dir
    path = state_file(state_dir)
    if not path.exists():
        raise fail("no stack is up: start one with `ballast up` (or `ballast up --kafka`), then add brokers to it")
    with stack_lock(path):
        info = running_stack(state_dir)
        if info is None:
            raise fail("no stack is up: start one with `ballast up` (or `ballast up --kafka`), then add brokers to it")
        console.print(f"[dim]adding a broker{f' in {escape(rack)}' if rack else ''}[/dim]")
        try:
            broker, chosen = add_broker(info, rack)
        except ValueError as exc:
            raise fail(str(exc), 2) from None
        except (RuntimeError, TimeoutError, httpx.HTTPError) as exc:
            raise fail(f"the broker did not join: {exc}") from None
        info.save(path)
    where = "the simulated cluster" if info.kafka is None else f"127.0.0.1:{info.kafka['brokers'][-1]['port']}"
    console.print(f"broker {broker} ({chosen}) joined the cluster ({where}); `ballast down` stops it with the "
                  "rest", soft_wrap=True)


def _kafka_installed() -> None:
    """`--kafka` needs Kafka's jars and Ballast's broker plugin: without them, one line that says what to run."""
    from services.local.kafka_cluster import kafka_lib_dir, selector_jar

    try:
        kafka_lib_dir()
        selector_jar()
    except FileNotFoundError as exc:
        raise fail(str(exc)) from None


def env() -> None:
    """Print the running local stack's settings as shell exports: eval "$(ballast env)"."""
    import shlex

    from services.local.stack_state import client_env, endpoints, running_stack, tenants_env_dir

    settings = get_settings()
    stack = running_stack(settings.state_dir)
    if stack is None:
        raise fail("no stack is up: start one with `ballast up`")
    exports = client_env(stack)
    if settings.tenant is not None:
        # Acting as a tenant: its own settings (`ballast up --tenants` wrote them), never the stack's super user's.
        from services.local.stack_tenants import client_settings_file, read_client_settings

        path = client_settings_file(tenants_env_dir(settings.state_dir), settings.tenant)
        if not path.is_file():
            raise fail(f"no settings of tenant {settings.tenant!r} at {path}: the stack was not started with it "
                       "(`ballast up --kafka --secure --tenants FILE`)")
        exports = read_client_settings(path)
    for key, value in exports.items():
        print(f"export {key}={shlex.quote(value)}")
    # Comments, which eval skips: where a person looks.
    for name, where in endpoints(stack, DASHBOARD_PORT):
        print(f"# {name}: {where}")

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

def dashboard(
    port: Annotated[int, typer.Option(help="port on BALLAST_WEB_HOST, 127.0.0.1 unless set (0: any free port)", min=0, max=65535)] = DASHBOARD_PORT,
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
        raise fail(f"cannot listen on {settings.web_host}:{port}: {exc.strerror or exc}") from None

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
        _kafka_installed()
        from services.cli.demo.kafka import run_kafka_demo

        raise typer.Exit(run_kafka_demo(console, stall_s=timeout or 300.0, keep=keep))
    from services.cli.demo.embedded import run_demo

    raise typer.Exit(run_demo(console, stall_s=timeout or 180.0, keep=keep))


def doctor(
    output: OutputOption = None,
    as_json: JsonFlag = False,
    timeout: Annotated[float, typer.Option(help="seconds to wait for each part's answer", min=0.5)] = 10.0,
    wait: Annotated[float, typer.Option(
        "--wait", help="ask again every 5 s until all that runs is well, for up to this many seconds (a stack just "
                       "started); 0: ask once", min=0)] = 0.0,
) -> None:
    """Check everything Ballast needs, in one table; exit 1 unless all that runs is well.

    The bus and Ballast's topics on it, the managed cluster's brokers, Cruise Control (answering, and past its
    warm-up), each service's health page (role, backlog), and the optional parts: the throttle controller and the
    Spark job (its newest aggregates), `off` where they do not run. A part that does not answer within --timeout is
    `down`. Service addresses are BALLAST_PORTS__* on BALLAST_WEB_HOST (a running `ballast up` stack's, found as
    every command finds it)."""
    from services.cli.doctor import examine, healthy, not_ready, table, wait_until_healthy

    settings = get_settings()
    checks = wait_until_healthy(lambda: examine(settings, timeout), wait,
                                lambda waiting: err.print(f"waiting for: {escape(', '.join(waiting))}", soft_wrap=True))
    emit([c.document() for c in checks], chosen(output, as_json), lambda: table(checks))
    if healthy(checks):
        raise typer.Exit(0)
    if wait:
        err.print(f"[red]not ready within {wait:g} s:[/red] {escape(', '.join(not_ready(checks)))} (the table says "
                  "why)", soft_wrap=True)
    raise typer.Exit(1)
