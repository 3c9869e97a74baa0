"""Ballast's code for the Python process that plans the ``ballast_bus`` source's offsets on the driver's host.

Spark starts that process (``PythonStreamingSourceRunner``; its streaming sink runner alike) with the executors'
Python (``spark.pyspark.python``), which on a cluster has no Ballast, and tells it that the job's Python includes (the
archive given with ``--py-files`` or ``addPyFile``) are in ``<SparkFiles root>/streaming_job``: Spark 4 passes that
fixed name as the job's artifact folder (``writeSparkFiles(Some("streaming_job"), ...)``), but keeps the driver's copy
of every include in the root itself, and nothing puts one there. The process then cannot unpickle the source: ``No
module named 'spark'``. It went unseen while the job ran from a checkout: Python puts a ``-m`` module's working
directory, the driver's, on its path, and found Ballast's packages there.

So each include of the session is linked into that folder as the session starts, under either launcher.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

# The folder, under the driver's SparkFiles root, where Spark's streaming runners look for the Python includes.
STREAMING_FOLDER = "streaming_job"


def link_includes(root: Path, includes: list[str]) -> list[Path]:
    """Each of ``includes`` (names of files in ``root``) also in ``root/streaming_job``; the paths linked. One that
    is not in ``root`` is left out: the planner could not have it from there either."""
    linked = []
    for name in includes:
        source = root / name
        if not source.is_file():
            continue
        target = root / STREAMING_FOLDER / name
        target.parent.mkdir(exist_ok=True)
        if not target.exists():
            target.symlink_to(source)
        linked.append(target)
    return linked


def share_includes_with_streaming_planner(spark: Any) -> list[Path]:
    """The session's Python includes where Spark's streaming source runner looks for them (see the module's text).
    Call it once the includes are known: spark-submit's at the session's start, ``addPyFile``'s after it."""
    from pyspark import SparkFiles

    # _python_includes: the names PySpark sends every Python process Spark starts, the planner's included.
    return link_includes(Path(SparkFiles.getRootDirectory()), list(spark.sparkContext._python_includes or []))
