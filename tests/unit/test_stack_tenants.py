"""Tenants on the local stack (issue 53): each tenant a SCRAM user of its own, and its client settings in a file
that names its password's file, never the password."""

from __future__ import annotations

from pathlib import Path

import pytest

from services.domain.tenants import Tenant, Tenants
from services.local.kafka_security import LocalSecurity
from services.local.stack_tenants import client_settings, user_of, users, write_client_settings


def tenant(name: str, principal: str) -> Tenant:
    return Tenant.model_validate({"name": name, "principal": principal, "topics": {"prefixes": [f"{name}."]}})


def test_a_tenant_is_the_user_its_principal_names() -> None:
    assert users(Tenants(tenants=[tenant("payments", "User:payments"), tenant("search", "User:search-team")])) == (
        "payments", "search-team")


@pytest.mark.parametrize("principal, why", [
    ("Group:payments", "must be User:NAME"),
    ("User:CN=payments,O=acme", "must be User:NAME"),
    ("User:ballast", "one of the stack's own users"),
    ("User:admin", "one of the stack's own users"),
])
def test_a_principal_the_local_stack_cannot_make_is_refused(principal: str, why: str) -> None:
    with pytest.raises(ValueError, match=why):
        user_of(tenant("payments", principal))


def test_a_tenants_client_settings_are_its_own_user_acting_as_the_tenant(tmp_path: Path) -> None:
    security = LocalSecurity.make(tmp_path, users=("admin", "ballast", "payments"))
    client = {"BALLAST_BUS__BOOTSTRAP_SERVERS": "127.0.0.1:9", "BALLAST_BUS__SASL_USERNAME": "ballast",
              "BALLAST_TENANTS_FILE": "/x/tenants.yaml", "BALLAST_CLUSTER_ADMIN__KIND": "kafka"}
    settings = client_settings(client, security, tenant("payments", "User:payments"))
    assert settings["BALLAST_TENANT"] == "payments"
    assert settings["BALLAST_BUS__SASL_USERNAME"] == settings["BALLAST_CLUSTER_ADMIN__SASL_USERNAME"] == "payments"
    assert settings["BALLAST_BUS__SASL_PASSWORD_FILE"] == str(security.password_file("payments"))
    assert "BALLAST_TENANTS_FILE" not in settings and settings["BALLAST_BUS__BOOTSTRAP_SERVERS"] == "127.0.0.1:9"
    [written] = write_client_settings(tmp_path / "tenants", {"payments": settings})
    text = written.read_text()
    assert "BALLAST_TENANT=payments\n" in text and security.password("payments") not in text


def test_a_tenant_no_longer_named_loses_its_file(tmp_path: Path) -> None:
    write_client_settings(tmp_path, {"payments": {"BALLAST_TENANT": "payments"}, "search": {"BALLAST_TENANT": "x"}})
    write_client_settings(tmp_path, {"payments": {"BALLAST_TENANT": "payments"}})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["payments.env"]
