"""CLI errors are one readable line and a non-zero exit (issue 18, defects 1 and 2)."""

from __future__ import annotations

from typer.testing import CliRunner

from services.cli.main import app


def test_deleting_an_invalid_topic_name_is_refused_before_the_bus_is_asked(monkeypatch) -> None:
    # A bus nobody listens on: asking it would end in "no broker answered", not in the name's error.
    monkeypatch.setenv("BALLAST_BUS__BOOTSTRAP_SERVERS", "127.0.0.1:1")
    result = CliRunner().invoke(app, ["delete", "has space", "--yes"])
    assert result.exit_code == 1
    assert result.output.strip() == ("error: invalid Kafka topic name 'has space': use 1-249 characters from "
                                     "[a-zA-Z0-9._-], not '.' or '..'")
    assert result.exception is None or isinstance(result.exception, SystemExit)
