"""The job's Spark session: started by ``ballast run spark-aggregates`` (a local master, or a cluster's), or taken
from spark-submit, which started the JVM already; the tests use a local one. What it is given is decided in
``spark.session_conf``."""

from __future__ import annotations

import hashlib
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from services.common.logging import get_logger
from services.common.settings import SparkSettings
from spark.jvm_output import java_options
from spark.project_archive import write_archive
from spark.session_conf import DEFAULT_MASTER, LOOPBACK, is_local, plan_session, resolve_master
from spark.streaming_planner import share_includes_with_streaming_planner

REPO_ROOT = Path(__file__).resolve().parents[1]
# For a small job on one machine (the local stack, the tests): the first JIT tier only and the serial collector. A
# local session's JVM spent half its CPU compiling and collecting otherwise: one test module's Spark JVM took 26 CPU-s
# with these and 59 without. A long-running job on real traffic keeps the JVM's defaults.
SMALL_JOB_JVM = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC -XX:-UsePerfData"
KAFKA_SOURCE_ARTIFACTS = ("spark-sql-kafka-0-10_2.13", "spark-token-provider-kafka-0-10_2.13", "kafka-clients",
                          "commons-pool2")


def kafka_source_jars() -> list[Path]:
    """Spark's JVM Kafka source and what it needs beyond PySpark's own jars: ``BALLAST_SPARK_KAFKA_JARS``, or
    ``.spark/jars`` in the repository (``make spark-kafka`` copies them from Maven Central)."""
    folder = Path(os.environ.get("BALLAST_SPARK_KAFKA_JARS") or REPO_ROOT / ".spark" / "jars")
    jars = sorted(folder.glob("*.jar"))
    missing = [a for a in KAFKA_SOURCE_ARTIFACTS if not any(j.name.startswith(f"{a}-") for j in jars)]
    if missing:
        raise FileNotFoundError(f"Spark's Kafka source needs {', '.join(missing)} in {folder}: run `make spark-kafka` "
                                "(Maven copies them as jvm/spark-kafka/pom.xml pins them)")
    return jars


def _own_folder() -> Path:
    """A folder only this user can write to: a file at a guessable path in the shared /tmp, run or shipped by Spark,
    would be anyone's to replace."""
    folder = Path(tempfile.gettempdir()) / f"ballast-{os.getuid()}"
    folder.mkdir(mode=0o700, exist_ok=True)
    if folder.is_symlink() or folder.stat().st_uid != os.getuid() or folder.stat().st_mode & 0o022:
        raise RuntimeError(f"{folder} is not this user's own folder: remove it, and Ballast makes it again")
    return folder


def worker_python() -> str:
    """An executable for Spark's Python workers on this machine: this interpreter, with the installed pyspark ahead
    of the copy in pyspark.zip that Spark puts first on its workers' path.

    Imports from a zip are compiled from source in every worker: pyspark.sql alone took 1.4 CPU-s from the zip and
    0.5 s from the installed, compiled package. A worker must connect back to Spark within a fixed 10 s, and a query
    whose Python planner a machine loaded with another suite kept longer failed to start, again and again."""
    import pyspark

    installed = Path(pyspark.__file__).resolve().parents[1]
    script = f'#!/bin/sh\nPYTHONPATH="{installed}${{PYTHONPATH:+:$PYTHONPATH}}" exec "{sys.executable}" "$@"\n'
    path = _own_folder() / f"spark-python-{hashlib.sha256(script.encode()).hexdigest()[:16]}"
    if not path.exists():
        # Written whole under another name, then renamed: processes starting together each see a complete script.
        partial = path.with_name(f"{path.name}.{os.getpid()}")
        partial.write_text(script)
        partial.chmod(0o755)
        partial.replace(path)
    return str(path)


def submitted_conf() -> dict[str, str] | None:
    """spark-submit's properties when this process runs under it (its JVM started this one and left the gateway's
    port behind), else None."""
    if "PYSPARK_GATEWAY_PORT" not in os.environ:
        return None
    from pyspark import SparkConf, SparkContext

    SparkContext._ensure_initialized()  # connects to spark-submit's JVM
    return dict(SparkConf().getAll())


def job_session(app_name: str, settings: SparkSettings, jars: list[Path] | None = None, log: Any = None) -> Any:
    """The session for ``settings``. ``jars``: extra jars on the classpath (``spark.jars``); by default Spark's Kafka
    source where it is installed. PySpark starts one JVM per process, with the first session's jars: a later session
    cannot add a data source, so every session brings the Kafka source along rather than only those that read with
    it."""
    from pyspark.sql import SparkSession

    if jars is None:
        try:
            jars = kafka_source_jars()
        except FileNotFoundError:
            jars = []
    submitted = submitted_conf()
    local = is_local(resolve_master(settings, submitted))
    # Spark checks whether a foreachBatch error was its query's stop with a regex that recurses once per character of
    # the error (StreamExecution.PROXY_ERROR): 1 MB stacks overflow on a py4j trace. Spark's own log lines are JSON
    # (spark.jvm_output).
    driver_options = " ".join(filter(None, ("-Xss16m", settings.java_options, java_options())))
    plan = plan_session(settings, submitted, jars=[str(j) for j in jars], driver_java_options=driver_options,
                        local_python=worker_python() if local else None, environ=os.environ)
    for warning in plan.warnings:
        (log or get_logger("spark")).warning(warning)
    if plan.worker_python:
        os.environ["PYSPARK_PYTHON"] = plan.worker_python
    if plan.local:
        # The driver binds to the loopback address; without this Spark also looks for a routable one, and warns twice
        # when the host name resolves to the loopback.
        os.environ.setdefault("SPARK_LOCAL_IP", LOOPBACK)
    builder = SparkSession.builder.master(plan.master) if plan.set_master else SparkSession.builder
    for key, value in plan.conf.items():
        builder = builder.config(key, value)
    spark = builder.appName(app_name).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    if plan.ship_project:
        # Before any Python function or data source is registered: each takes the includes known at that moment.
        spark.sparkContext.addPyFile(str(write_archive(_own_folder())))
    # The archive (addPyFile's above, or spark-submit's --py-files) for the process that plans the source's offsets
    # on this host too, which Spark points at a folder it leaves empty (spark.streaming_planner).
    share_includes_with_streaming_planner(spark)
    return spark


def local_session(app_name: str, master: str = DEFAULT_MASTER, jars: list[Path] | None = None,
                  jvm_options: str = "") -> Any:
    """A session on a local master, for the tests and the benchmarks. ``jvm_options``: more options for the
    driver's JVM (``SMALL_JOB_JVM`` for a small job)."""
    return job_session(app_name, SparkSettings(master=master, java_options=jvm_options), jars)
