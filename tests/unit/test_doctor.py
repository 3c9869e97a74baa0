"""`ballast doctor`'s Cruise Control check on the real one's recorded `state` answer (../shared/reference/
cruise-control-real): ready, warming up (its load monitor still loading, as after a restart), or not answering."""

from __future__ import annotations

import copy
import json

import httpx

from services.cli.doctor import Health, cruise_control
from services.common.settings import Settings
from tests.conftest import SHARED

RECORDED = SHARED / "cruise-control-real" / "responses"


def answering(body: dict) -> httpx.MockTransport:
    return httpx.MockTransport(lambda request: httpx.Response(200, json=body))


def test_ready_warming_up_and_down_are_told_apart() -> None:
    state = json.loads((RECORDED / "state-real.json").read_text())["body"]
    settings = Settings()
    ready = cruise_control(settings, answering(state))
    assert ready.health is Health.OK and ready.detail.startswith("ready (executor ")

    loading = copy.deepcopy(state)
    loading["MonitorState"].update(state="LOADING", loadingProgressPct=40.0)
    warming = cruise_control(settings, answering(loading))
    assert warming.health is Health.DEGRADED
    assert warming.detail == "answers, but not ready: its load monitor is loading, 40% loaded"

    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("connection refused", request=request)

    down = cruise_control(settings, httpx.MockTransport(refuse))
    assert down.health is Health.DOWN and down.address == settings.cruise_control.base_url
