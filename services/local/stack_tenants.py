"""Tenants on the local stack (issue 53, `ballast up --kafka --secure --tenants FILE`): each tenant of the tenants
file a SCRAM-SHA-512 user of the cluster (never a super user: Kafka's ACLs decide what it may do), its bus topics made
with Ballast's, the ACL plan applied once the cluster is up, and each tenant's client settings in a file of its own,
``<name>.env``, so that ``env $(cat payments.env) ballast apply -f ...`` acts as that tenant. As the stack's own client
settings, they name the password's file (readable by its owner only), never the password."""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

from services.local.kafka_security import ADMIN, SERVICES, LocalSecurity
from services.domain.tenants import Tenant, Tenants

# A SCRAM user the local stack makes: its name is in a file name (its password's) and on StorageTool's command line.
_USER = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


def user_of(tenant: Tenant) -> str:
    """The SCRAM user of ``tenant``'s principal (``User:NAME``); ValueError for any other kind, which the local
    stack cannot make."""
    kind, _, name = tenant.principal.partition(":")
    if kind != "User" or not _USER.match(name):
        raise ValueError(f"tenant {tenant.name!r}: the local stack makes each tenant a SCRAM user, so its principal "
                         f"must be User:NAME (letters, digits, '.', '_', '-'), not {tenant.principal!r}")
    if name in (ADMIN, SERVICES):
        raise ValueError(f"tenant {tenant.name!r}: {tenant.principal} is one of the stack's own users (a super "
                         "user): give the tenant a principal of its own")
    return name


def users(tenants: Tenants) -> tuple[str, ...]:
    return tuple(user_of(t) for t in tenants.tenants)


def client_settings(client: Mapping[str, str], security: LocalSecurity | None, tenant: Tenant) -> dict[str, str]:
    """``tenant``'s client settings: the stack's (``client``: where the bus and the cluster are) as the tenant's own
    user, acting as the tenant (BALLAST_TENANT)."""
    settings = {k: v for k, v in client.items() if k != "BALLAST_TENANTS_FILE"}
    if security is not None:
        user = user_of(tenant)
        settings.update({**security.settings_env("BUS", user), **security.settings_env("CLUSTER_ADMIN", user)})
    return {**settings, "BALLAST_TENANT": tenant.name}


def client_settings_file(directory: Path, tenant: str) -> Path:
    return directory / f"{tenant}.env"


def read_client_settings(path: Path) -> dict[str, str]:
    """A tenant's settings as ``write_client_settings`` wrote them (and ``env $(cat FILE)`` reads them)."""
    return dict(line.split("=", 1) for line in path.read_text().splitlines() if "=" in line)


def write_client_settings(directory: Path, settings: Mapping[str, Mapping[str, str]]) -> list[Path]:
    """One ``<tenant>.env`` per tenant (KEY=VALUE lines, for ``env $(cat FILE)``); the files of tenants no longer
    named are removed."""
    directory.mkdir(parents=True, exist_ok=True)
    for stale in directory.glob("*.env"):
        if stale.stem not in settings:
            stale.unlink()
    written = []
    for name, env in settings.items():
        path = client_settings_file(directory, name)
        path.write_text("".join(f"{key}={value}\n" for key, value in sorted(env.items())))
        written.append(path)
    return written
