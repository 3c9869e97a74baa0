"""The simulator's admin API: what the cluster-admin port talks to (brokers, topics, partitions, configs, log
directories), as a route table. ``http_admin.build_admin_app`` serves it with the fault API."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from aiohttp import web

from services.cluster_sim.admin_context import SIMULATOR, error_response
from services.cluster_sim.model import (Broker, Cluster, ClusterError, NoSuchTopic, NotModelled, Partition, Topic,
                                        TopicExists)
from services.common.metrics import exposition

routes = web.RouteTableDef()


def _topic_json(topic: Topic, alive: set[int], log_dir: Callable[[str, Partition, int], str]) -> dict[str, Any]:
    return {
        "name": topic.name,
        "replicationFactor": topic.replication_factor,
        "config": topic.config,
        "partitions": [
            {"partition": p.index, "replicas": p.replicas, "leader": p.leader, "isr": p.isr(alive),
             "offline": p.offline(alive),
             "sizeMB": p.size_mb, "logDirs": {str(b): log_dir(topic.name, p, b) for b in p.replicas}}
            for p in topic.partitions
        ],
    }


def _assignment(body: dict[str, Any]) -> list[list[int]] | None:
    raw = body.get("assignment")
    return None if raw is None else [[int(b) for b in replicas] for replicas in raw]


def _racks(cluster: Cluster) -> dict[str, str | None]:
    """Each broker's rack, as a describe answer carries it beside the replicas (Kafka's metadata does)."""
    return {str(b.id): b.rack for b in cluster.brokers.values()}


@web.middleware
async def errors(request: web.Request, handler: Any) -> web.StreamResponse:
    """Injected admin faults, a read-only real backend, and the model's refusals as HTTP answers."""
    sim = request.app[SIMULATOR]
    if request.path.startswith("/admin/") and (injected := sim.faults.take_admin_error(request.path)):
        return web.Response(status=injected[0], text=injected[1], content_type="text/plain")
    if sim.backend.real and request.path.startswith("/admin/") and request.method != "GET" \
            and request.path != "/admin/topics/describe":
        return error_response(409, "this simulator's Cruise Control executes on a real Kafka cluster: change the cluster "
                           "through Kafka (BALLAST_CLUSTER_ADMIN__KIND=kafka), not through the simulator")
    if sim.backend.real and request.path.startswith("/admin/"):
        await sim.cruise_control.refresh_model(0.5)
    try:
        return await handler(request)
    except NoSuchTopic as exc:
        return error_response(404, str(exc))
    except TopicExists as exc:
        return error_response(409, str(exc))
    except NotModelled as exc:
        return error_response(501, str(exc))
    except ClusterError as exc:
        return error_response(400, str(exc))
    except (KeyError, ValueError, TypeError) as exc:
        return error_response(400, f"bad request: {exc!r}")


@routes.get("/health")
async def health(request: web.Request) -> web.Response:
    sim = request.app[SIMULATOR]
    return web.json_response({"status": "ok", "cruiseControlUp": sim.cruise_control_up})


@routes.get("/metrics")
async def metrics(request: web.Request) -> web.Response:
    body, content_type = exposition()
    return web.Response(body=body, headers={"Content-Type": content_type})


@routes.get("/admin/brokers")
async def brokers(request: web.Request) -> web.Response:
    cluster = request.app[SIMULATOR].cluster
    return web.json_response({"brokers": [
        {"id": b.id, "rack": b.rack, "alive": b.alive, "logDirs": list(b.log_dirs),
         "offlineLogDirs": list(b.offline_log_dirs), "cordonedLogDirs": list(b.cordoned_log_dirs)}
        for b in sorted(cluster.brokers.values(), key=lambda b: b.id)
    ]})


@routes.get("/admin/cluster/configs")
async def cluster_configs(request: web.Request) -> web.Response:
    """The brokers' settings a client reads off a real cluster (DescribeConfigs): the topic defaults."""
    return web.json_response({"configs": dict(request.app[SIMULATOR].cluster.topic_defaults)})


def _broker(request: web.Request) -> Broker:
    broker_id = int(request.match_info["id"])
    if (broker := request.app[SIMULATOR].cluster.brokers.get(broker_id)) is None:
        raise ClusterError(f"Broker {broker_id} is not registered")
    return broker


@routes.get("/admin/brokers/{id}/configs")
async def broker_configs(request: web.Request) -> web.Response:
    """A broker's dynamic configs (DescribeConfigs of the broker: those set on it)."""
    return web.json_response({"configs": dict(_broker(request).configs)})


@routes.post("/admin/brokers/{id}/configs")
async def alter_broker_configs(request: web.Request) -> web.Response:
    """Set or (null) delete a broker's dynamic configs (IncrementalAlterConfigs); of them the simulator acts on
    ``cordoned.log.dirs`` (KIP-1066)."""
    _broker(request).set_configs((await request.json())["configs"])
    return web.Response(status=204)


@routes.post("/admin/brokers")
async def add_broker(request: web.Request) -> web.Response:
    cluster = request.app[SIMULATOR].cluster
    body = await request.json()
    broker = cluster.add_broker(int(body["id"]), body.get("rack"))
    return web.json_response({"id": broker.id, "rack": broker.rack, "alive": broker.alive}, status=201)


@routes.delete("/admin/brokers/{id}")
async def remove_broker(request: web.Request) -> web.Response:
    cluster = request.app[SIMULATOR].cluster
    cluster.remove_broker(int(request.match_info["id"]))
    return web.Response(status=204)


@routes.post("/admin/brokers/{id}/{action:stop|start}")
async def broker_state(request: web.Request) -> web.Response:
    cluster = request.app[SIMULATOR].cluster
    cluster.set_alive(int(request.match_info["id"]), request.match_info["action"] == "start")
    return web.Response(status=204)


@routes.get("/admin/topics")
async def list_topics(request: web.Request) -> web.Response:
    cluster = request.app[SIMULATOR].cluster
    log_dir = request.app[SIMULATOR].cruise_control.load.log_dir
    alive = cluster.alive_ids
    return web.json_response({"topics": [_topic_json(t, alive, log_dir) for t in cluster.topics.values()],
                              "racks": _racks(cluster)})


@routes.post("/admin/topics")
async def create(request: web.Request) -> web.Response:
    cluster = request.app[SIMULATOR].cluster
    log_dir = request.app[SIMULATOR].cruise_control.load.log_dir
    body = await request.json()
    topic = cluster.create_topic(body["name"], int(body.get("partitions", 0)), int(body.get("replicationFactor", 0)),
                                 {str(k): str(v) for k, v in body.get("config", {}).items()},
                                 _assignment(body))
    return web.json_response(_topic_json(topic, cluster.alive_ids, log_dir), status=201)


@routes.post("/admin/topics/batch")
async def create_batch(request: web.Request) -> web.Response:
    """CreateTopics for many topics at once, each with its replicas and, where chosen, their log directories from
    the start: each topic's outcome (its error status and message, or none) as Kafka answers per topic."""
    sim = request.app[SIMULATOR]
    cluster = sim.cluster
    outcome: dict[str, dict[str, Any] | None] = {}
    for item in (await request.json())["topics"]:
        if sim.faults.cut_here(len(outcome)):
            await sim.faults.held_at_cut(len(outcome))
            return error_response(503, "the creation was cut short: the topics before the cut were created")
        name = str(item["name"])
        try:
            cluster.create_topic(name, 0, 0, {str(k): str(v) for k, v in item.get("config", {}).items()},
                                 _assignment(item))
        except (NoSuchTopic, TopicExists, ClusterError) as exc:
            outcome[name] = {"status": 409 if isinstance(exc, TopicExists) else 400, "error": str(exc)}
            continue
        try:
            cluster.alter_replica_log_dirs(name, {(int(r["partition"]), int(r["broker"])): str(r["logDir"])
                                                  for r in item.get("logDirs", [])})
        except ClusterError:
            pass  # as a broker whose directory is not there: it chooses one itself
        outcome[name] = None
    sim.frozen.held(len(cluster.topics))
    return web.json_response({"topics": outcome})


@routes.post("/admin/topics/describe")
async def describe(request: web.Request) -> web.Response:
    cluster = request.app[SIMULATOR].cluster
    log_dir = request.app[SIMULATOR].cruise_control.load.log_dir
    names = (await request.json())["names"]
    alive = cluster.alive_ids
    return web.json_response({"topics": [_topic_json(cluster.topics[n], alive, log_dir) for n in names
                                         if n in cluster.topics], "racks": _racks(cluster)})


@routes.delete("/admin/topics/{name}")
async def delete(request: web.Request) -> web.Response:
    cluster = request.app[SIMULATOR].cluster
    cluster.delete_topic(request.match_info["name"])
    return web.Response(status=204)


@routes.post("/admin/topics/{name}/partitions")
async def partitions(request: web.Request) -> web.Response:
    cluster = request.app[SIMULATOR].cluster
    body = await request.json()
    cluster.create_partitions(request.match_info["name"], int(body["total"]), _assignment(body))
    return web.Response(status=204)


@routes.post("/admin/topics/{name}/reassign")
async def reassign(request: web.Request) -> web.Response:
    cluster = request.app[SIMULATOR].cluster
    body = await request.json()
    cluster.reassign(request.match_info["name"],
                     {int(p): [int(b) for b in r] for p, r in body["partitions"].items()})
    return web.Response(status=204)


@routes.post("/admin/topics/{name}/log-dirs")
async def log_dirs(request: web.Request) -> web.Response:
    cluster = request.app[SIMULATOR].cluster
    body = await request.json()
    cluster.alter_replica_log_dirs(request.match_info["name"], {
        (int(r["partition"]), int(r["broker"])): str(r["logDir"]) for r in body["replicas"]})
    return web.Response(status=204)


@routes.patch("/admin/topics/{name}/config")
async def config(request: web.Request) -> web.Response:
    cluster = request.app[SIMULATOR].cluster
    body = await request.json()
    cluster.alter_config(request.match_info["name"],
                         {str(k): str(v) if v is not None else None for k, v in body["config"].items()})
    return web.Response(status=204)
