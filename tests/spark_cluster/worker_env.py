"""A Python for the Spark worker that has exactly deploy/spark-worker-requirements.txt and what they require, and no
Ballast: a virtual environment whose site-packages links the installed files of those distributions (no download,
and the suite's own pins). If the list misses something the executors import, the job fails on this worker."""

from __future__ import annotations

import subprocess
import sys
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

REQUIREMENTS = Path(__file__).resolve().parents[2] / "deploy" / "spark-worker-requirements.txt"


def listed(path: Path = REQUIREMENTS) -> list[Requirement]:
    lines = (line.split("#", 1)[0].strip() for line in path.read_text().splitlines())
    return [Requirement(line) for line in lines if line]


def closure(requirements: list[Requirement]) -> dict[str, metadata.Distribution]:
    """The installed distributions of ``requirements`` and of everything they require (no extras)."""
    found: dict[str, metadata.Distribution] = {}
    todo = [r.name for r in requirements]
    while todo:
        name = canonicalize_name(todo.pop())
        if name in found:
            continue
        found[name] = metadata.distribution(name)
        for text in found[name].requires or []:
            requirement = Requirement(text)
            if requirement.marker is None or requirement.marker.evaluate({"extra": ""}):
                todo.append(requirement.name)
    return found


def make(folder: Path) -> Path:
    """The environment in ``folder``; its python's path."""
    base = getattr(sys, "_base_executable", sys.executable)
    subprocess.run([base, "-m", "venv", "--without-pip", str(folder)], check=True, timeout=120)
    site = next(folder.glob("lib/python*/site-packages"))
    for distribution in closure(listed()).values():
        for top in sorted({Path(str(f)).parts[0] for f in distribution.files or []}):
            source = Path(str(distribution.locate_file(top)))
            if top not in ("..", "__pycache__") and source.exists() and not (site / top).exists():
                (site / top).symlink_to(source)
    return folder / "bin" / "python"
