"""The job's Python includes where Spark's streaming source runner looks for them on the driver's host
(``spark.streaming_planner``; the cluster test runs the job itself, from a directory that is not the checkout)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from spark.project_archive import write_archive
from spark.streaming_planner import STREAMING_FOLDER, link_includes


def test_each_include_in_the_root_is_linked_into_the_streaming_runners_folder_once(tmp_path: Path) -> None:
    (tmp_path / "ballast-1.zip").write_bytes(b"zip")
    (tmp_path / "other.egg").write_bytes(b"egg")
    linked = link_includes(tmp_path, ["ballast-1.zip", "other.egg"])
    folder = tmp_path / STREAMING_FOLDER
    assert linked == [folder / "ballast-1.zip", folder / "other.egg"]
    assert (folder / "ballast-1.zip").read_bytes() == b"zip"
    assert link_includes(tmp_path, ["ballast-1.zip", "other.egg"]) == linked  # a second session start: no error


def test_an_include_that_is_not_in_the_root_is_left_out(tmp_path: Path) -> None:
    assert link_includes(tmp_path, ["gone.zip"]) == []
    assert not (tmp_path / STREAMING_FOLDER).exists()


def test_a_python_without_ballast_imports_the_source_from_where_the_planner_is_told_to_look(tmp_path: Path) -> None:
    # What Spark's setup_spark_files puts on the planner's path: <root>/streaming_job/<include>.
    archive = write_archive(tmp_path)
    link_includes(tmp_path, [archive.name])
    told = tmp_path / STREAMING_FOLDER / archive.name
    probe = ("import sys; sys.path = [p for p in sys.path if 'site-packages' not in p and p != '']; "
             f"sys.path.insert(0, {str(told)!r}); import spark.stopping; print(spark.stopping.__file__)")
    done = subprocess.run([sys.executable, "-I", "-S", "-c", probe], capture_output=True, text=True, cwd=tmp_path,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"{told}/spark/stopping.py"
