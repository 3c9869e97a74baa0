"""The simulator's fault API: what tests talk to (Cruise Control restarted, stopped, slowed, answering errors or
asking for credentials; brokers' disks failing; the execution's timings), as a route table."""

from __future__ import annotations

from dataclasses import asdict, fields

from aiohttp import web

from services.cluster_sim.admin_context import SIMULATOR, error_response
from services.cluster_sim.faults import InjectedError

routes = web.RouteTableDef()


@routes.post("/faults/brokers/{id}/log-dirs/fail")
async def fail_log_dir(request: web.Request) -> web.Response:
    """A disk of a running broker fails (the fault API's equivalent of LocalKafka.fail_log_dir)."""
    cluster = request.app[SIMULATOR].cluster
    log_dir = request.app[SIMULATOR].cruise_control.load.log_dir
    broker = int(request.match_info["id"])
    path = (await request.json())["path"]
    there = [(t.name, p.index) for t in cluster.topics.values() for p in t.partitions
             if broker in p.replicas and log_dir(t.name, p, broker) == path]
    cluster.fail_log_dir(broker, path, there)
    return web.json_response({"broker": broker, "path": path, "offlineReplicas": len(there)})


@routes.post("/faults/cruise-control/restart")
async def cc_restart(request: web.Request) -> web.Response:
    sim = request.app[SIMULATOR]
    body = await request.json() if request.can_read_body else {}
    await sim.restart_cruise_control(down_s=float(body.get("downSeconds", 0.5)),
                                     warmup_s=body.get("warmupSeconds"))
    return web.Response(status=204)


@routes.post("/faults/cruise-control/stop")
async def cc_stop(request: web.Request) -> web.Response:
    sim = request.app[SIMULATOR]
    await sim.stop_cruise_control()
    return web.Response(status=204)


@routes.post("/faults/cruise-control/start")
async def cc_start(request: web.Request) -> web.Response:
    sim = request.app[SIMULATOR]
    await sim.start_cruise_control()
    return web.Response(status=204)


@routes.post("/faults/errors")
async def inject_error(request: web.Request) -> web.Response:
    sim = request.app[SIMULATOR]
    body = await request.json()
    sim.faults.errors.append(InjectedError(body.get("endpoint", "*"), int(body.get("status", 500)),
                                           body["message"], int(body.get("count", 1))))
    return web.Response(status=204)


@routes.post("/faults/admin/errors")
async def inject_admin_error(request: web.Request) -> web.Response:
    sim = request.app[SIMULATOR]
    body = await request.json()
    sim.faults.admin_errors.append(InjectedError(body.get("endpoint", "*"), int(body.get("status", 502)),
                                                 body.get("body", "Bad Gateway"), int(body.get("count", 1))))
    return web.Response(status=204)


@routes.post("/faults/admin/cut-batch")
async def cut_batch(request: web.Request) -> web.Response:
    """Batch creations stop after ``afterTopics`` more topics (in the middle of a request: after its first) and hold
    their answer until the faults are reset."""
    sim = request.app[SIMULATOR]
    after = int((await request.json())["afterTopics"])
    if after < 0:
        return error_response(400, "afterTopics must be 0 or more")
    sim.faults.cut_batches(after)
    return web.Response(status=204)


@routes.post("/faults/latency")
async def latency(request: web.Request) -> web.Response:
    sim = request.app[SIMULATOR]
    body = await request.json()
    endpoint = body.get("endpoint", "*")
    sim.faults.latency_s[endpoint] = float(body["seconds"])
    if body.get("after"):
        sim.faults.latency_after.add(endpoint)
    else:
        sim.faults.latency_after.discard(endpoint)
    return web.Response(status=204)


@routes.post("/faults/tuning")
async def tuning(request: web.Request) -> web.Response:
    sim = request.app[SIMULATOR]
    body = await request.json()
    known = {f.name for f in fields(sim.cruise_control.tuning)}
    for key, value in body.items():
        if key not in known:
            return error_response(400, f"unknown tuning {key!r}; known: {sorted(known)}")
        setattr(sim.cruise_control.tuning, key, type(getattr(sim.cruise_control.tuning, key))(value))
    return web.json_response(asdict(sim.cruise_control.tuning))


@routes.post("/faults/cruise-control/auth")
async def require_auth(request: web.Request) -> web.Response:
    sim = request.app[SIMULATOR]
    body = await request.json()
    username = body.get("username")
    sim.faults.credentials = (username, body.get("password", "")) if username else None
    return web.Response(status=204)


@routes.post("/faults/reset")
async def reset(request: web.Request) -> web.Response:
    sim = request.app[SIMULATOR]
    sim.reset_faults()
    if not sim.cruise_control_up:
        await sim.start_cruise_control()
    return web.Response(status=204)


@routes.get("/faults/stats")
async def stats(request: web.Request) -> web.Response:
    sim = request.app[SIMULATOR]
    cc = sim.cruise_control
    return web.json_response({"requestsServed": cc.requests_served, "tasks": len(cc.tasks.all()),
                              "activeTasks": len(cc.tasks.active), "executing": cc.execution is not None,
                              "heldCreations": sim.faults.cut_held, "heldTopicsMade": sim.faults.cut_held_made})


@routes.get("/faults/tasks")
async def tasks(request: web.Request) -> web.Response:
    sim = request.app[SIMULATOR]
    return web.json_response({"tasks": [
        {"id": t.id, "status": t.status, "startMs": t.start_ms, "completedMs": t.completed_ms,
         "endpoint": t.endpoint} for t in sim.cruise_control.tasks.all()]})
