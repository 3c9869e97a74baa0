"""The local Spark session (``local[2]``) the job and the tests use; spark-submit brings its own session instead."""

from __future__ import annotations

import os
import sys
from typing import Any


def local_session(app_name: str, master: str = "local[2]") -> Any:
    from pyspark.sql import SparkSession

    # Python workers must be this interpreter: it has pyarrow, pandas and confluent-kafka.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    builder = SparkSession.builder.master(master) if master else SparkSession.builder
    spark = (builder.appName(app_name)
             .config("spark.ui.enabled", "false")
             .config("spark.sql.shuffle.partitions", "2")
             .config("spark.sql.session.timeZone", "UTC")
             .config("spark.driver.bindAddress", "127.0.0.1")
             .config("spark.driver.host", "127.0.0.1")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    return spark
