"""What the job's Spark session is given, decided in one place: plain rules over the settings and what spark-submit
already set, so that a test can read every decision without a JVM.

Precedence, as Spark's own (properties set in code over spark-submit's flags over defaults): a Ballast setting given
explicitly, then spark-submit's properties, then Ballast's defaults. Two things are not negotiable: a local master
keeps the driver on the loopback address, and the job's windows are computed in UTC.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from services.common.settings import SparkSettings

LOOPBACK = "127.0.0.1"
DEFAULT_MASTER = "local[2]"
# A scheme (hdfs:, s3a:, file:) names where the checkpoint lives; a bare path is on the driver's own file system.
_URI = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


def is_local(master: str) -> bool:
    return master == "local" or master.startswith("local[")


def resolve_master(settings: SparkSettings, submitted: Mapping[str, str] | None) -> str:
    """``submitted``: spark-submit's properties when the job runs under it, None under ``ballast run``."""
    return settings.master or (submitted or {}).get("spark.master") or DEFAULT_MASTER


@dataclass(frozen=True)
class SessionPlan:
    master: str
    # Call the builder's master(): False under spark-submit when no setting names one, so that its own stays.
    set_master: bool
    conf: dict[str, str]
    # The executors' Python (PYSPARK_PYTHON, which PySpark reads as it starts its context); None: leave it as it is.
    worker_python: str | None
    # Send the project to the executors (as --py-files does): a cluster master under ``ballast run``.
    ship_project: bool
    warnings: list[str] = field(default_factory=list)

    @property
    def local(self) -> bool:
        return is_local(self.master)


def plan_session(settings: SparkSettings, submitted: Mapping[str, str] | None, *, jars: Sequence[str] = (),
                 driver_java_options: str = "", local_python: str | None = None,
                 environ: Mapping[str, str] | None = None) -> SessionPlan:
    """``jars`` and ``driver_java_options``: for the JVM that ``ballast run`` starts (under spark-submit, its own
    --jars and --driver-java-options are). ``local_python``: the executors' Python under a local master.
    ``environ``: this process's environment (PYSPARK_PYTHON)."""
    given = dict(submitted or {})
    environ = environ or {}
    master = resolve_master(settings, submitted)
    local = is_local(master)

    defaults = {"spark.sql.shuffle.partitions": "2"}  # the state store's partitions: a small job, fixed at its start
    if local:
        defaults["spark.ui.enabled"] = "false"
    conf = {key: value for key, value in defaults.items() if key not in given}
    # Window bounds are read as UTC (spark.aggregates), and Spark's console progress bar would break the JSON log.
    conf |= {"spark.sql.session.timeZone": "UTC", "spark.ui.showConsoleProgress": "false"}
    if submitted is None:
        if jars:
            conf["spark.jars"] = ",".join(jars)
        if driver_java_options:
            conf["spark.driver.extraJavaOptions"] = driver_java_options
    if local:
        # Nothing of a local job needs to be reached from another host.
        conf |= {"spark.driver.host": LOOPBACK, "spark.driver.bindAddress": LOOPBACK}
    else:
        conf |= {key: value for key, value in (("spark.driver.host", settings.driver_host),
                                               ("spark.driver.bindAddress", settings.driver_bind_address)) if value}
    conf |= settings.conf

    worker_python = settings.worker_python or (None if environ.get("PYSPARK_PYTHON") or not local else local_python)

    warnings = []
    if not local and not _URI.match(settings.checkpoint_location):
        warnings.append(f"the checkpoint {settings.checkpoint_location!r} is on this host's file system, and "
                        "executors on other hosts write the window state there too: give storage every host sees "
                        "(hdfs://, s3a://, or file:// on a mount shared at the same path)")
    shipped = [path.rsplit("/", 1)[-1] for path in given.get("spark.submit.pyFiles", "").split(",")]
    if submitted is not None and not local and not any(name.startswith("ballast-") for name in shipped):
        warnings.append("spark-submit was given no Ballast archive (--py-files \"$(ballast spark package)\"): the "
                        "executors then need Ballast installed")
    return SessionPlan(master=master, set_master=submitted is None or bool(settings.master), conf=conf,
                       worker_python=worker_python, ship_project=submitted is None and not local, warnings=warnings)
