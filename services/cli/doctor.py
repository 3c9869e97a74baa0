"""``ballast doctor``: is everything Ballast needs there and ready? The bus and Ballast's topics on it, the managed
cluster's brokers, Cruise Control (answering, and past its warm-up), and each service's health page with its role
and backlog. Each check is one function that never raises: what failed is its detail."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from enum import StrEnum
from functools import partial

import httpx

from events import TOPICS
from services.common.admin import AdminError
from services.common.admin.factory import ask_cluster
from services.common.cruise_control import CruiseControlClient, CruiseControlError
from services.common.cruise_control.warm_up import SUBSTATES, warming_up
from services.common.settings import Settings
from services.local.stack import SERVICES  # the services with a health page


class Health(StrEnum):
    OK = "ok"
    DEGRADED = "degraded"  # answers, but not ready (warming up, an agent down, brokers down)
    DOWN = "down"  # does not answer


@dataclass(frozen=True)
class Check:
    name: str
    health: Health
    detail: str
    address: str = ""

    def document(self) -> dict[str, str]:
        return {k: str(v) for k, v in asdict(self).items()}


def bus(settings: Settings) -> Check:
    from confluent_kafka.admin import AdminClient

    address = settings.bus.bootstrap_servers
    try:
        present = set(AdminClient(settings.bus.confluent_config()).list_topics(
            timeout=settings.bus.answer_timeout_s).topics)
    except Exception as exc:  # noqa: BLE001 -- librdkafka reports unreachable brokers in several ways
        return Check("bus", Health.DOWN, f"no broker answered: {exc}", address)
    missing = sorted(t.name for t in TOPICS.all() if t.name not in present)
    if missing:
        return Check("bus", Health.DEGRADED, f"Ballast's topics missing: {', '.join(missing)} (`ballast init-bus` "
                                             "makes them, as every service does when it starts)", address)
    return Check("bus", Health.OK, f"all {len(TOPICS.all())} Ballast topics present", address)


def cluster(settings: Settings) -> Check:
    try:
        found = ask_cluster(settings.cluster_admin, lambda admin: admin.brokers())
    except AdminError as exc:
        return Check("cluster", Health.DOWN, f"the cluster admin did not answer: {exc}")
    down = sorted(b.id for b in found if not b.alive)
    detail = f"{len(found) - len(down)} of {len(found)} brokers alive"
    return Check("cluster", Health.DEGRADED if down or not found else Health.OK,
                 detail + (f" (down: {', '.join(map(str, down))})" if down else ""))


def cruise_control(settings: Settings, transport: httpx.AsyncBaseTransport | None = None) -> Check:
    """``transport``: the test seam (httpx's)."""
    address = settings.cruise_control.base_url

    async def state():
        async with CruiseControlClient(settings.cruise_control, transport=transport) as client:
            return await client.state(f"executor,{SUBSTATES}")

    try:
        answer = asyncio.run(state())
    except CruiseControlError as exc:
        return Check("cruise-control", Health.DOWN, exc.message, address)
    if reason := warming_up(answer):
        return Check("cruise-control", Health.DEGRADED, f"answers, but not ready: {reason}", address)
    executor = answer.executor.state if answer.executor is not None else "unknown"
    return Check("cruise-control", Health.OK, f"ready (executor {executor})", address)


def service(settings: Settings, name: str) -> Check:
    """The service's health page (the active instance, or a standby) and its backlog from /metrics."""
    host = "127.0.0.1" if settings.web_host in ("0.0.0.0", "::") else settings.web_host
    address = f"http://{host}:{getattr(settings.ports, name.replace('-', '_'))}"
    try:
        with httpx.Client(base_url=address, timeout=settings.bus.answer_timeout_s) as http:
            health = http.get("/health")
            metrics = http.get("/metrics").text if health.status_code in (200, 503) else ""
    except httpx.HTTPError as exc:
        return Check(name, Health.DOWN, f"no answer: {exc}", address)
    try:
        info = health.json()
    except ValueError:
        return Check(name, Health.DOWN, f"{health.status_code} without a health document", address)
    backlog = sum(float(line.rsplit(" ", 1)[1]) for line in metrics.splitlines()
                  if line.startswith("ballast_consumer_backlog{"))
    role = {"active": "active (holds the lease)"}.get(info.get("role", "?"), info.get("role", "?"))
    detail = f"{role}, backlog {backlog:,.0f} record(s)"
    if "shards" in info:
        detail += f", shards {info['shards']} of {info.get('ofShards', '?')}"
    if down := info.get("agentsDown"):
        detail += f", agents down: {', '.join(down)}"
    return Check(name, Health.OK if health.status_code == 200 else Health.DEGRADED, detail, address)


def examine(settings: Settings) -> list[Check]:
    checks = [partial(bus, settings), partial(cluster, settings), partial(cruise_control, settings),
              *(partial(service, settings, name) for name in SERVICES)]
    # All at once: a part that is slow to answer (a busy machine, a broker timing out) costs its own wait, not the
    # sum of everyone's (one by one, a loaded machine took over two minutes).
    with ThreadPoolExecutor(len(checks)) as pool:
        return list(pool.map(lambda check: check(), checks))


def table(checks: list[Check]):
    from rich.table import Table

    colour = {Health.OK: "green", Health.DEGRADED: "yellow", Health.DOWN: "red"}
    out = Table(title="Ballast")
    for column in ("check", "health", "detail", "address"):
        out.add_column(column, overflow="fold")
    for c in checks:
        out.add_row(c.name, f"[{colour[c.health]}]{c.health}[/{colour[c.health]}]", c.detail, c.address)
    return out
