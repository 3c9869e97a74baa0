"""The archive of Ballast's code that Spark's executors import (``--py-files``)."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

from spark.project_archive import PACKAGES, write_archive


def test_the_archive_holds_every_package_module_and_nothing_else(tmp_path: Path) -> None:
    path = write_archive(tmp_path)
    names = zipfile.ZipFile(path).namelist()
    assert {"spark/bus_source.py", "spark/aggregates.py", "events/__init__.py",
            "services/common/busio.py"} <= set(names)
    assert {name.split("/")[0] for name in names} == set(PACKAGES)
    assert all(name.endswith(".py") for name in names)  # no bytecode of this interpreter, no data


def test_the_same_code_gives_the_same_archive_under_the_same_name(tmp_path: Path) -> None:
    first = write_archive(tmp_path / "a")
    second = write_archive(tmp_path / "b")
    assert first.name == second.name and first.read_bytes() == second.read_bytes()
    assert first.name.startswith("ballast-") and first.suffix == ".zip"


def test_a_python_without_ballast_imports_the_jobs_data_source_from_the_archive(tmp_path: Path) -> None:
    path = write_archive(tmp_path)
    probe = ("import sys; sys.path = [p for p in sys.path if 'site-packages' not in p and p != '']; "
             f"sys.path.insert(0, {str(path)!r}); import spark.stopping; print(spark.stopping.__file__)")
    done = subprocess.run([sys.executable, "-I", "-S", "-c", probe], capture_output=True, text=True, cwd=tmp_path,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"{path}/spark/stopping.py"
