"""`ballast acls`: what Kafka enforces for the tenants file (services/domain/acls.py), shown as changes to the
clusters' ACLs, and made with --apply."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any

import typer
from rich.markup import escape

from services.cli.output import confirm, console, err, fail
from services.common.settings import Settings, get_settings


@dataclass(frozen=True)
class Target:
    """One cluster the plan's bindings go on: the bus, and the managed cluster where it is another."""

    where: str
    config: dict[str, Any]
    planned: frozenset  # of Binding


def targets(settings: Settings, acls: Any) -> list[Target]:
    """The bus gets the bus's bindings; the managed cluster its own, on the bus when it is the same cluster. A
    simulated managed cluster has no ACLs: its bindings are left out (said)."""
    from services.common.busio import client_config

    bus_config, _ = client_config(settings.bus)
    admin = settings.cluster_admin
    if admin.kind != "kafka":
        err.print("[yellow]note:[/yellow] the managed cluster is the simulator: only the bus's ACLs", soft_wrap=True)
        return [Target(f"the bus at {settings.bus.bootstrap_servers}", bus_config, acls.bus)]
    if admin.bootstrap_servers == settings.bus.bootstrap_servers:
        return [Target(f"the bus at {settings.bus.bootstrap_servers}", bus_config, acls.bus | acls.cluster)]
    cluster_config = {"bootstrap.servers": admin.bootstrap_servers, **admin.librdkafka(), "log_level": 0}
    return [Target(f"the bus at {settings.bus.bootstrap_servers}", bus_config, acls.bus),
            Target(f"the managed cluster at {admin.bootstrap_servers}", cluster_config, acls.cluster)]


def acls(
    apply: Annotated[bool, typer.Option("--apply", help="make the changes shown (after asking)")] = False,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="with --apply: do not ask for confirmation")] = False,
) -> None:
    """Show the ACLs the tenants file asks for, as changes to the clusters' ACLs; --apply makes them.

    Each tenant may write its own spec topic and read its own status and dead-letter topics; only the admins and
    the tenants allowed rebalances write the rebalance topics; Ballast's services (BALLAST_SERVICE_PRINCIPAL) get
    what they need. Only Ballast's bindings are removed: those of the file's principals on resources Ballast grants,
    and those on a removed tenant's topics; every other ACL stays (docs/teams.md). Exit 0: nothing to change (or
    changed), 1: changes shown, not made, 2: no tenants file, or it is not one."""
    from services.common.admin import AdminError
    from services.common.admin.acls import KafkaAcls
    from services.domain.acls import changes, ours, plan
    from services.domain.tenants import TenantsError, load_tenants

    settings = get_settings()
    if settings.tenants_file is None:
        raise fail("no tenants file: set BALLAST_TENANTS_FILE (docs/teams.md)", 2)
    try:
        tenants = load_tenants(settings.tenants_file)
    except TenantsError as exc:
        raise fail(str(exc), 2) from None
    scope = {"service": settings.service_principal, "cluster": settings.cluster,
             "probe_topic": settings.throttle.latency_probe_topic}
    planned = plan(tenants, **scope)  # type: ignore[arg-type]
    found = []
    try:
        for target in targets(settings, planned):
            cluster = KafkaAcls(target.config, target.where, settings.bus.answer_timeout_s)
            found.append((target, cluster, changes(target.planned, cluster.bindings(),
                                                   lambda b: ours(b, tenants, **scope))))  # type: ignore[arg-type]
    except AdminError as exc:
        raise fail(f"cannot read the ACLs of {exc}") from None
    for target, _, change in found:
        console.print(f"{escape(target.where)}: " + (f"{len(change.add)} to add, {len(change.remove)} to remove"
                                                   if change else "nothing to change"), soft_wrap=True)
        for binding in change.add:
            console.print(f"  [green]+ {escape(binding.line())}[/green]", soft_wrap=True)
        for binding in change.remove:
            console.print(f"  [red]- {escape(binding.line())}[/red]", soft_wrap=True)
    if not any(change for _, _, change in found):
        return
    if not apply:
        raise typer.Exit(1)
    confirm(yes, "no ACL changed")
    try:
        for target, cluster, change in found:
            cluster.create(change.add)
            cluster.delete(change.remove)
    except AdminError as exc:
        raise fail(f"cannot change the ACLs of {exc}") from None
    console.print(f"applied: {sum(len(c.add) for _, _, c in found)} added, "
                  f"{sum(len(c.remove) for _, _, c in found)} removed")
