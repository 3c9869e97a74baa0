"""What `ballast up` may ask of the local stack (issue 56, defect 11): your own Cruise Control, broker settings, jars
on the brokers' classpath, the rack of an added broker; and the brokers' properties files, read back by Java."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from services.cli.main import app
from services.local.kafka_cluster import properties_text
from services.local.stack_growth import rack_for
from services.local.stack_options import (
    broker_config,
    classpath_entries,
    cruise_control_env,
    cruise_control_url,
    java_classpath,
    least_used_rack,
    recorded_cruise_control,
)

CC = "BALLAST_CRUISE_CONTROL__"


def test_a_cruise_control_url_is_its_host_port_scheme_and_prefix() -> None:
    assert cruise_control_env("http://127.0.0.1:9090") == {
        f"{CC}HOST": "127.0.0.1", f"{CC}PORT": "9090", f"{CC}SSL_ENABLED": "false",
        f"{CC}URL_PREFIX": "kafkacruisecontrol"}
    secure = cruise_control_env("https://cc.example/api/cc/")
    assert secure == {f"{CC}HOST": "cc.example", f"{CC}PORT": "443", f"{CC}SSL_ENABLED": "true",
                      f"{CC}URL_PREFIX": "api/cc"}
    assert cruise_control_url(secure) == "https://cc.example:443/api/cc/"


@pytest.mark.parametrize(("url", "said"), [
    ("cc.example:9090", "http:// or https://"),
    ("ftp://cc.example", "http:// or https://"),
    ("http://admin:secret@cc.example:9090", "no credentials in the URL"),
    ("http://cc.example:9090/?json=true", "no query"),
    ("http://cc.example:99999", "no valid port"),
])
def test_a_cruise_control_url_that_cannot_be_used_is_refused_with_why(url: str, said: str) -> None:
    with pytest.raises(ValueError, match=said) as refused:
        cruise_control_env(url)
    assert "secret" not in str(refused.value)


def test_the_record_keeps_the_callers_cruise_control_files_never_a_password(tmp_path: Path) -> None:
    files = {f"{CC}AUTH_ENABLED": "true", f"{CC}USERNAME": "ballast", f"{CC}PASSWORD_FILE": "pw",
             f"{CC}CA_FILE": str(tmp_path / "ca.pem"), f"{CC}TIMEOUT_S": "5"}
    kept = recorded_cruise_control(files)
    assert kept == {f"{CC}AUTH_ENABLED": "true", f"{CC}USERNAME": "ballast",
                    f"{CC}PASSWORD_FILE": str(Path("pw").resolve()), f"{CC}CA_FILE": str(tmp_path / "ca.pem")}
    # A password in the environment: neither it nor AUTH_ENABLED (every setting would fail without it).
    inline = recorded_cruise_control({f"{CC}AUTH_ENABLED": "true", f"{CC}USERNAME": "ballast",
                                      f"{CC}PASSWORD": "secret"})
    assert inline == {}


def test_broker_settings_are_key_value_pairs_the_stack_does_not_own() -> None:
    assert broker_config(["metric.reporters=a.B", "x.y=1=2", "x.y=3"]) == {"metric.reporters": "a.B", "x.y": "3"}
    for bad, said in (("novalue", "KEY=VALUE"), ("=1", "KEY=VALUE"), ("a b=1", "no spaces"),
                      ("listeners=PLAINTEXT://:1", "cannot set listeners"), ("broker.rack=/x", "--rack")):
        with pytest.raises(ValueError, match=said):
            broker_config([bad])


def test_classpath_entries_are_jars_or_directories_that_exist(tmp_path: Path) -> None:
    jar = tmp_path / "reporter.jar"
    jar.write_bytes(b"PK")
    (tmp_path / "notes.txt").write_text("")
    entries = classpath_entries([str(jar), str(tmp_path), str(jar)])
    assert entries == (jar, tmp_path)
    assert java_classpath(entries) == [str(jar), str(tmp_path), f"{tmp_path}/*"]
    for bad, said in ((tmp_path / "missing.jar", "does not exist"), (tmp_path / "notes.txt", "neither a jar")):
        with pytest.raises(ValueError, match=said):
            classpath_entries([bad])
    colon = tmp_path / "a:b"
    colon.mkdir()
    with pytest.raises(ValueError, match="classpath separator"):
        classpath_entries([colon])


def test_an_added_broker_goes_to_the_least_used_rack_unless_told_and_fits_the_rack_tree() -> None:
    racks = {1: "/dc1/r1", 2: "/dc1/r2", 3: "/dc2/r1", 4: "/dc1/r1"}
    assert least_used_rack(racks.values()) == "/dc1/r2"
    assert rack_for(racks, None, 5) == "/dc1/r2"
    assert rack_for(racks, "/dc3/r1", 5) == "/dc3/r1"
    for bad, said in (("/dc3", "mix depths"), ("dc1/r1", "does not start with '/'"), ("/dc1//r1", "empty level")):
        with pytest.raises(ValueError, match=said):
            rack_for(racks, bad, 5)


def test_broker_properties_are_escaped_as_java_reads_them() -> None:
    """Values a user gives (--broker-config) reach the broker as written (read back by a real broker's reporter:
    tests/kafka/test_up.py): a backslash, a key's separator, a leading space, a line break, non-ASCII."""
    assert properties_text({"re": "^a\\.b$", "odd key:=": " #x", "lines": "one\ntwo", "name": "Zoë 💡"}) == (
        "re=^a\\\\.b$\n"
        "odd\\ key\\:\\==\\ #x\n"
        "lines=one\\ntwo\n"
        "name=Zo\\u00eb \\ud83d\\udca1\n")


def test_add_broker_refuses_the_options_of_a_new_stack() -> None:
    result = CliRunner().invoke(app, ["up", "--add-broker", "--kafka", "--broker-config", "a=b"])
    assert result.exit_code == 2, result.output
    assert result.output.strip() == ("error: --add-broker adds a broker to the running stack as it was started; "
                                     "leave out --broker-config, --kafka (for a new stack)")


def test_the_real_kafka_options_need_kafka() -> None:
    for options in (["--cruise-control", "http://127.0.0.1:9090"], ["--broker-config", "a=b"],
                    ["--broker-classpath", "."], ["--secure"]):
        result = CliRunner().invoke(app, ["up", *options])
        assert result.exit_code == 2, result.output
        assert "need --kafka" in result.output
