"""`ballast acls`: what Kafka enforces for the tenants file (services/domain/acls.py), shown as changes to the
clusters' ACLs, and made with --apply."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.markup import escape

from services.cli.output import confirm, console, err, fail
from services.common.settings import get_settings


def acls(
    apply: Annotated[bool, typer.Option("--apply", help="make the changes shown (after asking)")] = False,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="with --apply: do not ask for confirmation")] = False,
) -> None:
    """Show the ACLs the tenants file asks for, as changes to the clusters' ACLs; --apply makes them.

    Each tenant may write its own spec topic and read its own status and dead-letter topics; only the admins and
    the tenants allowed rebalances write the rebalance topics; Ballast's services (BALLAST_SERVICE_PRINCIPAL) get
    what they need. Only Ballast's bindings are removed: those of the file's principals on resources Ballast grants,
    and those on a removed tenant's topics; every other ACL stays (docs/teams.md). Exit 0: nothing to change (or
    changed), 1: changes shown and not made, 2: no tenants file, or it is not one."""
    from services.adapters.admin import AdminError
    from services.adapters.admin.acls import make, pending
    from services.domain.tenants import TenantsError, load_tenants

    settings = get_settings()
    if settings.tenant is not None:
        # Kafka lets no tenant describe the cluster's ACLs: its empty answer would read as every binding missing.
        raise fail(f"`ballast acls` is an admin's command, and these settings act as tenant {settings.tenant!r} "
                   "(BALLAST_TENANT): run it with the admin's settings (docs/teams.md)", 2)
    if settings.tenants_file is None:
        raise fail("no tenants file: set BALLAST_TENANTS_FILE (docs/teams.md)", 2)
    try:
        tenants = load_tenants(settings.tenants_file)
    except TenantsError as exc:
        raise fail(str(exc), 2) from None
    try:
        found, note = pending(settings, tenants)
    except AdminError as exc:
        raise fail(f"cannot read the ACLs of {exc}") from None
    if note:
        err.print(f"[yellow]note:[/yellow] {escape(note)}", soft_wrap=True)
    for each in found:
        change = each.changes
        console.print(f"{escape(each.where)}: " + (f"{len(change.add)} to add, {len(change.remove)} to remove"
                                                 if change else "nothing to change"), soft_wrap=True)
        for binding in change.add:
            console.print(f"  [green]+ {escape(binding.line())}[/green]", soft_wrap=True)
        for binding in change.remove:
            console.print(f"  [red]- {escape(binding.line())}[/red]", soft_wrap=True)
    if not any(each.changes for each in found):
        return
    if not apply:
        raise typer.Exit(1)
    confirm(yes, "no ACL changed")
    try:
        make(found)
    except AdminError as exc:
        raise fail(f"cannot change the ACLs of {exc}") from None
    console.print(f"applied: {sum(len(e.changes.add) for e in found)} added, "
                  f"{sum(len(e.changes.remove) for e in found)} removed")
