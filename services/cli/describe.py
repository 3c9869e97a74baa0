"""``ballast describe TOPIC``: one topic as the cluster has it (partitions, replicas with their racks and log
directories, cordoned ones marked, leader, in-sync replicas, placeholders) beside what its spec asks and what its status says.

The cluster side comes through the cluster-admin port, so it reads the same on the simulator and on Kafka."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rich.console import Group, RenderableType
from rich.table import Table

from events import TOPICS, PlaceholderRecord, TopicSpec, TopicStatus
from events import placeholders as placeholder
from services.common.wording import change_text, status_notes
from services.common import busio
from services.adapters.admin import AdminError, ClusterAdmin, OperationRefused
from services.adapters.admin.factory import ask_cluster
from services.adapters.admin.port import TopicDescription
from services.common.cordons import read_cordons
from services.domain.cordons import Cordons
from services.common.settings import Settings
from services.cli.tenancy import spec_topics


@dataclass(frozen=True)
class TopicView:
    name: str
    spec: TopicSpec | None
    status: TopicStatus | None
    actual: TopicDescription | None
    placeholders: PlaceholderRecord | None
    # The cordoned log directories of the brokers its replicas are on (KIP-1066): they take no new replica.
    cordons: Cordons = Cordons()

    def cordoned(self, broker: int, log_dir: str | None) -> bool:
        """Whether the replica's directory is cordoned (or, where it is not known, its whole broker)."""
        if log_dir is None:
            return broker in self.cordons.fully_cordoned
        return log_dir in self.cordons.cordoned.get(broker, frozenset())

    @property
    def exists(self) -> bool:
        return self.actual is not None or self.spec is not None or self.status is not None


def gather(settings: Settings, name: str) -> TopicView:
    """Everything known of ``name``: the cluster's description (AdminError when the cluster cannot be asked) and the
    latest spec, status and placeholder record on the bus."""
    async def describe(admin: ClusterAdmin) -> tuple[TopicDescription | None, Cordons]:
        actual = (await admin.describe_topics([name])).get(name)
        brokers = sorted({b for p in actual.partitions for b in p.replicas}) if actual is not None else []
        try:
            cordons = await read_cordons(admin, brokers) if brokers else Cordons()
        except OperationRefused:  # a tenant, not allowed to describe the brokers' directories
            cordons = Cordons()
        return actual, cordons

    actual, cordons = ask_cluster(settings.cluster_admin, describe)
    spec = busio.latest(settings.bus, spec_topics(settings).specs, timeout_s=10).get(name)
    status = busio.latest(settings.bus, spec_topics(settings).status, timeout_s=10).get(name)
    # A tenant may not read Ballast's placement records (they name every tenant's topics): no placeholders shown.
    record = (busio.latest(settings.bus, TOPICS.placeholders, timeout_s=10).get(name) if settings.tenant is None
              else None)
    return TopicView(name=name, spec=spec if isinstance(spec, TopicSpec) else None,
                     status=status if status is not None and not status.deleted else None, actual=actual,
                     placeholders=record if isinstance(record, PlaceholderRecord) and not record.filled else None,
                     cordons=cordons)


def _waiting(view: TopicView) -> dict[int, tuple[int, list[int]]]:
    """Partition -> (placeholders still in it, the brokers intended for them)."""
    record = view.placeholders
    if record is None:
        return {}
    return {index: (count, record.intended.get(index, []))
            for index, replicas in enumerate(record.assignment)
            if (count := len(replicas) - len(placeholder.real(replicas)))}


def document(view: TopicView) -> dict[str, Any]:
    """The view for scripts: one JSON / YAML document."""
    waiting = _waiting(view)
    cluster = None
    if view.actual is not None:
        cluster = {"partitions": view.actual.partition_count, "replicationFactor": view.actual.replication_factor,
                   "config": view.actual.config, "partitionDetails": [
                       {"partition": p.id, "leader": p.leader, "replicas": list(p.replicas), "isr": list(p.isr),
                        "offline": list(p.offline),
                        "replicaDetails": [{"broker": r.broker, "rack": r.rack, "logDir": r.log_dir,
                                            "futureLogDir": r.future_log_dir,
                                            "cordoned": view.cordoned(r.broker, r.log_dir)} for r in p.replica_info],
                        **({"placeholders": waiting[p.id][0], "intendedBrokers": waiting[p.id][1]}
                           if p.id in waiting else {})}
                       for p in view.actual.partitions]}
    return {"topic": view.name,
            "spec": view.spec.model_dump(mode="json", by_alias=True, exclude_none=True) if view.spec else None,
            "status": view.status.model_dump(mode="json", by_alias=True, exclude_none=True) if view.status else None,
            "cluster": cluster}


def _config_rows(view: TopicView) -> list[tuple[str, str, str]]:
    wanted = view.spec.config if view.spec else {}
    actual = view.actual.config if view.actual else {}
    return [(f"config {key}", wanted.get(key, "-"), actual.get(key, "(default)" if view.actual else "-"))
            for key in sorted({*wanted, *actual})]


def _count(value: int | None) -> str:
    return str(value) if value is not None else "(the cluster's)"


def side_by_side(view: TopicView) -> Table:
    table = Table(title=f"Topic {view.name}", title_justify="left")
    for column in ("", "spec", "cluster", "status"):
        table.add_column(column, overflow="fold")
    spec, actual, status = view.spec, view.actual, view.status
    ready = "-" if status is None else ("ready" if status.ready else "not ready")
    table.add_row("partitions", _count(spec.partitions) if spec else "-",
                  str(actual.partition_count) if actual else "(no such topic)", ready)
    table.add_row("replicas", _count(spec.replicas) if spec else "-", str(actual.replication_factor) if actual else "-",
                  change_text(status) if status and status.replicas_change else "")
    if spec is not None:
        table.add_row("placer", spec.placer or "(the setting's)", "", "")
    for key, wanted, has in _config_rows(view):
        table.add_row(key, wanted, has, "")
    if status is not None:
        for note in status_notes(status):
            table.add_row("note", "", "", note)
        if status.origin:
            table.add_row("owned", "", "", status.origin)
    elif spec is None:
        table.add_row("managed", "no spec: Ballast does not manage this topic", "", "")
    return table


def partitions_table(view: TopicView) -> Table:
    assert view.actual is not None
    waiting = _waiting(view)
    table = Table(title="Partitions", title_justify="left")
    for column in ("partition", "leader", "replicas (broker rack log dir)", "in sync", "offline / placeholders"):
        table.add_column(column, overflow="fold")
    for p in view.actual.partitions:
        info = {r.broker: r for r in p.replica_info}
        replicas = []
        for broker in p.replicas:
            r = info.get(broker)
            where = " ".join(x for x in (r.rack if r else None, r.log_dir if r else None) if x)
            moving = f" -> {r.future_log_dir}" if r and r.future_log_dir else ""
            cordoned = " (cordoned)" if view.cordoned(broker, r.log_dir if r else None) else ""
            replicas.append(f"{broker} {where}{moving}".rstrip() + cordoned)
        missing = [f"offline {','.join(map(str, p.offline))}"] if p.offline else []
        if p.id in waiting:
            count, intended = waiting[p.id]
            missing.append(f"{count} placeholder(s)" + (f" for broker {','.join(map(str, intended))}"
                                                        if intended else ""))
        table.add_row(str(p.id), str(p.leader) if p.leader is not None else "none", "\n".join(replicas),
                      ",".join(map(str, p.isr)) or "-", "; ".join(missing) or "-")
    return table


def render(view: TopicView) -> RenderableType:
    parts: list[RenderableType] = [side_by_side(view)]
    if view.actual is not None:
        parts.append(partitions_table(view))
    return Group(*parts)


__all__ = ["AdminError", "TopicView", "document", "gather", "render"]
