"""``ballast doctor``: is everything Ballast needs there and ready? The bus and Ballast's topics on it, the managed
cluster's brokers, Cruise Control (answering, and past its warm-up), each service's health page with its role and
backlog, and the optional parts: the throttle controller's health page and the Spark job's latest aggregates. Each
check is one function that never raises (what failed is its detail) and answers within the doctor's deadline: a
part that does not answer in time is ``down`` with "no answer in N s", whatever it is stuck on."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from enum import StrEnum
from functools import partial

import httpx

from events import TOPICS, LoadAggregate
from events.topics import tenant_topics
from services.common import busio
from services.adapters.admin import AdminError
from services.adapters.admin.factory import ask_cluster
from services.common.busio import QUIET, BusUnavailable
from services.adapters.cruise_control import CruiseControlClient, CruiseControlError
from services.adapters.cruise_control.warm_up import SUBSTATES, warming_up
from services.common.settings import Settings, SparkSettings
from services.local.stack_settings import SERVICES  # the services every deployment runs, each with a health page

# How long the doctor waits for any one part, unless told otherwise (`ballast doctor --timeout`).
DEFAULT_TIMEOUT_S = 10.0
# The throttle controller runs where replicas move on a real Kafka (`ballast up --kafka` starts it); not running,
# it is `off`, not a failure.
OPTIONAL_SERVICES = ("throttle",)


class Health(StrEnum):
    OK = "ok"
    DEGRADED = "degraded"  # answers, but not ready (warming up, an agent down, brokers down, aggregates stale)
    DOWN = "down"  # does not answer
    OFF = "off"  # an optional part that is not running: said, not a failure


@dataclass(frozen=True)
class Check:
    name: str
    health: Health
    detail: str
    address: str = ""

    def document(self) -> dict[str, str]:
        return {k: str(v) for k, v in asdict(self).items()}


def healthy(checks: list[Check]) -> bool:
    """Everything that runs is ready (`ballast doctor`'s exit 0)."""
    return all(c.health in (Health.OK, Health.OFF) for c in checks)


def not_ready(checks: list[Check]) -> list[str]:
    """What keeps the doctor from its exit 0, each as ``name (health)``."""
    return [f"{c.name} ({c.health})" for c in checks if c.health not in (Health.OK, Health.OFF)]


def wait_until_healthy(look: Callable[[], list[Check]], wait_s: float, on_wait: Callable[[list[str]], None], *,
                       every_s: float = 5.0, clock: Callable[[], float] = time.monotonic,
                       sleep: Callable[[float], None] = time.sleep) -> list[Check]:
    """``look`` again every ``every_s`` until everything that runs is ready or ``wait_s`` has passed; the last checks
    either way (`ballast doctor --wait`: a stack just started answers part by part). ``on_wait`` hears what is not
    ready yet whenever that changes, so a long wait says what it waits for without repeating itself."""
    deadline = clock() + wait_s
    said: list[str] | None = None
    while True:
        checks = look()
        if healthy(checks) or clock() >= deadline:
            return checks
        if (waiting := not_ready(checks)) != said:
            on_wait(waiting)
            said = waiting
        sleep(max(0.0, min(every_s, deadline - clock())))


def bus(settings: Settings, timeout_s: float) -> Check:
    from confluent_kafka.admin import AdminClient

    address = settings.bus.bootstrap_servers
    try:
        # Quiet: librdkafka's own log of a broker it cannot reach repeats the one line said here, many times a second.
        present = set(AdminClient({**settings.bus.confluent_config(), **QUIET}).list_topics(timeout=timeout_s).topics)
    except Exception as exc:  # noqa: BLE001 -- librdkafka reports unreachable brokers in several ways
        return Check("bus", Health.DOWN, f"no broker answered: {exc}", address)
    if settings.tenant is not None:
        # A tenant sees only its own topics (Kafka's ACLs): the deployment's would all look missing.
        mine = tenant_topics(settings.tenant, settings.cluster).all()
        if missing := sorted(t.name for t in mine if t.name not in present):
            return Check("bus", Health.DEGRADED, f"topics of tenant {settings.tenant!r} missing: {', '.join(missing)} "
                                                 "(an admin's `ballast init-bus` makes them, with the tenants file)",
                         address)
        return Check("bus", Health.OK, f"all {len(mine)} topics of tenant {settings.tenant!r} present", address)
    missing = sorted(t.name for t in TOPICS.all() if t.name not in present)
    if missing:
        return Check("bus", Health.DEGRADED, f"Ballast's topics missing: {', '.join(missing)} (`ballast init-bus` "
                                             "makes them, as every service does when it starts)", address)
    return Check("bus", Health.OK, f"all {len(TOPICS.all())} Ballast topics present", address)


def cluster(settings: Settings, timeout_s: float) -> Check:
    admin_settings = settings.cluster_admin.model_copy(update={"timeout_s": timeout_s})
    try:
        found = ask_cluster(admin_settings, lambda admin: admin.brokers())
    except AdminError as exc:
        return Check("cluster", Health.DOWN, f"the cluster admin did not answer: {exc}", _cluster_address(settings))
    down = sorted(b.id for b in found if not b.alive)
    detail = f"{len(found) - len(down)} of {len(found)} brokers alive"
    return Check("cluster", Health.DEGRADED if down or not found else Health.OK,
                 detail + (f" (down: {', '.join(map(str, down))})" if down else ""), _cluster_address(settings))


def cruise_control(settings: Settings, timeout_s: float = DEFAULT_TIMEOUT_S,
                   transport: httpx.AsyncBaseTransport | None = None) -> Check:
    """``transport``: the test seam (httpx's)."""
    address = settings.cruise_control.base_url
    answering = settings.cruise_control.model_copy(update={"timeout_s": timeout_s})

    async def state():
        async with CruiseControlClient(answering, transport=transport) as client:
            return await client.state(f"executor,{SUBSTATES}")

    try:
        answer = asyncio.run(state())
    except CruiseControlError as exc:
        return Check("cruise-control", Health.DOWN, exc.message, address)
    if reason := warming_up(answer):
        return Check("cruise-control", Health.DEGRADED, f"answers, but not ready: {reason}", address)
    executor = answer.executor.state if answer.executor is not None else "unknown"
    return Check("cruise-control", Health.OK, f"ready (executor {executor})", address)


def service(settings: Settings, name: str, timeout_s: float, *, optional: bool = False) -> Check:
    """The service's health page (the active instance, or a standby) and its backlog from /metrics. An optional one
    that nothing listens for is ``off``."""
    address = _web_address(settings, name)
    try:
        with httpx.Client(base_url=address, timeout=timeout_s) as http:
            health = http.get("/health")
            metrics = http.get("/metrics").text if health.status_code in (200, 503) else ""
    except httpx.ConnectError as exc:
        if optional:
            return Check(name, Health.OFF, f"not running (optional: `ballast run {name}` starts it)", address)
        return Check(name, Health.DOWN, f"no answer: {exc}", address)
    except httpx.TimeoutException:
        return Check(name, Health.DOWN, f"no answer in {timeout_s:g} s", address)
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


def spark_job(settings: Settings, timeout_s: float) -> Check:
    """The Spark job has no health page of its own: what it writes tells (``aggregates_health``)."""
    where = TOPICS.load_aggregates.name
    try:
        aggregates = busio.latest(settings.bus, TOPICS.load_aggregates, timeout_s=timeout_s).values()
    except BusUnavailable as exc:
        return Check("spark-aggregates", Health.DOWN, f"cannot read {where}: {exc}", where)
    return Check("spark-aggregates", *aggregates_health(aggregates, settings.spark, datetime.now(UTC)), where)


def aggregates_health(aggregates: Iterable[LoadAggregate], spark: SparkSettings, now: datetime
                      ) -> tuple[Health, str]:
    """The Spark job's health from its newest window: ended within a window, the watermark and three slides of now
    (the job emits a window once the watermark has passed it); none at all is a job that does not run (optional)."""
    newest = max((a.window_end for a in aggregates), default=None)
    if newest is None:
        return Health.OFF, ("no load aggregates on the bus: the job is not running (optional: `ballast run "
                            "spark-aggregates`), or has not closed its first window yet")
    age = (now - newest).total_seconds()
    fresh = spark.window_s + spark.watermark_s + 3 * spark.slide_s
    # A sliding window is emitted once the watermark passes it, which may be before its end.
    said = (f"newest window ends {newest:%H:%M:%S} UTC (in {-age:,.0f} s)" if age < 0
            else f"newest window ended {newest:%H:%M:%S} UTC ({age:,.0f} s ago)")
    if age > fresh:
        return Health.DEGRADED, f"{said}, more than {fresh} s: is the job running, and the load collector sampling?"
    return Health.OK, said


def examine(settings: Settings, timeout_s: float = DEFAULT_TIMEOUT_S) -> list[Check]:
    """Every check at once, each within ``timeout_s``: a part that is slow to answer (a busy machine, a broker timing
    out) costs its own wait, not the sum of everyone's; one that does not answer at all (a frozen process) is said to
    be down when the time is up, whatever its client is still waiting for."""
    checks: list[tuple[str, str, Callable[[], Check]]] = [
        ("bus", settings.bus.bootstrap_servers, partial(bus, settings, timeout_s)),
        ("cluster", _cluster_address(settings), partial(cluster, settings, timeout_s)),
        ("cruise-control", settings.cruise_control.base_url, partial(cruise_control, settings, timeout_s)),
        *((name, _web_address(settings, name), partial(service, settings, name, timeout_s)) for name in SERVICES),
        *((name, _web_address(settings, name), partial(service, settings, name, timeout_s, optional=True))
          for name in OPTIONAL_SERVICES),
        # The load aggregates are the deployment's: not a tenant's to read.
        *((("spark-aggregates", TOPICS.load_aggregates.name, partial(spark_job, settings, timeout_s)),)
          if settings.tenant is None else ()),
    ]
    results: dict[str, Check] = {}

    def run(name: str, address: str, check: Callable[[], Check]) -> None:
        # A check says what failed rather than raising; but one still running past its deadline can be cut off by
        # the process's exit (`--wait` leaves such threads behind for minutes), and its traceback would only confuse.
        try:
            results[name] = check()
        except Exception as exc:  # noqa: BLE001 -- whatever it was, the part did not answer
            results[name] = Check(name, Health.DOWN, f"no answer: {exc}", address)

    # Daemon threads: one stuck on a frozen peer must not keep the command from exiting.
    threads = [threading.Thread(target=run, args=(name, address, check), daemon=True)
               for name, address, check in checks]
    for thread in threads:
        thread.start()
    # A moment past the parts' own timeouts, for their clients to say what they saw first.
    deadline = time.monotonic() + timeout_s + 2.0
    for thread in threads:
        thread.join(max(0.0, deadline - time.monotonic()))
    return [results.get(name) or Check(name, Health.DOWN, f"no answer in {timeout_s:g} s", address)
            for name, address, _ in checks]


def _web_address(settings: Settings, name: str) -> str:
    host = "127.0.0.1" if settings.web_host in ("0.0.0.0", "::") else settings.web_host
    return f"http://{host}:{getattr(settings.ports, name.replace('-', '_'))}"


def _cluster_address(settings: Settings) -> str:
    admin = settings.cluster_admin
    return admin.simulator_url if admin.kind == "simulator" else admin.bootstrap_servers


def table(checks: list[Check]):
    from rich.table import Table

    colour = {Health.OK: "green", Health.DEGRADED: "yellow", Health.DOWN: "red", Health.OFF: "dim"}
    out = Table(title="Ballast")
    for column in ("check", "health", "detail", "address"):
        out.add_column(column, overflow="fold")
    for c in checks:
        out.add_row(c.name, f"[{colour[c.health]}]{c.health}[/{colour[c.health]}]", c.detail, c.address)
    return out
