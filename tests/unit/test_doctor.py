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
    ready = cruise_control(settings, transport=answering(state))
    assert ready.health is Health.OK and ready.detail.startswith("ready (executor ")

    loading = copy.deepcopy(state)
    loading["MonitorState"].update(state="LOADING", loadingProgressPct=40.0)
    warming = cruise_control(settings, transport=answering(loading))
    assert warming.health is Health.DEGRADED
    assert warming.detail == "answers, but not ready: its load monitor is loading, 40% loaded"

    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("connection refused", request=request)

    down = cruise_control(settings, transport=httpx.MockTransport(refuse))
    assert down.health is Health.DOWN and down.address == settings.cruise_control.base_url


def test_the_spark_job_is_judged_by_its_newest_window() -> None:
    """Issue 56, defect 1: doctor never checked the Spark job. It has no health page; its newest window tells."""
    from datetime import UTC, datetime, timedelta

    from events import LoadAggregate
    from services.cli.doctor import aggregates_health
    from services.common.settings import SparkSettings

    now = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
    spark = SparkSettings()  # a 60 s window, 30 s of watermark, 10 s slides: fresh within 120 s

    def window(ended_s_ago: float) -> LoadAggregate:
        end = now - timedelta(seconds=ended_s_ago)
        return LoadAggregate(window_start=end - timedelta(seconds=60), window_end=end, entity_kind="broker",
                             entity="1")

    assert aggregates_health([], spark, now)[0] is Health.OFF
    assert aggregates_health([window(500), window(40)], spark, now) == (
        Health.OK, "newest window ended 11:59:20 UTC (40 s ago)")
    assert aggregates_health([window(500)], spark, now) == (
        Health.DEGRADED, "newest window ended 11:51:40 UTC (500 s ago), more than 120 s: is the job running, and the "
                         "load collector sampling?")
    # Emitted before its end (the watermark passed it): said as ahead, not "-46 s ago" (a walkthrough).
    assert aggregates_health([window(-46)], spark, now) == (Health.OK, "newest window ends 12:00:46 UTC (in 46 s)")


def test_a_tenants_doctor_looks_for_the_tenants_own_topics_and_not_the_deployments_aggregates(monkeypatch) -> None:
    from services.cli import doctor
    from services.common.settings import Settings

    class Listing:
        def __init__(self, config: dict) -> None:
            pass

        def list_topics(self, timeout: float) -> object:
            names = ["ballast.tenant.payments.topic.specs", "ballast.tenant.payments.topic.status"]
            return type("Metadata", (), {"topics": dict.fromkeys(names)})()

    monkeypatch.setattr("confluent_kafka.admin.AdminClient", Listing)
    monkeypatch.setenv("BALLAST_TENANT", "payments")
    check = doctor.bus(Settings(), 1.0)
    assert check.health is Health.DEGRADED
    assert check.detail == ("topics of tenant 'payments' missing: ballast.tenant.payments.dead-letters (an admin's "
                            "`ballast init-bus` makes them, with the tenants file)")


def test_a_part_that_never_answers_is_down_when_the_time_is_up(monkeypatch) -> None:
    """Issue 56, defect 1: with Cruise Control frozen (SIGSTOP), doctor hung past three minutes."""
    import threading

    from services.cli import doctor

    never = threading.Event()
    monkeypatch.setattr(doctor, "cruise_control", lambda *args: never.wait() or None)
    monkeypatch.setattr(doctor, "bus", lambda settings, timeout_s: doctor.Check("bus", Health.OK, "fine"))
    for name in ("cluster", "service", "spark_job"):
        monkeypatch.setattr(doctor, name, lambda settings, *args, **kwargs: doctor.Check("x", Health.OK, ""))
    settings = Settings()
    checks = {c.name: c for c in doctor.examine(settings, timeout_s=0.2)}
    stuck = checks["cruise-control"]
    assert (stuck.health, stuck.detail, stuck.address) == (Health.DOWN, "no answer in 0.2 s",
                                                           settings.cruise_control.base_url)
    assert checks["bus"].health is Health.OK
    never.set()


def test_waiting_asks_again_until_all_is_well_and_says_what_it_waits_for_once_each_change() -> None:
    """Issue 56, defect 7: `make compose-up` returned before the stack answered; it now waits with `ballast doctor
    --wait`, which asks until every part that runs is ready."""
    from services.cli.doctor import Check, wait_until_healthy

    now = [0.0]
    answers = iter([
        [Check("bus", Health.DOWN, "no broker answered"), Check("throttle", Health.OFF, "not running")],
        [Check("bus", Health.DOWN, "no broker answered"), Check("throttle", Health.OFF, "not running")],
        [Check("bus", Health.OK, ""), Check("cruise-control", Health.DEGRADED, "warming up")],
        [Check("bus", Health.OK, ""), Check("cruise-control", Health.OK, "ready")],
    ])
    said: list[list[str]] = []
    checks = wait_until_healthy(lambda: next(answers), 60, said.append, clock=lambda: now[0],
                                sleep=lambda s: now.__setitem__(0, now[0] + s))
    assert [c.health for c in checks] == [Health.OK, Health.OK] and now[0] == 15.0
    assert said == [["bus (down)"], ["cruise-control (degraded)"]]


def test_waiting_gives_up_at_its_deadline_with_the_last_answer() -> None:
    from services.cli.doctor import Check, wait_until_healthy

    now = [0.0]
    down = [Check("topic-reconciler", Health.DOWN, "no answer")]
    checks = wait_until_healthy(lambda: down, 12, lambda waiting: None, clock=lambda: now[0],
                                sleep=lambda s: now.__setitem__(0, now[0] + s))
    assert checks == down and now[0] == 12.0  # asked at 0, 5, 10 and, the last time, at the deadline
    # No wait at all: asked once.
    asked = []
    wait_until_healthy(lambda: asked.append(1) or down, 0, lambda waiting: None)
    assert asked == [1]


def test_a_check_that_raises_is_down_with_its_error_not_a_thread_traceback(monkeypatch, capsys) -> None:
    """Issue 56, defect 7: under `doctor --wait`, a cluster check still running past its deadline raised as the
    process exited ("cannot schedule new futures after shutdown"), and its thread printed a traceback."""
    from services.cli import doctor

    def refused(*args, **kwargs):
        raise RuntimeError("cannot schedule new futures after shutdown")

    monkeypatch.setattr(doctor, "cluster", refused)
    for name in ("bus", "cruise_control", "service", "spark_job"):
        monkeypatch.setattr(doctor, name, lambda settings, *args, **kwargs: doctor.Check("x", Health.OK, ""))
    checks = {c.name: c for c in doctor.examine(Settings(), timeout_s=5)}
    assert (checks["cluster"].health, checks["cluster"].detail) == (
        Health.DOWN, "no answer: cannot schedule new futures after shutdown")
    assert "Traceback" not in capsys.readouterr().err
