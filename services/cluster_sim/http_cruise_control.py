"""Cruise Control's REST API over the simulator, under ``/kafkacruisecontrol/``, with optional Basic auth and TLS,
and the fault plan (errors, latency) applied before each request."""

from __future__ import annotations

import asyncio
import base64
import hmac
import json
from typing import Any

from aiohttp import web

from services.cluster_sim import responses
from services.cluster_sim.cruise_control import SimCruiseControl
from services.cluster_sim.faults import FaultPlan
from services.cluster_sim.parameters import unrecognized
from services.cluster_sim.request import Request, UserRequestError, refusal_body

PREFIX = "/kafkacruisecontrol"


SESSION_COOKIE = "JSESSIONID"


def _json(status: int, body: dict[str, Any], task_id: str | None = None) -> web.Response:
    headers = {"Cruise-Control-Version": "2.5.141-ballast-sim"}
    if task_id:
        headers["User-Task-ID"] = task_id
    return web.json_response(body, status=status, headers=headers)


def _request_url(request: web.Request) -> str:
    # Cruise Control records "<METHOD> <path>?<query>" for each task; Ballast relies on the query being kept.
    query = f"?{request.query_string}" if request.query_string else ""
    return f"{request.method} {request.path}{query}"


async def _body(request: web.Request) -> Any:
    if not request.can_read_body:
        return None
    raw = await request.read()
    if not raw.strip():
        return None
    try:
        return json.loads(raw)
    except json.JSONDecodeError:
        raise UserRequestError('Illegal value for field topic_by_replication_factor in body, please specify in pairs '
                               'of "target replication factor" : "topic name regex".') from None


def build_cruise_control_app(cc: SimCruiseControl, faults: FaultPlan) -> web.Application:
    @web.middleware
    async def guard(request: web.Request, handler: Any) -> web.StreamResponse:
        endpoint = request.path.removeprefix(PREFIX).strip("/")
        if faults.credentials is not None and not _authorized(request, *faults.credentials):
            return web.Response(status=401, text="Unauthorized", headers={"WWW-Authenticate": 'Basic realm="cc"'})
        if unknown := unrecognized(endpoint, request.method, list(request.query)):
            return _json(*refusal_body(UserRequestError(unknown)))
        delay = faults.latency_for(endpoint)
        late_answer = delay and (endpoint in faults.latency_after or "*" in faults.latency_after)
        if delay and not late_answer:
            await asyncio.sleep(delay)
            if request.transport is None or request.transport.is_closing():
                # The client hung up while its request waited: as if the request had died with it on the way.
                return web.Response(status=499)
        injected = faults.take_error(endpoint)
        if injected is not None:
            status, message = injected
            exc = "java.lang.RuntimeException"
            return _json(status, responses.error_body(request.method, endpoint, message, exc))
        cc.requests_served += 1
        try:
            response = await handler(request)
        except UserRequestError as refused:
            response = _json(*refusal_body(refused))
        if late_answer:
            await asyncio.sleep(delay)  # a client that hangs up now cannot undo what the request did
        return response

    app = web.Application(middlewares=[guard])

    def endpoint_handler(endpoint: str) -> Any:
        async def handle(request: web.Request) -> web.Response:
            reply = await cc.handle(Request(
                endpoint=endpoint, method=request.method, path=request.path,
                params={name: request.query.getall(name) for name in request.query},
                request_url=_request_url(request), client=request.remote or "127.0.0.1",
                body=await _body(request) if endpoint == "topic_configuration" else None,
                session=request.cookies.get(SESSION_COOKIE), task_header=request.headers.get("User-Task-ID")))
            response = _json(reply.status, reply.body, reply.task_id)
            if reply.new_session:
                response.set_cookie(SESSION_COOKIE, reply.new_session, path="/")
            return response
        return handle

    for endpoint in ("topic_configuration", "rebalance", "add_broker", "remove_broker", "fix_offline_replicas",
                     "remove_disks", "stop_proposal_execution"):
        app.router.add_post(f"{PREFIX}/{endpoint}", endpoint_handler(endpoint))
    for endpoint in ("user_tasks", "state", "kafka_cluster_state", "load", "partition_load", "proposals"):
        app.router.add_get(f"{PREFIX}/{endpoint}", endpoint_handler(endpoint))
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
