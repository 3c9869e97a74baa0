"""The CLI's global options (issue 18, item 16): --version and shell completion (--bootstrap-server is in
tests/integration/test_cli_stack.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

from typer.testing import CliRunner

from services.cli.main import app

BALLAST = str(Path(sys.executable).with_name("ballast"))


def test_version_prints_the_installed_version() -> None:
    result = CliRunner().invoke(app, ["--version"])
    assert result.exit_code == 0
    assert result.output == f"ballast {version('ballast')}\n"


def _complete(words: str) -> list[str]:
    env = {**os.environ, "_BALLAST_COMPLETE": "complete_bash", "COMP_WORDS": words,
           "COMP_CWORD": str(len(words.split(" ")) - 1)}
    done = subprocess.run([BALLAST], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


def test_bash_completion_completes_commands_options_and_choices() -> None:
    script = subprocess.run([BALLAST, "--show-completion", "bash"], capture_output=True, text=True, timeout=60)
    assert "complete -o default -F _ballast_completion ballast" in script.stdout
    assert _complete("ballast rebalance ap") == ["approve"]
    assert _complete("ballast status --outp") == ["--output"]
    assert _complete("ballast status --output ") == ["table", "json", "yaml"]

