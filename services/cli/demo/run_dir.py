"""A demo's run directory (the stack's logs and data): said first, so a failed demo's logs are easy to find, and
removed once the demo succeeded unless ``--keep``."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from rich.console import Console


def create(console: Console, prefix: str) -> Path:
    run_dir = Path(tempfile.mkdtemp(prefix=prefix))
    console.print(f"[dim]- run directory {run_dir} (logs, data); removed at the end unless --keep[/dim]",
                  soft_wrap=True)
    return run_dir


def finish(console: Console, run_dir: Path, *, keep: bool) -> int:
    """After a demo that succeeded and stopped its stack: the exit code."""
    if keep:
        console.print(f"[dim]kept {run_dir}[/dim]", soft_wrap=True)
    else:
        shutil.rmtree(run_dir, ignore_errors=True)
    console.print("[green]demo finished[/green]")
    return 0
