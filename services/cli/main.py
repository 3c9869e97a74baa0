"""``ballast``: the root command and its global options; the commands themselves are in ``services/cli/commands``
(topics, brokers, rebalance, log_dirs, throttle, bus, stack, place, load, spark_job). This module only wires them."""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from services.cli.commands import acls, adopting, brokers, bus, load, place, spark_job, stack, topics
from services.cli.commands.log_dirs import log_dirs_app
from services.cli.commands.rebalance import rebalance_app
from services.cli.commands.throttle import throttle_app
from services.cli.output import err
from services.common.busio import BusUnavailable, ClientRefused, NotAuthorized
from services.common.settings import get_settings

if TYPE_CHECKING:
    from services.local.stack import StackInfo

app = typer.Typer(
    help="Ballast: declare how Kafka topics are replicated; Ballast makes the cluster match through Cruise Control.",
    no_args_is_help=True, pretty_exceptions_enable=False)

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

    get_settings.cache_clear()
    os.environ.update(invocation_environment(bootstrap_server, ctx.invoked_subcommand, os.environ, _running_stack))
    get_settings.cache_clear()


def _running_stack() -> StackInfo | None:
    # Imported only when asked: the local stack's module brings httpx and the cluster launchers, which a service
    # (``ballast run``) or a command given its bus does not need.
    from services.local.stack_state import running_stack

    return running_stack(get_settings().state_dir)


def invocation_environment(bootstrap_server: str | None, command: str | None, environ: Mapping[str, str],
                           stack: Callable[[], StackInfo | None]) -> dict[str, str]:
    """What this invocation adds to its environment: ``--bootstrap-server`` as the bus; else, when nothing says where
    the bus is, the client settings of the stack `ballast up` started (settings set explicitly still win); nothing
    for the commands that start a stack of their own."""
    if bootstrap_server:
        return {BOOTSTRAP: bootstrap_server}
    if BOOTSTRAP in environ or command in _STARTS_ITS_OWN or (running := stack()) is None:
        return {}
    from services.local.stack_state import client_env

    return {key: value for key, value in client_env(running).items() if key not in environ}


# The order of --help.
app.command()(place.place)
app.command()(stack.run)
app.command()(topics.apply)
app.command()(topics.diff)
app.command()(topics.delete)
app.add_typer(brokers.app, name="brokers")
app.add_typer(rebalance_app, name="rebalance")
app.add_typer(log_dirs_app, name="log-dirs")
app.add_typer(throttle_app, name="throttle")
app.command()(topics.status)
app.command()(topics.describe)
app.command()(adopting.export)
app.command()(load.load)
app.command()(bus.init_bus)
app.command()(acls.acls)
app.command()(bus.produce)
app.command()(bus.record)
app.command()(bus.replay)
app.command()(bus.schema)
app.add_typer(spark_job.app, name="spark")
app.command()(stack.up)
app.command()(stack.env)
app.command()(stack.doctor)
app.command()(stack.down)
app.command()(stack.dashboard)
app.command()(stack.demo)


def main() -> None:
    """Console entry point: the commands, with bus failures reported in one readable line."""
    from confluent_kafka import KafkaException
    from pydantic import ValidationError
    from rich.markup import escape

    try:
        app(prog_name="ballast")
    except ValidationError as exc:
        if exc.title != "Settings":
            raise
        for problem in exc.errors(include_url=False):
            variable = "BALLAST_" + "__".join(str(part) for part in problem["loc"]).upper()
            message = problem["msg"].removeprefix("Value error, ")
            err.print(f"[red]error:[/red] {escape(variable)}: {escape(message)}", soft_wrap=True)
        sys.exit(2)
    except NotAuthorized as exc:
        err.print(f"[red]error:[/red] {escape(str(exc))}", soft_wrap=True)
        sys.exit(1)
    except (KafkaException, BusUnavailable) as exc:
        bus = get_settings().bus
        if isinstance(exc, ClientRefused):
            hint = ("Check the client's credentials and CA (BALLAST_BUS__SASL_USERNAME, __SASL_PASSWORD_FILE or "
                    "__SASL_PASSWORD, __SSL_CAFILE).")
        else:
            hint = ("Is the stack up (`ballast up`), or --bootstrap-server (BALLAST_BUS__BOOTSTRAP_SERVERS) your "
                    "Kafka?" + (" Does it take TLS or SASL only (BALLAST_BUS__SECURITY_PROTOCOL and its settings)?"
                                if bus.security_protocol == "PLAINTEXT" else ""))
        err.print(f"[red]error:[/red] cannot use the bus at {bus.bootstrap_servers}: {escape(str(exc))}\n{hint}",
                  soft_wrap=True)
        sys.exit(1)
