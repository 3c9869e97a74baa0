"""Cluster-admin adapter for the embedded cluster simulator's admin HTTP API."""

from __future__ import annotations

import sys

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

import httpx

from events.limits import bounded
from services.adapters.admin.port import (
    AdminError,
    Assignment,
    BrokerInfo,
    ClusterUnavailable,
    LogDirInfo,
    LogDirReplica,
    NewTopic,
    OperationRefused,
    PartitionInfo,
    Reassignment,
    ReplicaInfo,
    replica_on,
    TopicAlreadyExists,
    TopicDefaults,
    TopicDescription,
    UnknownTopic,
    UnreadableAnswer,
    Unsupported,
    in_requests,
    topic_defaults,
)


MB = 1_000_000


def _topic(document: dict[str, Any], racks: Mapping[int, str | None] | None = None, *,
           replica_dirs: bool = True) -> TopicDescription:
    def info(p: dict[str, Any]) -> tuple[ReplicaInfo, ...]:
        if not replica_dirs:
            return tuple(replica_on(b, (racks or {}).get(b)) for b in p["replicas"])
        dirs = p.get("logDirs", {})
        size = int(p["sizeMB"] * MB) if "sizeMB" in p else None
        return tuple(ReplicaInfo(broker=b, rack=(racks or {}).get(b), log_dir=_interned(dirs.get(str(b))),
                                 size_bytes=size) for b in p["replicas"])

    return TopicDescription(
        name=document["name"],
        partitions=tuple(
            PartitionInfo(id=p["partition"], replicas=tuple(p["replicas"]), leader=p.get("leader"), isr=tuple(p["isr"]),
                          replica_info=info(p), offline=tuple(p.get("offline", ())))
            for p in document["partitions"]
        ),
        config=dict(document.get("config", {})),
    )


def _racks(document: dict[str, Any]) -> dict[int, str | None]:
    return {int(b): _interned(rack) for b, rack in document.get("racks", {}).items()}


def _interned(text: str | None) -> str | None:
    """One string object for every description's copy of a rack or a log directory: a reconciler keeps one
    description per topic, three replicas each, and JSON gives each answer its own strings."""
    return sys.intern(text) if text is not None else None


# 4xx answers that refuse the moment, not the request (a proxy's request timeout, its rate limit).
_NOT_NOW = (408, 429)


def _refusal(response: httpx.Response) -> AdminError:
    """An error answer's kind (the port's policy): the server's own trouble (5xx: it, or a proxy before it, cannot
    answer now) is temporary; a refusal of the request (4xx) is permanent."""
    if response.status_code == 501:  # what the simulator does not model: asking again gets the same answer
        return Unsupported(_error_text(response))
    if response.status_code >= 500 or response.status_code in _NOT_NOW:
        return ClusterUnavailable(_error_text(response))
    kind = {404: UnknownTopic, 409: TopicAlreadyExists}.get(response.status_code, OperationRefused)
    return kind(_error_text(response))


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
        except httpx.TransportError as exc:  # connecting, timeouts, a connection cut mid-answer
            raise ClusterUnavailable(f"cluster admin unreachable: {type(exc).__name__}: {exc}") from exc
        except httpx.HTTPError as exc:  # an answer httpx cannot decode, redirects without end
            raise UnreadableAnswer(f"cluster admin answered {method} {path} unreadably: {type(exc).__name__}: "
                                   f"{exc}") from exc
        if response.status_code >= 400:
            raise _refusal(response)
        if not response.content:
            return None
        try:
            return response.json()
        except ValueError as exc:
            raise UnreadableAnswer(f"cluster admin answered {method} {path} with a body that is not JSON "
                                   f"({len(response.content):,} bytes)") from exc

    async def brokers(self) -> list[BrokerInfo]:
        data = await self._call("GET", "brokers")
        return [BrokerInfo(id=b["id"], rack=b.get("rack"), alive=b["alive"]) for b in data["brokers"]]

    async def topic_defaults(self) -> TopicDefaults:
        return topic_defaults((await self._call("GET", "cluster/configs"))["configs"])

    async def list_topics(self, include_internal: bool = False) -> dict[str, TopicDescription]:
        # The simulator's cluster has no internal topics.
        data = await self._call("GET", "topics")
        racks = _racks(data)
        return {t["name"]: _topic(t, racks) for t in data["topics"]}

    async def partition_states(self) -> dict[str, tuple[PartitionInfo, ...]]:
        return {name: tuple(PartitionInfo(id=p.id, replicas=p.replicas, leader=p.leader, isr=p.isr, offline=p.offline)
                            for p in t.partitions) for name, t in (await self.list_topics()).items()}

    async def topic_configs(self, names: Sequence[str]) -> dict[str, dict[str, str]]:
        described = await self.describe_topics(list(names))
        return {name: dict(t.config) for name, t in described.items() if t is not None}

    async def assignments(self) -> dict[str, list[list[int]]]:
        return {name: [list(p.replicas) for p in sorted(t.partitions, key=lambda p: p.id)]
                for name, t in (await self.list_topics()).items()}

    async def describe_topics(self, names: list[str], *, replica_dirs: bool = True
                              ) -> dict[str, TopicDescription | None]:
        # The simulator's answer has the replicas' directories whether asked or not; left out unless asked for, as a
        # real Kafka's adapter does (the topic reconciler keeps the descriptions of all its topics).
        if not names:
            return {}
        data = await self._call("POST", "topics/describe", json={"names": names})
        racks = _racks(data)
        found = {t["name"]: _topic(t, racks, replica_dirs=replica_dirs) for t in data["topics"]}
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

    async def create_topics(self, topics: Sequence[NewTopic], *,
                            first: Callable[[], Awaitable[None]] | None = None) -> dict[str, AdminError | None]:
        if first is not None:
            await first()
        kinds = {409: TopicAlreadyExists}
        outcome: dict[str, AdminError | None] = {}
        for batch in in_requests(topics):
            answer = await self._call("POST", "topics/batch", json={"topics": [
                {"name": t.name, "config": dict(t.config), "assignment": [list(r) for r in t.assignment],
                 "logDirs": [{"partition": p, "broker": b, "logDir": d} for (p, b), d in sorted(t.log_dirs.items())]}
                for t in batch]})
            outcome.update({name: None if failed is None
                            else kinds.get(failed["status"], OperationRefused)(bounded(failed["error"]))
                            for name, failed in answer["topics"].items()})
        return outcome

    async def delete_topic(self, name: str) -> None:
        await self._call("DELETE", f"topics/{name}")

    async def create_partitions(self, name: str, total: int, assignment: Assignment | None = None,
                                log_dirs: Mapping[tuple[int, int], str] | None = None) -> None:
        body: dict[str, Any] = {"total": total}
        if assignment is not None:
            body["assignment"] = [list(r) for r in assignment]
        await self._call("POST", f"topics/{name}/partitions", json=body)
        if log_dirs:  # the simulator puts a replica in its directory at once: no race to avoid
            await self.alter_replica_log_dirs(name, log_dirs)

    async def alter_configs(self, name: str, config: dict[str, str]) -> None:
        await self._call("PATCH", f"topics/{name}/config", json={"config": config})

    async def reassign_partitions(self, name: str, replicas: Mapping[int, Sequence[int]]) -> None:
        await self._call("POST", f"topics/{name}/reassign",
                         json={"partitions": {str(p): list(r) for p, r in replicas.items()}})

    async def alter_replica_log_dirs(self, name: str, dirs: Mapping[tuple[int, int], str]) -> None:
        await self._call("POST", f"topics/{name}/log-dirs", json={"replicas": [
            {"partition": p, "broker": b, "logDir": d} for (p, b), d in sorted(dirs.items())]})

    async def list_reassignments(self, names: Sequence[str] | None = None) -> list[Reassignment]:
        return []  # the simulator's admin API moves replicas at once; its Cruise Control models executions

    async def cancel_reassignments(self, name: str, partitions: Sequence[int]) -> None:
        return None  # nothing is ever in progress (above)

    async def describe_log_dirs(self, brokers: Sequence[int] | None = None, *, replicas: bool = True
                                ) -> list[LogDirInfo]:
        data = await self._call("GET", "brokers")
        topics = (await self._call("GET", "topics"))["topics"] if replicas else []
        wanted = set(brokers) if brokers is not None else None
        replicas: dict[tuple[int, str], list[LogDirReplica]] = {}
        for topic in topics:
            for p in topic["partitions"]:
                for broker, path in p.get("logDirs", {}).items():
                    replicas.setdefault((int(broker), path), []).append(LogDirReplica(
                        topic=topic["name"], partition=p["partition"], size_bytes=int(p.get("sizeMB", 0) * MB)))
        def error(broker: dict[str, Any], path: str) -> str | None:
            if not broker["alive"]:
                return "BrokerNotAvailableError"
            return "KafkaStorageException" if path in broker.get("offlineLogDirs", ()) else None

        return [LogDirInfo(broker=b["id"], path=path, error=error(b, path),
                           replicas=() if error(b, path) else tuple(replicas.get((b["id"], path), ())),
                           cordoned=path in b.get("cordonedLogDirs", ()))
                for b in data["brokers"] if wanted is None or b["id"] in wanted for path in b.get("logDirs", ())]

    async def broker_configs(self, broker: int) -> dict[str, str]:
        return dict((await self._call("GET", f"brokers/{broker}/configs"))["configs"])

    async def alter_broker_configs(self, broker: int, config: Mapping[str, str | None]) -> None:
        await self._call("POST", f"brokers/{broker}/configs", json={"configs": dict(config)})

    async def alter_list_config(self, name: str, key: str, *, add: Sequence[str] = (),
                                remove: Sequence[str] = ()) -> None:
        raise Unsupported("the simulator's admin API sets whole configs only (and its replicas move at once)")

    async def elect_preferred_leaders(self, name: str, partitions: Sequence[int] | None = None) -> None:
        return None  # the simulator's leader is always the first alive replica, the preferred one

    async def aclose(self) -> None:
        await self._http.aclose()
