"""``ballast spark``: what spark-submit needs to run the load-aggregates job on a cluster (docs/operations.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from services.cli.output import fail

app = typer.Typer(help="What spark-submit needs to run the Spark job on a cluster: Ballast's code, the job's "
                       "script and the Kafka source's jars.", no_args_is_help=True)


@app.command()
def package(
    output_dir: Annotated[Path | None, typer.Option(
        "--output-dir", "-o", help="where to write the archive [default: the state directory's spark/, "
                                   "BALLAST_STATE_DIR]")] = None,
) -> None:
    """Write Ballast's code as a zip for the executors (spark-submit --py-files) and print its path.

    The name follows the content, so a changed project never reuses a name that executors have cached."""
    from services.common.settings import get_settings
    from spark.project_archive import write_archive

    print(write_archive(output_dir or archive_folder(get_settings().state_dir)).resolve())


def archive_folder(state_dir: Path) -> Path:
    """Where ``package`` writes by default: a folder every install has and this user may write to (the state
    directory), never the working directory, which a pip or image install may not own."""
    return state_dir / "spark"


@app.command()
def script() -> None:
    """Print the path of the job's script, the application file for spark-submit (installed with Ballast)."""
    import importlib.util

    # Found, not imported: the job's imports (PySpark) are spark-submit's to make.
    spec = importlib.util.find_spec("spark.aggregates")
    if spec is None or spec.origin is None:
        raise fail("Ballast's Spark job (spark/aggregates.py) is not installed with this ballast")
    print(Path(spec.origin).resolve())


@app.command()
def jars() -> None:
    """Print the jars of Spark's Kafka source, comma-separated (spark-submit --jars), for
    BALLAST_SPARK__SOURCE=kafka."""
    from spark.session import kafka_source_jars

    try:
        print(",".join(str(jar.resolve()) for jar in kafka_source_jars()))
    except FileNotFoundError as exc:
        raise fail(str(exc)) from None
