"""``ballast spark``: what the documented spark-submit command takes, found from any directory (docs/operations.md;
tests/spark_cluster runs that command from a directory of its own)."""

from __future__ import annotations

import zipfile
from pathlib import Path

from typer.testing import CliRunner

from services.cli.main import app


def test_package_writes_into_the_state_directory_and_nothing_where_it_is_run(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("BALLAST_STATE_DIR", str(tmp_path / "state"))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    result = CliRunner().invoke(app, ["spark", "package"])
    assert result.exit_code == 0, result.output
    path = Path(result.output.strip())
    assert path.parent == tmp_path / "state" / "spark" and zipfile.is_zipfile(path)
    assert not any(elsewhere.iterdir())


def test_package_writes_where_it_is_told(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("BALLAST_STATE_DIR", str(tmp_path / "state"))
    result = CliRunner().invoke(app, ["spark", "package", "--output-dir", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    assert Path(result.output.strip()).parent == tmp_path / "out"


def test_script_is_the_jobs_own_file_by_an_absolute_path(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, ["spark", "script"])
    assert result.exit_code == 0, result.output
    path = Path(result.output.strip())
    assert path.is_absolute() and path.parts[-2:] == ("spark", "aggregates.py")
    assert 'if __name__ == "__main__":' in path.read_text()
