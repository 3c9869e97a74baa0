"""Ballast's Python code as one zip for Spark's executors (``--py-files``): on a cluster they import the job's data
source and functions from it, and need nothing of Ballast installed.

The archive is made from the packages this process imports (an installed wheel or a checkout alike): their ``.py``
files only, in a fixed order with fixed timestamps, so the same code gives the same bytes and the same name.
"""

from __future__ import annotations

import hashlib
import importlib
import io
import os
import zipfile
from importlib import metadata
from pathlib import Path

# Ballast's top-level packages (pyproject.toml's packages.find); the executors use events/ and spark/ today, and
# services/ comes along so that no later import of the job's modules finds a hole.
PACKAGES = ("events", "services", "spark")
_EPOCH = (1980, 1, 1, 0, 0, 0)


def _version() -> str:
    try:
        return metadata.version("ballast")
    except metadata.PackageNotFoundError:  # run from a checkout that was never installed
        return "0+unknown"


def archive_bytes() -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for package in PACKAGES:
            root = Path(importlib.import_module(package).__file__ or "").parent
            for source in sorted(root.rglob("*.py")):
                info = zipfile.ZipInfo(f"{package}/{source.relative_to(root).as_posix()}", _EPOCH)
                info.compress_type = zipfile.ZIP_DEFLATED
                info.external_attr = 0o644 << 16
                archive.writestr(info, source.read_bytes())
    return out.getvalue()


def write_archive(folder: Path) -> Path:
    """The archive in ``folder`` as ``ballast-<version>-<digest>.zip`` (written once: the name follows the content).
    Spark names a shipped file by its base name, so a changed project must not reuse one."""
    data = archive_bytes()
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"ballast-{_version()}-{hashlib.sha256(data).hexdigest()[:12]}.zip"
    if not path.exists():
        partial = path.with_name(f"{path.name}.{os.getpid()}")
        partial.write_bytes(data)
        partial.replace(path)
    return path
