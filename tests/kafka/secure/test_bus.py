"""The real Kafka cluster secured (issue 53, part 1: a secured bus, for real): SASL_SSL with SCRAM-SHA-512,
certificates from the stack's own CA, Kafka's StandardAuthorizer. The services and the CLI authenticate from a
password file; a replication-factor change goes end to end; a client without credentials or with a wrong password is
refused in one clear line; no password reaches a log, a status or the stack's client settings."""

from __future__ import annotations

import json
import time
from pathlib import Path

from services.local.kafka_probe import admin_client
from services.local.kafka_security import ADMIN, SERVICES
from services.local.stack import LocalStack
from services.local.stack_state import client_env
from tests.kafka.secure.conftest import stack_cli as cli
from tests.patience import WAIT_S


def replication_factor(stack: LocalStack, topic: str) -> int:
    assert stack.security is not None and stack.kafka is not None
    with admin_client(stack.kafka.bootstrap_servers, timeout_ms=10_000,
                      config=stack.security.kafka_python(ADMIN)) as admin:
        [described] = admin.describe_topics([topic])
    return max(len(p["replica_nodes"]) for p in described["partitions"])


def test_a_replication_factor_change_goes_end_to_end_over_sasl_ssl(stack: LocalStack, tmp_path: Path) -> None:
    spec = tmp_path / "orders.yaml"
    spec.write_text("name: secure-orders\npartitions: 2\nreplicas: 3\n")
    created = cli(stack, "apply", "-f", str(spec), "--wait", "--timeout", str(WAIT_S))
    assert created.returncode == 0, created.stdout + created.stderr
    assert replication_factor(stack, "secure-orders") == 3
    spec.write_text("name: secure-orders\npartitions: 2\nreplicas: 2\n")
    changed = cli(stack, "apply", "-f", str(spec), "--wait", "--timeout", str(WAIT_S))
    assert changed.returncode == 0, changed.stdout + changed.stderr
    assert replication_factor(stack, "secure-orders") == 2
    status = json.loads(cli(stack, "status", "secure-orders", "-o", "json").stdout)
    assert status["ready"] and status["replicasChange"]["state"] == "completed", status


def test_a_client_without_credentials_is_told_what_the_bus_wants(stack: LocalStack) -> None:
    plain = cli(stack, "status", env={"BALLAST_BUS__SECURITY_PROTOCOL": "PLAINTEXT", "BALLAST_BUS__SASL_MECHANISM": "",
                                      "BALLAST_BUS__SASL_USERNAME": "", "BALLAST_BUS__SASL_PASSWORD_FILE": "",
                                      "BALLAST_BUS__ANSWER_TIMEOUT_S": "5"})
    assert plain.returncode == 1
    assert "Does it take TLS or SASL only (BALLAST_BUS__SECURITY_PROTOCOL and its settings)?" in plain.stderr
    assert "Traceback" not in plain.stderr and len(plain.stderr.splitlines()) <= 3, plain.stderr


def test_a_wrong_password_is_refused_in_one_line_that_does_not_show_it(stack: LocalStack, tmp_path: Path) -> None:
    wrong = tmp_path / "wrong.password"
    wrong.write_text("not-the-password-0123456789")
    refused = cli(stack, "status", env={"BALLAST_BUS__SASL_PASSWORD_FILE": str(wrong)})
    assert refused.returncode == 1
    assert f"the bus refused this client as '{SERVICES}' (SASL_SSL): sasl_ssl://127.0.0.1:" in refused.stderr
    assert ("SASL authentication error: Authentication failed during authentication due to invalid credentials with "
            "SASL mechanism SCRAM-SHA-512") in refused.stderr, refused.stderr
    assert "Check the client's credentials and CA" in refused.stderr
    assert "not-the-password" not in refused.stdout + refused.stderr
    assert "Traceback" not in refused.stderr


def test_no_password_reaches_a_log_a_status_or_the_client_settings(stack: LocalStack) -> None:
    assert stack.security is not None
    # Every user's: the admin's, Ballast's and each tenant's (tenants/<name>.env names only the password's file).
    passwords = {user: stack.security.password(user) for user in stack.security.users()}
    assert {ADMIN, SERVICES, "payments", "team-a"} <= set(passwords)
    settings = client_env(stack.info())
    assert settings["BALLAST_BUS__SASL_PASSWORD_FILE"] == str(stack.security.password_file(SERVICES))
    statuses = cli(stack, "status", "-o", "json")
    doctor = cli(stack, "doctor", "-o", "json")
    health = {check["name"]: check["health"] for check in map(json.loads, doctor.stdout.splitlines())}
    # The stack runs two of the services: the bus and the cluster are asked as the ballast user.
    assert statuses.returncode == 0 and health["bus"] == health["cluster"] == "ok", doctor.stdout + doctor.stderr
    tenants = "".join(p.read_text() for p in stack.tenants_env_dir.glob("*.env"))
    shown = json.dumps(settings) + tenants + statuses.stdout + statuses.stderr + doctor.stdout + doctor.stderr
    logs = [p for p in stack.run_dir.rglob("*") if p.is_file() and p.suffix in (".log", ".json", ".out")]
    assert any(p.name == "topic-reconciler.log" for p in logs)
    for user, password in passwords.items():
        assert password not in shown, user
        assert [p for p in logs if password in p.read_text(errors="replace")] == [], user


def test_a_service_refused_its_credentials_says_why_backs_off_and_starts_once_they_are_right(
        stack: LocalStack, tmp_path: Path) -> None:
    assert stack.security is not None
    password_file = tmp_path / "ballast.password"
    password_file.write_text("an-old-password-0123456789")
    stack.instance_env["rebalancer"] = {"BALLAST_BUS__SASL_PASSWORD_FILE": str(password_file)}
    stack.start_process("rebalancer")
    log = stack.logs / "rebalancer.log"

    def refusals() -> list[dict]:
        lines = [json.loads(line) for line in log.read_text().splitlines() if line.startswith("{")]
        return [line for line in lines if line["event"] == "the bus refused Ballast's credentials"]

    deadline = time.monotonic() + WAIT_S
    while len(refusals()) < 3 and time.monotonic() < deadline:
        time.sleep(0.5)
    seen = refusals()
    assert [r["next_try_s"] for r in seen[:3]] == [1.0, 2.0, 4.0]  # backing off, not a storm
    assert seen[0]["level"] == "error" and "SASL authentication error: Authentication failed" in seen[0]["reason"]
    # The password file is put right (a rotated Secret, say): the service starts with no one restarting it.
    password_file.write_text(stack.security.password(SERVICES))
    stack.wait_http(stack.health_url("rebalancer"), "rebalancer", timeout_s=WAIT_S)
    assert stack.security.password(SERVICES) not in log.read_text()
