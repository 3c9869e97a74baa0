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


def test_a_policy_refusal_is_exit_2_from_delete_as_from_apply_and_diff(tmp_path, monkeypatch) -> None:
    """Issue 56, defect 6: `delete` of a protected topic exited 1 (a failure), `apply` and `diff` 2 (a refusal)."""
    monkeypatch.setenv("BALLAST_BUS__BOOTSTRAP_SERVERS", "127.0.0.1:1")  # refused before the bus is asked
    policy = tmp_path / "policy.yaml"
    policy.write_text("deletionProtection: ['^prod\\.']\n")
    monkeypatch.setenv("BALLAST_POLICY_FILE", str(policy))
    result = CliRunner().invoke(app, ["delete", "prod.payments", "--yes"])
    assert result.exit_code == 2, result.output
    assert result.output.startswith("error: prod.payments: policy rule deletion-protection"), result.output


def test_an_invalid_file_is_exit_2_for_apply_and_diff_alike(tmp_path, monkeypatch) -> None:
    """Issue 30, defect 10: the same invalid file exited 2 from diff and 1 from apply."""
    monkeypatch.setenv("BALLAST_BUS__BOOTSTRAP_SERVERS", "127.0.0.1:1")
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: orders\npartitions: zero\nreplicas: 3\n")
    for command in ("apply", "diff"):
        result = CliRunner().invoke(app, [command, "-f", str(bad)])
        assert result.exit_code == 2, (command, result.output)
        assert result.output.startswith(f"error: {bad} document 1"), (command, result.output)


def test_up_and_demo_on_kafka_before_make_kafka_say_what_to_run_in_one_line(tmp_path, monkeypatch) -> None:
    """Issue 30, defect 8: a 30-line traceback."""
    monkeypatch.setenv("BALLAST_KAFKA_LIB", str(tmp_path))
    for command in (["up", "--kafka"], ["demo", "--kafka"]):
        result = CliRunner().invoke(app, command)
        assert result.exit_code == 1, (command, result.output)
        assert result.output.strip().splitlines() == [
            f"error: no Kafka jars in {tmp_path}: run `make kafka` (Maven copies them from Maven Central as "
            "jvm/kafka-runtime/pom.xml pins them)"], command


def test_what_cannot_be_undone_is_not_done_without_a_yes_when_no_one_can_be_asked(monkeypatch) -> None:
    """`delete` and `apply --prune`: without a terminal, refused with the flag that says yes."""
    import io

    import pytest
    import typer

    from services.cli.output import confirm

    monkeypatch.setattr("sys.stdin", io.StringIO(""))
    with pytest.raises(typer.Exit) as refused:
        confirm(False, "nothing applied")
    assert refused.value.exit_code == 1
    confirm(True, "nothing applied")  # --yes: no question, no refusal


def test_the_spark_job_without_pyspark_says_which_extra_or_image_has_it(monkeypatch) -> None:
    """The ballast image has no Spark (ballast-spark has): the job said so only as a traceback from deep inside."""
    import importlib.util

    find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "pyspark" else find_spec(name, *a))
    result = CliRunner().invoke(app, ["run", "spark-aggregates"])
    assert result.exit_code == 2, result.output
    assert result.output.strip().splitlines() == [
        "error: the Spark job needs PySpark: install Ballast with its spark extra (pip install 'ballast[spark]'), "
        "or run it from the ballast-spark image"]


def test_replaying_a_file_that_is_not_a_recording_names_the_line_instead_of_a_traceback(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("BALLAST_BUS__BOOTSTRAP_SERVERS", "127.0.0.1:1")
    events = tmp_path / "events.jsonl"
    events.write_text('{"topic": "ballast.load.samples", "key": "broker:1", "value": {"schema": "x"}}\n')
    result = CliRunner().invoke(app, ["replay", str(events)])
    assert result.exit_code == 1
    assert " ".join(result.output.split()) == (f"error: {events}, line 1: not an entry of `ballast record` (no "
                                               "offset, timestampMs); to send events themselves, use `ballast produce`")
    events.write_text("\n{not json\n")
    assert "line 2: not JSON" in CliRunner().invoke(app, ["replay", str(events)]).output


def test_spark_jars_without_the_kafka_source_says_what_to_run(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("BALLAST_SPARK_KAFKA_JARS", str(tmp_path))
    result = CliRunner().invoke(app, ["spark", "jars"])
    assert result.exit_code == 1
    assert "run `make spark-kafka`" in result.output and result.output.startswith("error: Spark's Kafka source needs")


def test_a_file_in_another_encoding_is_read_as_yaml_allows_or_refused_in_one_line(tmp_path, monkeypatch) -> None:
    """Issue 56, defect 2: a Latin-1 or UTF-16 file given with -f ended in a UnicodeDecodeError traceback and exit 1
    (which for `diff` means "changes"). YAML's own encodings (UTF-16 and UTF-32, with a byte-order mark or without)
    are read; anything else is exit 2 with the byte that is not UTF-8, from a file and from standard input alike."""
    monkeypatch.setenv("BALLAST_BUS__BOOTSTRAP_SERVERS", "127.0.0.1:1")
    text = "# caf\u00e9\nname: orders\npartitions: 0\nreplicas: 3\n"  # invalid (0 partitions): refused once read
    for encoding in ("utf-16", "utf-16-le", "utf-16-be", "utf-32", "utf-32-le", "utf-8-sig"):
        readable = tmp_path / f"{encoding}.yaml"
        readable.write_bytes(text.encode(encoding))
        result = CliRunner().invoke(app, ["diff", "-f", str(readable)])
        assert result.exit_code == 2, (encoding, result.output)
        assert " ".join(result.output.split()) == (
            f"error: {readable} document 1: partitions: Input should be greater than or equal to 1"), (
            encoding, result.output)
    latin = tmp_path / "latin1.yaml"
    latin.write_bytes(text.encode("latin-1"))
    for command in ("apply", "diff"):
        result = CliRunner().invoke(app, [command, "-f", str(latin)])
        assert result.exit_code == 2, (command, result.output)
        assert " ".join(result.output.split()) == (
            f"error: {latin}: not UTF-8 text: byte 0xe9 at offset 5 cannot be read (YAML is UTF-8, UTF-16 or UTF-32; "
            "convert the file, e.g. `iconv -f latin1 -t utf-8`)"), (command, result.output)
        assert result.exception is None or isinstance(result.exception, SystemExit)
    piped = CliRunner().invoke(app, ["diff", "-f", "-"], input=text.encode("latin-1"))
    assert piped.exit_code == 2 and "error: <stdin>: not UTF-8 text: byte 0xe9 at offset 5" in piped.output


def test_acls_as_a_tenant_is_refused_with_who_and_why(monkeypatch) -> None:
    """Kafka lets no tenant describe the ACLs, and the empty answer read as every binding missing (a walkthrough)."""
    monkeypatch.setenv("BALLAST_BUS__BOOTSTRAP_SERVERS", "127.0.0.1:1")
    monkeypatch.setenv("BALLAST_TENANT", "payments")
    result = CliRunner().invoke(app, ["acls"])
    assert result.exit_code == 2, result.output
    assert "`ballast acls` is an admin's command" in result.output and "tenant 'payments'" in result.output


def test_env_as_a_tenant_prints_the_tenants_own_settings_never_the_stacks(tmp_path, monkeypatch) -> None:
    """`ballast env` under a tenant's settings printed the stack's super user's exports (a walkthrough)."""
    import services.local.stack_state as stack_state

    monkeypatch.setattr(stack_state, "running_stack", lambda state_dir: object())
    monkeypatch.setattr(stack_state, "client_env", lambda stack: {"BALLAST_BUS__SASL_USERNAME": "ballast"})
    monkeypatch.setattr(stack_state, "endpoints", lambda stack, port: [])
    monkeypatch.setenv("BALLAST_STATE_DIR", str(tmp_path))
    assert "SASL_USERNAME=ballast" in CliRunner().invoke(app, ["env"]).output
    monkeypatch.setenv("BALLAST_TENANT", "payments")
    refused = CliRunner().invoke(app, ["env"])
    assert refused.exit_code == 1 and "no settings of tenant 'payments'" in refused.output
    (tmp_path / "tenants").mkdir()
    (tmp_path / "tenants" / "payments.env").write_text("BALLAST_TENANT=payments\nBALLAST_BUS__SASL_USERNAME=payments\n")
    shown = CliRunner().invoke(app, ["env"])
    assert shown.exit_code == 0 and "export BALLAST_BUS__SASL_USERNAME=payments" in shown.output
    assert "ballast" not in shown.output.replace("BALLAST", "")
