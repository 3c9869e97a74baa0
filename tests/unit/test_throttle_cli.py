"""``ballast throttle``: what the status and the changes look like (the rows and lines are plain functions of the
events), the commands with the bus faked (json lines, --follow, no status yet), and their help."""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime, timedelta, timezone

import pytest
from rich.console import Console, Group
from typer.testing import CliRunner

from events import TOPICS, BrokerThrottle, LogDirThrottle, ThrottleRateChanged, ThrottleStatus
from events.throttle import ThrottleReason
from events.topics import BusTopic
from services.cli.commands.throttle import BROKER_COLUMNS, CHANGE_COLUMNS, changes_table, status_renderables
from services.common.throttle_wording import (
    back_off_text,
    broker_rows,
    change_line,
    change_row,
    lagging_text,
    log_dir_rows,
    rate_text,
    status_lines,
    traffic_text,
)
from services.cli.main import app
from services.cli.output import Output, emit
from services.common import busio

NOW = datetime(2026, 5, 10, 12, 0, 30, tzinfo=UTC)


def moving() -> ThrottleStatus:
    return ThrottleStatus(
        moving_partitions=12, moving_log_dirs=2,
        brokers=[
            BrokerThrottle(broker=10, kind="inter-broker", bytes_per_s=1_000_000, owner="ballast",
                           reason="isr-back-off", capacity_bytes_per_s=125_000_000, live_bytes_per_s=60_000_000,
                           headroom_bytes_per_s=65_000_000),
            BrokerThrottle(broker=2, kind="inter-broker", bytes_per_s=50_000_000, owner="other", reason="fixed"),
            BrokerThrottle(broker=2, kind="intra-broker", reason="no-capacity"),
            BrokerThrottle(broker=1, kind="inter-broker", bytes_per_s=3_200_000, owner="ballast", reason="headroom",
                           capacity_bytes_per_s=125_000_000, live_bytes_per_s=121_000_000,
                           headroom_bytes_per_s=4_000_000)],
        log_dirs=[LogDirThrottle(broker=2, log_dir="/data-1", capacity_bytes_per_s=400_000_000, live_bytes_per_s=512,
                                 headroom_bytes_per_s=399_999_488),
                  LogDirThrottle(broker=2, log_dir="/data-0")],
        traffic_source="cruise-control", traffic_age_s=4.2, back_off="isr-back-off",
        back_off_until=NOW + timedelta(seconds=25), lagging_partitions=["orders-0", "clicks-3"],
        message="moves in flight", updated_at=NOW - timedelta(seconds=3))


@pytest.mark.parametrize(("rate", "text"), [
    (None, "-"), (0, "0 B/s"), (512, "512 B/s"), (999, "999 B/s"), (1000, "1.0 kB/s"), (12_345, "12.3 kB/s"),
    (999_999, "1.0 MB/s"), (3_200_000, "3.2 MB/s"), (125_000_000, "125.0 MB/s"), (1_250_000_000, "1.2 GB/s"),
    (2_000_000_000_000, "2.0 TB/s"),
])
def test_rates_read_as_people_read_them_in_kafkas_decimal_units(rate: int | None, text: str) -> None:
    assert rate_text(rate) == text


def test_brokers_in_order_with_their_rates_owner_and_reason() -> None:
    rows = broker_rows(moving())
    assert len(BROKER_COLUMNS) == len(rows[0]) == 8
    assert rows == [
        ("1", "inter-broker", "3.2 MB/s", "ballast", "headroom", "125.0 MB/s", "121.0 MB/s", "4.0 MB/s"),
        ("2", "inter-broker", "50.0 MB/s", "other", "fixed", "-", "-", "-"),
        ("2", "intra-broker", "-", "none", "no-capacity", "-", "-", "-"),
        ("10", "inter-broker", "1.0 MB/s", "ballast", "isr-back-off", "125.0 MB/s", "60.0 MB/s", "65.0 MB/s")]


def test_the_directories_taking_part() -> None:
    assert log_dir_rows(moving()) == [("2", "/data-0", "-", "-", "-"),
                                      ("2", "/data-1", "400.0 MB/s", "512 B/s", "400.0 MB/s")]


def test_traffic_source_and_age() -> None:
    assert traffic_text(moving()) == "cruise-control (figures 4.2 s old when the rates were computed)"
    assert traffic_text(ThrottleStatus(traffic_source="log-growth")) == "log-growth"
    assert traffic_text(ThrottleStatus()).startswith("none (no live traffic figures")


def test_the_back_off_and_the_partitions_behind_it() -> None:
    assert back_off_text(moving()) == (
        "isr-back-off: a partition outside the moves is out of its ISR; the rates Ballast sets stay at the floor "
        "until 12:00:55 UTC at least (renewed while the cause lasts)")
    assert back_off_text(ThrottleStatus(back_off="latency-back-off")) == (
        "latency-back-off: the produce latency is past its limit; the rates Ballast sets stay at the floor")
    assert back_off_text(ThrottleStatus()) is None
    assert lagging_text(moving()) == "2 partition(s) outside the moves out of their ISR: orders-0, clicks-3"
    many = ThrottleStatus(lagging_partitions=[f"t-{p}" for p in range(13)])
    assert lagging_text(many) == ("13 partition(s) outside the moves out of their ISR: t-0, t-1, t-2, t-3, t-4, t-5, "
                                  "t-6, t-7, t-8, t-9 and 3 more")
    assert lagging_text(ThrottleStatus()) is None


def test_the_lines_under_the_tables() -> None:
    assert status_lines(moving(), NOW) == [
        ("moves", "12 partition(s) moving between brokers, 2 replica(s) between log directories"),
        ("traffic", "cruise-control (figures 4.2 s old when the rates were computed)"),
        ("back-off", back_off_text(moving())),
        ("lagging", "2 partition(s) outside the moves out of their ISR: orders-0, clicks-3"),
        ("message", "moves in flight"),
        ("updated", "2026-05-10 12:00:27 UTC (3 s ago)")]
    idle = ThrottleStatus(message="no moves in flight", latency_p99_ms=12.25, updated_at=NOW - timedelta(hours=3))
    assert dict(status_lines(idle, NOW)) == {
        "moves": "no moves in flight", "traffic": traffic_text(idle), "back-off": "none",
        "latency p99": "12.2 ms", "message": "no moves in flight", "updated": "2026-05-10 09:00:30 UTC (3.0 h ago)"}


def _rendered(*renderables: object) -> str:
    console = Console(width=200, record=True, file=io.StringIO())
    console.print(*renderables)
    return console.export_text()


def test_the_table_form_of_a_status() -> None:
    text = _rendered(Group(*status_renderables(moving(), NOW)))
    assert "Throttles per broker" in text and "Log directories taking part" in text
    assert "3.2 MB/s" in text and "isr-back-off" in text and "/data-1" in text
    assert "cruise-control (figures 4.2 s old" in text and "moves in flight" in text
    bare = _rendered(Group(*status_renderables(ThrottleStatus(message="no moves in flight"), NOW)))
    assert "no broker takes part in a move" in bare and "Log directories" not in bare


def test_the_json_form_is_the_event_with_raw_integers(capsys: pytest.CaptureFixture[str]) -> None:
    emit([moving()], Output.json, lambda: "")
    (line,) = capsys.readouterr().out.splitlines()
    document = json.loads(line)
    assert document["brokers"][0] == {"broker": 10, "kind": "inter-broker", "bytesPerS": 1_000_000,
                                      "owner": "ballast", "reason": "isr-back-off", "capacityBytesPerS": 125_000_000,
                                      "liveBytesPerS": 60_000_000, "headroomBytesPerS": 65_000_000}
    assert document["backOff"] == "isr-back-off" and document["trafficAgeS"] == 4.2
    assert ThrottleStatus.model_validate(document) == moving()


def changed(broker: int, old: int | None, new: int | None, reason: ThrottleReason = "headroom", detail: str = "",
            seconds: int = 0) -> ThrottleRateChanged:
    return ThrottleRateChanged(broker=broker, kind="inter-broker", from_bytes_per_s=old, to_bytes_per_s=new,
                               reason=reason, detail=detail, at=NOW + timedelta(seconds=seconds))


def test_a_change_as_a_row_and_as_a_line() -> None:
    assert len(CHANGE_COLUMNS) == 6
    assert change_row(changed(1, None, 1_000_000)) == ("2026-05-10 12:00:30", "1", "inter-broker",
                                                       "none -> 1.0 MB/s", "headroom", "")
    assert change_row(changed(3, 8_000_000, 1_000_000, "isr-back-off"))[3] == "8.0 MB/s -> 1.0 MB/s"
    assert change_line(changed(1, 1_000_000, 3_200_000)) == (
        "2026-05-10 12:00:30  broker 1    inter-broker  1.0 MB/s -> 3.2 MB/s      headroom")
    assert change_line(changed(5, 2_000_000, None, "leftover", "set before a restart")) == (
        "2026-05-10 12:00:30  broker 5    inter-broker  2.0 MB/s -> none          leftover  set before a restart")
    text = _rendered(changes_table([changed(1, None, 1_000_000), changed(1, 1_000_000, 3_200_000, seconds=5)]))
    assert "none -> 1.0 MB/s" in text and "1.0 MB/s -> 3.2 MB/s" in text
    assert "no rate changed yet" in _rendered(changes_table([]))


def test_times_are_said_in_utc() -> None:
    elsewhere = changed(1, None, 1).model_copy(update={"at": datetime(2026, 5, 10, 16, 0, 30,
                                                                      tzinfo=timezone(timedelta(hours=2)))})
    assert change_row(elsewhere)[0] == "2026-05-10 14:00:30"


@pytest.fixture
def runner(monkeypatch: pytest.MonkeyPatch) -> CliRunner:
    # A bus nobody listens on, so the root's options do not pick up a running stack's settings: --help asks nothing.
    monkeypatch.setenv("BALLAST_BUS__BOOTSTRAP_SERVERS", "127.0.0.1:1")
    return CliRunner()


def test_the_group_is_registered_with_its_commands(runner: CliRunner) -> None:
    result = runner.invoke(app, ["throttle", "--help"])
    assert result.exit_code == 0, result.output
    said = " ".join(result.output.split())
    assert "ballast run throttle" in said and "status" in said and "changes" in said
    assert "throttle" in runner.invoke(app, ["--help"]).output


def test_status_help(runner: CliRunner) -> None:
    result = runner.invoke(app, ["throttle", "status", "--help"])
    assert result.exit_code == 0, result.output
    said = " ".join(result.output.split())  # as wrapped for the terminal's width
    for words in ("--output", "--json", "headroom", "back-off", "traffic source", "Exit 1"):
        assert words in said, words


def test_changes_help(runner: CliRunner) -> None:
    result = runner.invoke(app, ["throttle", "changes", "--help"])
    assert result.exit_code == 0, result.output
    said = " ".join(result.output.split())  # as wrapped for the terminal's width
    for words in ("--follow", "--output", "--json", "old -> new rate", "isr-back-off", "moves-ended"):
        assert words in said, words


def test_status_before_the_controller_has_published_says_so(runner: CliRunner,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(busio, "latest", lambda bus, topic, timeout_s: {})
    result = runner.invoke(app, ["throttle", "status"])
    assert result.exit_code == 1
    said = " ".join(result.output.split())
    assert said.startswith("error: no throttle status yet: the throttle controller (`ballast run throttle`) has not "
                           "published one"), said


def test_status_and_changes_for_scripts_are_one_json_document_a_line(runner: CliRunner,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[tuple[str, bool]] = []

    def events(bus: object, topic: BusTopic[ThrottleRateChanged], *, follow: bool) -> list[ThrottleRateChanged]:
        asked.append((topic.name, follow))
        return [changed(1, 1_000_000, 3_200_000, seconds=5), changed(1, None, 1_000_000)]  # two partitions' order

    monkeypatch.setattr(busio, "latest", lambda bus, topic, timeout_s: {"cluster": moving()})
    monkeypatch.setattr(busio, "events", events)
    status = runner.invoke(app, ["throttle", "status", "-o", "json"])
    assert status.exit_code == 0, status.output
    assert [json.loads(line)["movingPartitions"] for line in status.output.splitlines()] == [12]
    changes = runner.invoke(app, ["throttle", "changes", "--json"])
    assert changes.exit_code == 0, changes.output
    assert [(d["fromBytesPerS"] if "fromBytesPerS" in d else None, d["toBytesPerS"])
            for d in map(json.loads, changes.output.splitlines())] == [(None, 1_000_000), (1_000_000, 3_200_000)]
    followed = runner.invoke(app, ["throttle", "changes", "--follow"])
    assert followed.exit_code == 0, followed.output
    assert followed.output.splitlines() == [  # as they come, in the bus's order
        change_line(changed(1, 1_000_000, 3_200_000, seconds=5)), change_line(changed(1, None, 1_000_000))]
    assert asked == [(TOPICS.throttle_changes.name, False), (TOPICS.throttle_changes.name, True)]
