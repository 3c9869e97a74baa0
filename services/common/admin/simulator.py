"""Cluster-admin adapter for the embedded cluster simulator's admin HTTP API."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import httpx

from events.limits import bounded
from services.common.admin.port import (
    AdminError,
    Assignment,
    BrokerInfo,
    PartitionInfo,
    TopicAlreadyExists,
    TopicDescription,
    UnknownTopic,
)


def _topic(document: dict[str, Any]) -> TopicDescription:
    return TopicDescription(
        name=document["name"],
        partitions=tuple(
            PartitionInfo(id=p["partition"], replicas=tuple(p["replicas"]), leader=p.get("leader"), isr=tuple(p["isr"]),
                          log_dirs=tuple(sorted((int(b), d) for b, d in p.get("logDirs", {}).items())))
            for p in document["partitions"]
        ),
        config=dict(document.get("config", {})),
    )


def _error_text(response: httpx.Response) -> str:
    """The error an answer carries: its JSON ``error``, or the start of whatever body a proxy or server sent."""
    try:
        document = response.json()
    except ValueError:
        document = None
    if isinstance(document, dict) and isinstance(document.get("error"), str):
        return bounded(document["error"])
    return f"HTTP {response.status_code}: {bounded(response.text.strip(), 300) or response.reason_phrase}"


class SimulatorClusterAdmin:
    def __init__(self, base_url: str, *, timeout_s: float = 30.0, transport: httpx.AsyncBaseTransport | None = None):
        self._http = httpx.AsyncClient(base_url=base_url.rstrip("/") + "/admin/", timeout=timeout_s, transport=transport)

    async def _call(self, method: str, path: str, **kwargs: Any) -> Any:
        try:
            response = await self._http.request(method, path, **kwargs)
        except httpx.HTTPError as exc:
            raise AdminError(f"cluster admin unreachable: {type(exc).__name__}: {exc}") from exc
        if response.status_code >= 400:
            error = {404: UnknownTopic, 409: TopicAlreadyExists}.get(response.status_code, AdminError)
            raise error(_error_text(response))
        if not response.content:
            return None
        try:
            return response.json()
        except ValueError as exc:
            raise AdminError(f"cluster admin answered {method} {path} with a body that is not JSON "
                             f"({len(response.content):,} bytes)") from exc

    async def brokers(self) -> list[BrokerInfo]:
        data = await self._call("GET", "brokers")
        return [BrokerInfo(id=b["id"], rack=b.get("rack"), alive=b["alive"]) for b in data["brokers"]]

    async def list_topics(self) -> dict[str, TopicDescription]:
        data = await self._call("GET", "topics")
        return {t["name"]: _topic(t) for t in data["topics"]}

    async def describe_topics(self, names: list[str]) -> dict[str, TopicDescription | None]:
        if not names:
            return {}
        data = await self._call("POST", "topics/describe", json={"names": names})
        found = {t["name"]: _topic(t) for t in data["topics"]}
        return {name: found.get(name) for name in names}

    async def create_topic(
        self, name: str, partitions: int, replication_factor: int, config: dict[str, str] | None = None,
        assignment: Assignment | None = None,
    ) -> None:
        body: dict[str, Any] = {"name": name, "partitions": partitions, "replicationFactor": replication_factor,
                                "config": config or {}}
        if assignment is not None:
            body["assignment"] = [list(r) for r in assignment]
        await self._call("POST", "topics", json=body)

    async def delete_topic(self, name: str) -> None:
        await self._call("DELETE", f"topics/{name}")

    async def create_partitions(self, name: str, total: int, assignment: Assignment | None = None) -> None:
        body: dict[str, Any] = {"total": total}
        if assignment is not None:
            body["assignment"] = [list(r) for r in assignment]
        await self._call("POST", f"topics/{name}/partitions", json=body)

    async def alter_configs(self, name: str, config: dict[str, str]) -> None:
        await self._call("PATCH", f"topics/{name}/config", json={"config": config})

    async def reassign_partitions(self, name: str, replicas: Mapping[int, Sequence[int]]) -> None:
        await self._call("POST", f"topics/{name}/reassign",
                         json={"partitions": {str(p): list(r) for p, r in replicas.items()}})

    async def alter_replica_log_dirs(self, name: str, dirs: Mapping[tuple[int, int], str]) -> None:
        await self._call("POST", f"topics/{name}/log-dirs", json={"replicas": [
            {"partition": p, "broker": b, "logDir": d} for (p, b), d in sorted(dirs.items())]})

    async def aclose(self) -> None:
        await self._http.aclose()
