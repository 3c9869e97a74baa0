"""``ballast spark``: what spark-submit needs to run the load-aggregates job on a cluster (docs/operations.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from services.cli.output import fail

app = typer.Typer(help="What spark-submit needs to run the Spark job on a cluster: Ballast's code and the Kafka "
                       "source's jars.", no_args_is_help=True)


@app.command()
def package(
    output_dir: Annotated[Path, typer.Option("--output-dir", "-o", help="where to write the archive")] = Path("dist"),
) -> None:
    """Write Ballast's code as a zip for the executors (spark-submit --py-files) and print its path.

    The name follows the content, so a changed project never reuses a name that executors have cached."""
    from spark.project_archive import write_archive

    print(write_archive(output_dir).resolve())


@app.command()
def jars() -> None:
    """Print the jars of Spark's Kafka source, comma-separated (spark-submit --jars), for
    BALLAST_SPARK__SOURCE=kafka."""
    from spark.session import kafka_source_jars

    try:
        print(",".join(str(jar.resolve()) for jar in kafka_source_jars()))
    except FileNotFoundError as exc:
        raise fail(str(exc)) from None
