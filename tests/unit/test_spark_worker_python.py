"""Spark's Python workers import the installed, compiled pyspark, not the copy in pyspark.zip that Spark puts first
on their path (compiled from source in every worker: a loaded machine kept the Python planner of a query past
Spark's 10 s connect-back limit, start after start)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pyspark.sql

from spark.session import worker_python
from tests.patience import WAIT_S

ZIP = Path(pyspark.__file__).parent / "python" / "lib" / "pyspark.zip"


def imported_from(python: str) -> str:
    """Where ``python`` finds pyspark.sql with Spark's zip first on its path, as Spark starts its workers."""
    done = subprocess.run([python, "-c", "import pyspark.sql; print(pyspark.sql.__file__)"],
                          env={**os.environ, "PYTHONPATH": str(ZIP)}, capture_output=True, text=True,
                          timeout=WAIT_S, check=True)
    return done.stdout.strip()


def test_the_workers_python_imports_the_installed_pyspark_where_spark_puts_its_zip_first() -> None:
    assert imported_from(sys.executable).startswith(str(ZIP))  # the interpreter alone takes the zip's
    python = worker_python()
    assert imported_from(python) == str(Path(pyspark.sql.__file__).resolve())
    assert os.access(python, os.X_OK) and worker_python() == python  # one script for this interpreter, made once
    folder = Path(python).parent.stat()  # a script Spark runs, where only this user can write
    assert folder.st_uid == os.getuid() and folder.st_mode & 0o777 == 0o700
