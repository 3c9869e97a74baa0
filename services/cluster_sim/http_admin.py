"""The simulator's admin API (what the cluster-admin port talks to) and its fault API (what tests talk to)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, fields
from typing import TYPE_CHECKING, Any

from aiohttp import web

from services.cluster_sim.faults import InjectedError
from services.cluster_sim.model import ClusterError, NoSuchTopic, Partition, Topic, TopicExists
from services.common.metrics import exposition

if TYPE_CHECKING:
    from services.cluster_sim.app import Simulator


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


def _error(status: int, message: str) -> web.Response:
    return web.json_response({"error": message}, status=status)


def build_admin_app(sim: Simulator) -> web.Application:
    cluster = sim.cluster
    log_dir = sim.cruise_control.load.log_dir

    @web.middleware
    async def errors(request: web.Request, handler: Any) -> web.StreamResponse:
        if request.path.startswith("/admin/") and (injected := sim.faults.take_admin_error(request.path)):
            return web.Response(status=injected[0], text=injected[1], content_type="text/plain")
        if sim.backend.real and request.path.startswith("/admin/") and request.method != "GET" \
                and request.path != "/admin/topics/describe":
            return _error(409, "this simulator's Cruise Control executes on a real Kafka cluster: change the cluster "
                               "through Kafka (BALLAST_CLUSTER_ADMIN__KIND=kafka), not through the simulator")
        if sim.backend.real and request.path.startswith("/admin/"):
            await sim.cruise_control.refresh_model(0.5)
        try:
            return await handler(request)
        except NoSuchTopic as exc:
            return _error(404, str(exc))
        except TopicExists as exc:
            return _error(409, str(exc))
        except ClusterError as exc:
            return _error(400, str(exc))
        except (KeyError, ValueError, TypeError) as exc:
            return _error(400, f"bad request: {exc!r}")

    app = web.Application(middlewares=[errors])
    r = app.router

    async def health(_: web.Request) -> web.Response:
        return web.json_response({"status": "ok", "cruiseControlUp": sim.cruise_control_up})

    async def brokers(_: web.Request) -> web.Response:
        return web.json_response({"brokers": [
            {"id": b.id, "rack": b.rack, "alive": b.alive, "logDirs": list(b.log_dirs),
             "offlineLogDirs": list(b.offline_log_dirs)}
            for b in sorted(cluster.brokers.values(), key=lambda b: b.id)
        ]})

    async def add_broker(request: web.Request) -> web.Response:
        body = await request.json()
        broker = cluster.add_broker(int(body["id"]), body.get("rack"))
        return web.json_response({"id": broker.id, "rack": broker.rack, "alive": broker.alive}, status=201)

    async def remove_broker(request: web.Request) -> web.Response:
        cluster.remove_broker(int(request.match_info["id"]))
        return web.Response(status=204)

    async def list_topics(_: web.Request) -> web.Response:
        alive = cluster.alive_ids
        return web.json_response({"topics": [_topic_json(t, alive, log_dir) for t in cluster.topics.values()],
                                  "racks": _racks()})

    async def describe(request: web.Request) -> web.Response:
        names = (await request.json())["names"]
        alive = cluster.alive_ids
        return web.json_response({"topics": [_topic_json(cluster.topics[n], alive, log_dir) for n in names
                                             if n in cluster.topics], "racks": _racks()})

    def _racks() -> dict[str, str | None]:
        """Each broker's rack, as a describe answer carries it beside the replicas (Kafka's metadata does)."""
        return {str(b.id): b.rack for b in cluster.brokers.values()}

    async def create(request: web.Request) -> web.Response:
        body = await request.json()
        topic = cluster.create_topic(body["name"], int(body.get("partitions", 0)), int(body.get("replicationFactor", 0)),
                                     {str(k): str(v) for k, v in body.get("config", {}).items()},
                                     _assignment(body))
        return web.json_response(_topic_json(topic, cluster.alive_ids, log_dir), status=201)

    async def delete(request: web.Request) -> web.Response:
        cluster.delete_topic(request.match_info["name"])
        return web.Response(status=204)

    async def partitions(request: web.Request) -> web.Response:
        body = await request.json()
        cluster.create_partitions(request.match_info["name"], int(body["total"]), _assignment(body))
        return web.Response(status=204)

    async def reassign(request: web.Request) -> web.Response:
        body = await request.json()
        cluster.reassign(request.match_info["name"],
                         {int(p): [int(b) for b in r] for p, r in body["partitions"].items()})
        return web.Response(status=204)

    async def log_dirs(request: web.Request) -> web.Response:
        body = await request.json()
        cluster.alter_replica_log_dirs(request.match_info["name"], {
            (int(r["partition"]), int(r["broker"])): str(r["logDir"]) for r in body["replicas"]})
        return web.Response(status=204)

    async def config(request: web.Request) -> web.Response:
        body = await request.json()
        cluster.alter_config(request.match_info["name"], {str(k): str(v) for k, v in body["config"].items()})
        return web.Response(status=204)

    async def broker_state(request: web.Request) -> web.Response:
        cluster.set_alive(int(request.match_info["id"]), request.match_info["action"] == "start")
        return web.Response(status=204)

    # -- faults ------------------------------------------------------------------------------------------------

    async def fail_log_dir(request: web.Request) -> web.Response:
        """A disk of a running broker fails (the fault API's equivalent of LocalKafka.fail_log_dir)."""
        broker = int(request.match_info["id"])
        path = (await request.json())["path"]
        there = [(t.name, p.index) for t in cluster.topics.values() for p in t.partitions
                 if broker in p.replicas and log_dir(t.name, p, broker) == path]
        cluster.fail_log_dir(broker, path, there)
        return web.json_response({"broker": broker, "path": path, "offlineReplicas": len(there)})

    async def cc_restart(request: web.Request) -> web.Response:
        body = await request.json() if request.can_read_body else {}
        await sim.restart_cruise_control(down_s=float(body.get("downSeconds", 0.5)),
                                         warmup_s=body.get("warmupSeconds"))
        return web.Response(status=204)

    async def cc_stop(_: web.Request) -> web.Response:
        await sim.stop_cruise_control()
        return web.Response(status=204)

    async def cc_start(_: web.Request) -> web.Response:
        await sim.start_cruise_control()
        return web.Response(status=204)

    async def inject_error(request: web.Request) -> web.Response:
        body = await request.json()
        sim.faults.errors.append(InjectedError(body.get("endpoint", "*"), int(body.get("status", 500)),
                                               body["message"], int(body.get("count", 1))))
        return web.Response(status=204)

    async def inject_admin_error(request: web.Request) -> web.Response:
        body = await request.json()
        sim.faults.admin_errors.append(InjectedError(body.get("endpoint", "*"), int(body.get("status", 502)),
                                                     body.get("body", "Bad Gateway"), int(body.get("count", 1))))
        return web.Response(status=204)

    async def latency(request: web.Request) -> web.Response:
        body = await request.json()
        endpoint = body.get("endpoint", "*")
        sim.faults.latency_s[endpoint] = float(body["seconds"])
        if body.get("after"):
            sim.faults.latency_after.add(endpoint)
        else:
            sim.faults.latency_after.discard(endpoint)
        return web.Response(status=204)

    async def tuning(request: web.Request) -> web.Response:
        body = await request.json()
        known = {f.name for f in fields(sim.cruise_control.tuning)}
        for key, value in body.items():
            if key not in known:
                return _error(400, f"unknown tuning {key!r}; known: {sorted(known)}")
            setattr(sim.cruise_control.tuning, key, type(getattr(sim.cruise_control.tuning, key))(value))
        return web.json_response(asdict(sim.cruise_control.tuning))

    async def require_auth(request: web.Request) -> web.Response:
        body = await request.json()
        username = body.get("username")
        sim.faults.credentials = (username, body.get("password", "")) if username else None
        return web.Response(status=204)

    async def reset(_: web.Request) -> web.Response:
        sim.reset_faults()
        if not sim.cruise_control_up:
            await sim.start_cruise_control()
        return web.Response(status=204)

    async def stats(_: web.Request) -> web.Response:
        cc = sim.cruise_control
        return web.json_response({"requestsServed": cc.requests_served, "tasks": len(cc.tasks.all()),
                                  "activeTasks": len(cc.tasks.active), "executing": cc.execution is not None})

    async def metrics(_: web.Request) -> web.Response:
        body, content_type = exposition()
        return web.Response(body=body, headers={"Content-Type": content_type})

    r.add_get("/health", health)
    r.add_get("/metrics", metrics)
    r.add_get("/admin/brokers", brokers)
    r.add_post("/admin/brokers", add_broker)
    r.add_delete("/admin/brokers/{id}", remove_broker)
    r.add_post("/admin/brokers/{id}/{action:stop|start}", broker_state)
    r.add_get("/admin/topics", list_topics)
    r.add_post("/admin/topics", create)
    r.add_post("/admin/topics/describe", describe)
    r.add_delete("/admin/topics/{name}", delete)
    r.add_post("/admin/topics/{name}/partitions", partitions)
    r.add_post("/admin/topics/{name}/reassign", reassign)
    r.add_post("/admin/topics/{name}/log-dirs", log_dirs)
    r.add_patch("/admin/topics/{name}/config", config)
    r.add_post("/faults/brokers/{id}/log-dirs/fail", fail_log_dir)
    r.add_post("/faults/cruise-control/restart", cc_restart)
    r.add_post("/faults/cruise-control/stop", cc_stop)
    r.add_post("/faults/cruise-control/start", cc_start)
    r.add_post("/faults/errors", inject_error)
    r.add_post("/faults/admin/errors", inject_admin_error)
    r.add_post("/faults/latency", latency)
    r.add_post("/faults/tuning", tuning)
    r.add_post("/faults/cruise-control/auth", require_auth)
    r.add_post("/faults/reset", reset)

    async def tasks(_: web.Request) -> web.Response:
        return web.json_response({"tasks": [
            {"id": t.id, "status": t.status, "startMs": t.start_ms, "completedMs": t.completed_ms,
             "endpoint": t.endpoint} for t in sim.cruise_control.tasks.all()]})

    r.add_get("/faults/stats", stats)
    r.add_get("/faults/tasks", tasks)
    return app
