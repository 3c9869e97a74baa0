"""One secured real Kafka cluster for every module here (SASL_SSL with SCRAM-SHA-512, Kafka's StandardAuthorizer):
started once, as `ballast up --kafka --secure --tenants FILE` starts it, with the topic reconciler (its tenant gate
reading the tenants file) and the replicas-change service. Each tenant below is a user of its own with the ACLs
`ballast acls` plans, and its client settings in the stack's tenants/<name>.env."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator

import pytest

from services.local.stack import LocalStack
from services.local.stack_state import client_env
from tests.integration.conftest import TEST_ENV
from tests.patience import WAIT_S

RACKS = ("/dc1/r1", "/dc1/r2", "/dc2/r1")
# payments and search: what Kafka enforces (test_tenant_acls); team-a and team-b, whose patterns both match
# 'shared.*': what Ballast enforces (test_tenant_gate).
TENANTS = """\
admins: [User:platform]
tenants:
  - name: payments
    principal: User:payments
    topics: {prefixes: ["payments."]}
  - name: search
    principal: User:search
    topics: {prefixes: ["search."]}
    rebalances: true
  - name: team-a
    principal: User:team-a
    topics: {prefixes: [a.], pattern: '^shared\\.'}
    quota: {partitionsPerTopic: 4}
  - name: team-b
    principal: User:team-b
    topics: {prefixes: [b.], pattern: '^shared\\.'}
"""


@pytest.fixture(scope="package")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalStack]:
    run_dir = tmp_path_factory.mktemp("secure")
    tenants = run_dir / "tenants.yaml"
    tenants.write_text(TENANTS)
    local = LocalStack(run_dir, env=TEST_ENV, kafka=True, secure=True, kafka_racks=RACKS,
                       services=("topic-reconciler", "replicas-change"), tenants=tenants)
    try:
        local.start()
        yield local
    finally:
        local.stop()


def tenant_env(stack: LocalStack, tenant: str) -> dict[str, str]:
    """The tenant's .env file, as `env $(cat FILE)` reads it."""
    lines = (stack.tenants_env_dir / f"{tenant}.env").read_text().splitlines()
    return dict(line.split("=", 1) for line in lines if line)


def cli(env: dict[str, str], *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """The CLI as a user runs it, with only these Ballast settings (a tenant's .env, or the stack's client settings:
    the password's file, never the password)."""
    base = {k: v for k, v in os.environ.items() if not k.startswith("BALLAST_")}
    return subprocess.run([sys.executable, "-m", "services.cli", *args], env={**base, **env}, input=stdin,
                          capture_output=True, text=True, timeout=WAIT_S)


def stack_cli(stack: LocalStack, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """The CLI as the stack's own user (Ballast's services' credentials), with ``env`` over its settings."""
    return cli({**client_env(stack.info()), **(env or {})}, *args)
