"""The local Spark session (``local[2]``) the job and the tests use; spark-submit brings its own session instead."""

from __future__ import annotations

import hashlib
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from spark.jvm_output import java_options

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


def worker_python() -> str:
    """An executable for Spark's Python workers on this machine: this interpreter, with the installed pyspark ahead
    of the copy in pyspark.zip that Spark puts first on its workers' path.

    Imports from a zip are compiled from source in every worker: pyspark.sql alone took 1.4 CPU-s from the zip and
    0.5 s from the installed, compiled package. A worker must connect back to Spark within a fixed 10 s, and a query
    whose Python planner a machine loaded with another suite kept longer failed to start, again and again."""
    import pyspark

    installed = Path(pyspark.__file__).resolve().parents[1]
    script = f'#!/bin/sh\nPYTHONPATH="{installed}${{PYTHONPATH:+:$PYTHONPATH}}" exec "{sys.executable}" "$@"\n'
    # In a folder only this user can write to: a script at a guessable path in the shared /tmp, run by Spark, would
    # be anyone's to replace.
    folder = Path(tempfile.gettempdir()) / f"ballast-{os.getuid()}"
    folder.mkdir(mode=0o700, exist_ok=True)
    if folder.is_symlink() or folder.stat().st_uid != os.getuid() or folder.stat().st_mode & 0o022:
        raise RuntimeError(f"{folder} is not this user's own folder: remove it, and Ballast makes it again")
    path = folder / f"spark-python-{hashlib.sha256(script.encode()).hexdigest()[:16]}"
    if not path.exists():
        # Written whole under another name, then renamed: processes starting together each see a complete script.
        partial = path.with_name(f"{path.name}.{os.getpid()}")
        partial.write_text(script)
        partial.chmod(0o755)
        partial.replace(path)
    return str(path)


def local_session(app_name: str, master: str = "local[2]", jars: list[Path] | None = None,
                  jvm_options: str = "") -> Any:
    """``jvm_options``: more options for the driver's JVM (``SMALL_JOB_JVM`` for a small job). ``jars``: extra jars on the classpath (``spark.jars``); by default Spark's Kafka source where it is installed.
    PySpark starts one JVM per process, with the first session's jars: a later session cannot add a data source, so
    every session brings the Kafka source along rather than only those that read with it."""
    from pyspark.sql import SparkSession

    if jars is None:
        try:
            jars = kafka_source_jars()
        except FileNotFoundError:
            jars = []

    # Python workers must be this interpreter: it has pyarrow, pandas and confluent-kafka.
    os.environ.setdefault("PYSPARK_PYTHON", worker_python() if master.startswith("local") else sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    if master.startswith("local"):
        # The driver binds to the loopback address (below); without this Spark also looks for a routable one, and
        # warns twice when the host name resolves to the loopback.
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    builder = SparkSession.builder.master(master) if master else SparkSession.builder
    if jars:
        builder = builder.config("spark.jars", ",".join(str(j) for j in jars))
    spark = (builder.appName(app_name)
             .config("spark.ui.enabled", "false")
             # PySpark starts its JVM as a "pyspark-shell", for which Spark draws a progress bar on the console
             # ([Stage 0:===>]) when a stage takes over 0.5 s: lines in the job's JSON log.
             .config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.shuffle.partitions", "2")
             .config("spark.sql.session.timeZone", "UTC")
             .config("spark.driver.bindAddress", "127.0.0.1")
             .config("spark.driver.host", "127.0.0.1")
             # Spark checks whether a foreachBatch error was its query's stop with a regex that recurses once per
             # character of the error (StreamExecution.PROXY_ERROR): 1 MB stacks overflow on a py4j trace. Spark's
             # own log lines are JSON (spark.jvm_output).
             .config("spark.driver.extraJavaOptions", " ".join(filter(None, ("-Xss16m", jvm_options, java_options()))))
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    return spark
