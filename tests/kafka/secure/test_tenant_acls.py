"""What Kafka enforces for tenants (issue 53), on the real Kafka cluster secured (SASL_SSL, SCRAM-SHA-512, Kafka's
StandardAuthorizer): the stack makes each tenant of the tenants file a user of its own and applies `ballast acls`'s
plan; each tenant's client settings (its .env file) make the CLI act as that tenant. A tenant applies a spec of its
own end to end, writes its own spec topic and no other, reads its own statuses and no one else's, and writes the
rebalance topics only where the file allows it; `ballast acls` shows its plan as changes, applies them, and leaves
every ACL it did not make."""

from __future__ import annotations

import json
import stat
import time
from pathlib import Path

import pytest
from confluent_kafka.admin import (AclBinding, AclBindingFilter, AclOperation, AclPermissionType, AdminClient,
                                   ResourcePatternType, ResourceType)

from events import TopicSpec
from events.topics import tenant_topics
from services.common import busio
from services.common.settings import Settings
from services.local.kafka_security import ADMIN
from services.local.stack import LocalStack
from services.local.stack_state import client_env
from tests.kafka.secure.conftest import cli, tenant_env
from tests.patience import WAIT_S

# An ACL of someone else's on Ballast's own topics: `ballast acls` never touches it.
MONITORING = AclBinding(ResourceType.TOPIC, tenant_topics("payments").status.name, ResourcePatternType.LITERAL,
                        "User:monitoring", "*", AclOperation.READ, AclPermissionType.ALLOW)


def settings_of(env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> Settings:
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    return Settings()


def admin(stack: LocalStack) -> AdminClient:
    assert stack.security is not None and stack.kafka is not None
    security = stack.security
    return AdminClient({"bootstrap.servers": stack.kafka.bootstrap_servers, "security.protocol": "SASL_SSL",
                        "sasl.mechanism": "SCRAM-SHA-512", "sasl.username": ADMIN,
                        "sasl.password": security.password(ADMIN),
                        "ssl.ca.location": str(security.certificates.ca_file), "log_level": 0})


def test_a_tenant_applies_a_spec_of_its_own_end_to_end_with_its_env_file(stack: LocalStack, tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """As a new user does it from docs/teams.md: `env $(cat tenants/payments.env) ballast apply --wait`."""
    assert stack.security is not None
    env = tenant_env(stack, "payments")
    assert env["BALLAST_TENANT"] == "payments" and env["BALLAST_BUS__SASL_USERNAME"] == "payments"
    password = Path(env["BALLAST_BUS__SASL_PASSWORD_FILE"])
    assert stat.S_IMODE(password.stat().st_mode) == 0o600
    assert password.read_text().strip() not in (stack.tenants_env_dir / "payments.env").read_text()
    spec = tmp_path / "orders.yaml"
    spec.write_text("name: payments.orders\npartitions: 2\nreplicas: 2\n")
    applied = cli(env, "apply", "-f", str(spec), "--wait", "--timeout", str(WAIT_S))
    assert applied.returncode == 0, applied.stdout + applied.stderr
    assert "topic spec payments.orders: partitions=2 replicas=2 applied" in applied.stdout
    # On the tenant's spec topic; the gate forwarded it to the deployment's with the tenant as its owner.
    bus = settings_of(client_env(stack.info()), monkeypatch).bus
    assert busio.latest(bus, tenant_topics("payments").specs)["payments.orders"] == TopicSpec(
        name="payments.orders", partitions=2, replicas=2)
    assert busio.latest(bus, stack.topics.specs)["payments.orders"].owner == "payments"
    # A change waits for its own generation (the tenant's record's), not an earlier status of the topic.
    spec.write_text("name: payments.orders\npartitions: 3\nreplicas: 2\n")
    grown = cli(env, "apply", "-f", str(spec), "--wait", "--timeout", str(WAIT_S))
    assert grown.returncode == 0, grown.stdout + grown.stderr
    [status] = [json.loads(line) for line in cli(env, "status", "-o", "json").stdout.splitlines()]
    assert status["topic"] == "payments.orders" and status["ready"] and status["partitions"] == 3, status
    assert status["owner"] == "payments"
    compared = cli(env, "diff", "-f", str(spec))
    assert compared.returncode == 0 and "payments.orders: unchanged" in compared.stdout, compared.stdout + compared.stderr
    described = cli(env, "describe", "payments.orders")
    assert described.returncode == 0, described.stdout + described.stderr
    # An admin's spec for the name takes the tenant's place: the tenant hears of it (no owner), and the same file
    # applied again takes the topic back, rather than being "unchanged" (a walkthrough found it kept the admin's).
    busio.publish(bus, stack.topics.specs, [TopicSpec(name="payments.orders", partitions=3, replicas=3)])
    deadline = time.monotonic() + WAIT_S
    while busio.latest(bus, tenant_topics("payments").status)["payments.orders"].owner is not None:
        assert time.monotonic() < deadline, "the admin's spec never reached the tenant's status topic"
        time.sleep(0.5)
    taken = cli(env, "apply", "-f", str(spec), "--wait", "--timeout", str(WAIT_S))
    assert taken.returncode == 0 and "payments.orders: partitions=3 replicas=2 applied" in taken.stdout, taken.stdout
    taken_back = busio.latest(bus, stack.topics.specs)["payments.orders"]
    assert (taken_back.owner, taken_back.replicas) == ("payments", 2)
    # Kafka refused none of it: not its topics, nor its readers' consumer groups (librdkafka looks for their
    # coordinator though they commit nothing), nor the topics under its prefix it described.
    assert refusals(stack, "User:payments") == []


def refusals(stack: LocalStack, principal: str) -> list[str]:
    """What the brokers' authorizers denied ``principal`` on its own topics (on the bus, and under its names) and on
    any consumer group (its readers use groups of its own)."""
    assert stack.kafka is not None
    own = ("Topic:LITERAL:ballast.tenant.payments.", "Topic:LITERAL:payments.", "Group:")
    return [line for log in stack.kafka.run_dir.glob("*/server.log") for line in log.read_text().splitlines()
            if f"Principal = {principal} is Denied" in line and any(f"resource = {r}" in line for r in own)]


def test_a_tenant_cannot_write_or_read_another_tenants_spec_topic(stack: LocalStack, tmp_path: Path) -> None:
    env = tenant_env(stack, "payments")
    theirs = tenant_topics("search").specs.name
    written = cli(env, "produce", "--topic", theirs, "--no-validate", "--key", "search.x", stdin='{"name": "x"}\n')
    assert written.returncode == 1
    assert written.stderr.strip().splitlines() == [
        f"error: the bus at {env['BALLAST_BUS__BOOTSTRAP_SERVERS']} refused to let 'payments' write {theirs}: "
        "Broker: Topic authorization failed (Kafka's ACLs)"], written.stderr
    # The CLI pointed at the other tenant's topics (BALLAST_TENANT) is refused as it reads them first.
    spec = tmp_path / "x.yaml"
    spec.write_text("name: search.x\npartitions: 1\n")
    posing = cli({**env, "BALLAST_TENANT": "search"}, "apply", "-f", str(spec))
    assert posing.returncode == 1
    assert posing.stderr.strip().splitlines() == [
        f"error: the bus at {env['BALLAST_BUS__BOOTSTRAP_SERVERS']} refused to let 'payments' read {theirs}: "
        "Broker: Topic authorization failed (Kafka's ACLs)"], posing.stderr


def test_a_tenant_cannot_read_another_tenants_statuses(stack: LocalStack, monkeypatch: pytest.MonkeyPatch) -> None:
    env = tenant_env(stack, "payments")
    theirs = tenant_topics("search")
    # A plain client with the tenant's settings: Kafka refuses the topic.
    with pytest.raises(busio.NotAuthorized, match=f"refused to let 'payments' read {theirs.status.name}"):
        busio.latest(settings_of(env, monkeypatch).bus, theirs.status, timeout_s=WAIT_S)
    with pytest.raises(busio.NotAuthorized, match=f"refused to let 'payments' read {theirs.dead_letters.name}"):
        list(busio.consume(settings_of(env, monkeypatch).bus, [theirs.dead_letters.name], follow=False))
    watched = cli({**env, "BALLAST_TENANT": "search"}, "status")
    assert watched.returncode == 1 and f"refused to let 'payments' read {theirs.status.name}" in watched.stderr


def test_only_a_tenant_allowed_rebalances_writes_the_rebalance_requests(stack: LocalStack) -> None:
    request = '{"name": "tenant-rebalance", "mode": "full"}\n'
    refused = cli(tenant_env(stack, "payments"), "produce", "--topic", "ballast.rebalance.requests", stdin=request)
    assert refused.returncode == 1
    assert "refused to let 'payments' write ballast.rebalance.requests" in refused.stderr, refused.stderr
    allowed = cli(tenant_env(stack, "search"), "produce", "--topic", "ballast.rebalance.requests", stdin=request)
    assert allowed.returncode == 0, allowed.stderr
    assert "produced 1 record(s) to ballast.rebalance.requests" in allowed.stdout


def test_ballast_acls_shows_the_plan_then_applies_it_and_leaves_others_acls(stack: LocalStack) -> None:
    kafka = admin(stack)
    payments_specs = tenant_topics("payments").specs.name
    missing = AclBinding(ResourceType.TOPIC, payments_specs, ResourcePatternType.LITERAL, "User:payments", "*",
                         AclOperation.WRITE, AclPermissionType.ALLOW)
    stale = AclBinding(ResourceType.TOPIC, "ballast.rebalance.actions", ResourcePatternType.LITERAL,
                       "User:payments", "*", AclOperation.WRITE, AclPermissionType.ALLOW)
    for future in kafka.create_acls([MONITORING, stale], request_timeout=WAIT_S).values():
        future.result()
    deleting = AclBindingFilter(ResourceType.TOPIC, payments_specs, ResourcePatternType.LITERAL, "User:payments",
                                "*", AclOperation.WRITE, AclPermissionType.ALLOW)
    for future in kafka.delete_acls([deleting], request_timeout=WAIT_S).values():
        future.result()
    env = client_env(stack.info())
    shown = cli(env, "acls")
    assert shown.returncode == 1, shown.stdout + shown.stderr
    lines = shown.stdout.splitlines()
    assert lines[0].endswith("(also the managed cluster): 1 to add, 1 to remove"), shown.stdout
    assert lines[1:] == [f"  + User:payments WRITE topic {payments_specs}",
                         "  - User:payments WRITE topic ballast.rebalance.actions"], shown.stdout
    applied = cli(env, "acls", "--apply", "--yes")
    assert applied.returncode == 0, applied.stdout + applied.stderr
    assert applied.stdout.splitlines()[-1] == "applied: 1 added, 1 removed"
    again = cli(env, "acls")
    assert again.returncode == 0 and again.stdout.strip().endswith("nothing to change"), again.stdout
    every = AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, None, None, AclOperation.ANY,
                             AclPermissionType.ANY)
    now = kafka.describe_acls(every, request_timeout=WAIT_S).result()
    assert MONITORING in now and missing in now and stale not in now
