"""Cruise Control's REST API over the simulator, under ``/kafkacruisecontrol/``, with optional Basic auth and TLS,
and the fault plan (errors, latency) applied before each request."""

from __future__ import annotations

import asyncio
import base64
import hmac
import json
import re
from typing import Any

from aiohttp import web

from services.cluster_sim import responses
from services.cluster_sim.cruise_control import CruiseControlFailure, SimCruiseControl
from services.cluster_sim.faults import FaultPlan
from services.cluster_sim.parameters import unrecognized
from services.cluster_sim.request import Params, RequestError, UserRequestError, refusal_body

PREFIX = "/kafkacruisecontrol"


def _json(status: int, body: dict[str, Any], task_id: str | None = None) -> web.Response:
    headers = {"Cruise-Control-Version": "2.5.141-ballast-sim"}
    if task_id:
        headers["User-Task-ID"] = task_id
    return web.json_response(body, status=status, headers=headers)


def _request_url(request: web.Request) -> str:
    # Cruise Control records "<METHOD> <path>?<query>" for each task; Ballast relies on the query being kept.
    query = f"?{request.query_string}" if request.query_string else ""
    return f"{request.method} {request.path}{query}"


def build_cruise_control_app(cc: SimCruiseControl, faults: FaultPlan) -> web.Application:
    @web.middleware
    async def guard(request: web.Request, handler: Any) -> web.StreamResponse:
        endpoint = request.path.removeprefix(PREFIX).strip("/")
        if faults.credentials is not None and not _authorized(request, *faults.credentials):
            return web.Response(status=401, text="Unauthorized", headers={"WWW-Authenticate": 'Basic realm="cc"'})
        if unknown := unrecognized(endpoint, request.method, list(request.query)):
            return _json(400, {"version": 1, "stackTrace": "", "errorMessage": unknown})
        delay = faults.latency_for(endpoint)
        late_answer = delay and (endpoint in faults.latency_after or "*" in faults.latency_after)
        if delay and not late_answer:
            await asyncio.sleep(delay)
        injected = faults.take_error(endpoint)
        if injected is not None:
            status, message = injected
            exc = "java.lang.RuntimeException"
            return _json(status, responses.error_body(request.method, endpoint, message, exc))
        cc.requests_served += 1
        try:
            response = await handler(request)
        except CruiseControlFailure as failure:
            response = _json(failure.status, failure.body)
        except (UserRequestError, RequestError) as refused:
            response = _json(*refusal_body(request.method, endpoint, refused))
        if late_answer:
            await asyncio.sleep(delay)  # a client that hangs up now cannot undo what the request did
        return response

    app = web.Application(middlewares=[guard])

    async def topic_configuration(request: web.Request) -> web.Response:
        body = None
        if request.can_read_body:
            raw = await request.read()
            if raw.strip():
                try:
                    body = json.loads(raw)
                except json.JSONDecodeError:
                    raise UserRequestError(
                        'Illegal value for field topic_by_replication_factor in body, please specify in pairs of '
                        '"target replication factor" : "topic name regex".') from None
        client = request.remote or "127.0.0.1"
        status, payload, task_id = await cc.topic_configuration(
            dict(request.query), body, _request_url(request), client, request.headers.get("User-Task-ID"))
        return _json(status, payload, task_id)

    def optimization(endpoint: str) -> Any:
        async def handle(request: web.Request) -> web.Response:
            status, payload, task_id = await cc.optimize(endpoint, dict(request.query), _request_url(request),
                                                         request.remote or "127.0.0.1",
                                                         request.headers.get("User-Task-ID"))
            return _json(status, payload, task_id)
        return handle

    async def remove_disks(request: web.Request) -> web.Response:
        status, payload, task_id = await cc.remove_disks(dict(request.query), _request_url(request),
                                                         request.remote or "127.0.0.1",
                                                         request.headers.get("User-Task-ID"))
        return _json(status, payload, task_id)

    async def stop_proposal_execution(request: web.Request) -> web.Response:
        return _json(200, cc.stop_execution())

    async def user_tasks(request: web.Request) -> web.Response:
        return _json(200, cc.user_tasks(dict(request.query)))

    async def state(request: web.Request) -> web.Response:
        await cc.refresh_model(1.0)
        return _json(200, cc.state())

    async def load(request: web.Request) -> web.Response:
        cc.load.advance()
        await cc.refresh_model(1.0)
        disk_info = Params(request.query).boolean("populate_disk_info", False)
        return _json(200, responses.broker_load(cc.cluster, cc.load, disk_info=disk_info))

    async def partition_load(request: web.Request) -> web.Response:
        cc.load.advance()
        await cc.refresh_model(1.0)
        try:
            return _json(200, responses.partition_load(cc.load, dict(request.query)))
        except (re.error, ValueError) as exc:
            return _json(400, responses.error_body("GET", "partition_load", str(exc),
                                                   "java.lang.IllegalArgumentException"))

    async def kafka_cluster_state(request: web.Request) -> web.Response:
        await cc.refresh_model(1.0)
        return _json(200, responses.kafka_cluster_state(cc.cluster))

    app.router.add_post(f"{PREFIX}/topic_configuration", topic_configuration)
    for endpoint in ("rebalance", "add_broker", "remove_broker", "fix_offline_replicas"):
        app.router.add_post(f"{PREFIX}/{endpoint}", optimization(endpoint))
    app.router.add_post(f"{PREFIX}/remove_disks", remove_disks)
    app.router.add_post(f"{PREFIX}/stop_proposal_execution", stop_proposal_execution)
    app.router.add_get(f"{PREFIX}/user_tasks", user_tasks)
    app.router.add_get(f"{PREFIX}/state", state)
    app.router.add_get(f"{PREFIX}/kafka_cluster_state", kafka_cluster_state)
    app.router.add_get(f"{PREFIX}/load", load)
    app.router.add_get(f"{PREFIX}/partition_load", partition_load)
    return app


def _authorized(request: web.Request, username: str, password: str) -> bool:
    header = request.headers.get("Authorization", "")
    if not header.startswith("Basic "):
        return False
    try:
        user, _, secret = base64.b64decode(header[6:]).decode().partition(":")
    except (ValueError, UnicodeDecodeError):
        return False
    return hmac.compare_digest(user, username) and hmac.compare_digest(secret, password)
