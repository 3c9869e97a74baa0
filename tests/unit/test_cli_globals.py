"""The CLI's global options (issue 18, item 16): --version and shell completion (--bootstrap-server is in
tests/integration/test_cli_stack.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

from typer.testing import CliRunner

from services.cli.main import app, invocation_environment
from services.local.stack import Ports, StackInfo
from tests.patience import WAIT_S

BALLAST = str(Path(sys.executable).with_name("ballast"))


def test_version_prints_the_installed_version() -> None:
    result = CliRunner().invoke(app, ["--version"])
    assert result.exit_code == 0
    assert result.output == f"ballast {version('ballast')}\n"


def _complete(words: str) -> list[str]:
    env = {**os.environ, "_BALLAST_COMPLETE": "complete_bash", "COMP_WORDS": words,
           "COMP_CWORD": str(len(words.split(" ")) - 1)}
    done = subprocess.run([BALLAST], env=env, capture_output=True, text=True, timeout=WAIT_S)
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


def test_bash_completion_completes_commands_options_and_choices() -> None:
    # Without Typer's test switch, --show-completion is a flag that detects the shell from the process tree: under
    # pytest that found none once ("Shell  not supported"). With it, the option takes the shell's name.
    env = {**os.environ, "_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION": "1"}
    script = subprocess.run([BALLAST, "--show-completion", "bash"], env=env, capture_output=True, text=True,
                            timeout=WAIT_S)
    assert "complete -o default -F _ballast_completion ballast" in script.stdout
    assert _complete("ballast rebalance ap") == ["approve"]
    assert _complete("ballast status --outp") == ["--output"]
    assert _complete("ballast status --output ") == ["table", "json", "yaml"]


def _stack(bus: str) -> StackInfo:
    return StackInfo(run_dir="/tmp/x", ports=Ports.pick(), pids={"broker": os.getpid()},
                     env={"BALLAST_BUS__BOOTSTRAP_SERVERS": bus, "BALLAST_CLUSTER_ADMIN__KIND": "simulator",
                          "BALLAST_PORTS__REBALANCER": "6068", "BALLAST_DATA_DIR": "/tmp/x/data"})


def test_the_bus_is_the_option_then_the_environment_then_the_running_stack() -> None:
    stack = _stack("127.0.0.1:4000")
    assert invocation_environment("10.0.0.9:9092", "status", {}, lambda: stack) == {
        "BALLAST_BUS__BOOTSTRAP_SERVERS": "10.0.0.9:9092"}
    # Set in the environment: the stack is not used, not even for the other client settings.
    assert invocation_environment(None, "status", {"BALLAST_BUS__BOOTSTRAP_SERVERS": "kafka:9092"},
                                  lambda: stack) == {}
    # Nothing said: the stack's client settings (not its services' own), except what is set already. The services'
    # ports are a client's too: `ballast doctor` reads their health pages (issue 56, defect 1).
    assert invocation_environment(None, "status", {"BALLAST_CLUSTER_ADMIN__KIND": "kafka"}, lambda: stack) == {
        "BALLAST_BUS__BOOTSTRAP_SERVERS": "127.0.0.1:4000", "BALLAST_PORTS__REBALANCER": "6068"}
    assert invocation_environment(None, "status", {}, lambda: None) == {}
    for starts_its_own in ("demo", "up", "run"):
        assert invocation_environment(None, starts_its_own, {}, lambda: stack) == {}
