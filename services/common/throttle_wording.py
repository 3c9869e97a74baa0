"""How the throttle controller's status and changes are said in words: the texts the CLI (``ballast throttle``) and
the dashboard both show, plain functions of the events."""

from __future__ import annotations

from datetime import UTC, datetime

from events import ThrottleRateChanged, ThrottleStatus

LAGGING_SHOWN = 10  # partitions named in the lagging line; the JSON output has them all


def rate_text(bytes_per_s: float | None) -> str:
    """A byte rate as a person reads it, in Kafka's (decimal) units: ``512 B/s``, ``3.2 MB/s``; ``-`` for none."""
    if bytes_per_s is None:
        return "-"
    if abs(bytes_per_s) < 1000:
        return f"{bytes_per_s:.0f} B/s"
    value = float(bytes_per_s)
    for unit in ("kB/s", "MB/s", "GB/s"):
        value /= 1000
        if round(abs(value), 1) < 1000:
            return f"{value:.1f} {unit}"
    return f"{value / 1000:,.1f} TB/s"


def _utc(at: datetime) -> datetime:
    return at.astimezone(UTC) if at.tzinfo is not None else at.replace(tzinfo=UTC)


def _ago(at: datetime, now: datetime) -> str:
    seconds = max(0.0, (now - _utc(at)).total_seconds())
    if seconds < 120:
        return f"{seconds:.0f} s ago"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min ago"
    return f"{seconds / 3600:.1f} h ago"


def broker_rows(status: ThrottleStatus) -> list[tuple[str, ...]]:
    """One row per broker and kind, by broker then kind: broker, kind, rate, owner, reason, capacity, live, headroom."""
    return [(str(b.broker), b.kind, rate_text(b.bytes_per_s), b.owner, b.reason, rate_text(b.capacity_bytes_per_s),
             rate_text(b.live_bytes_per_s), rate_text(b.headroom_bytes_per_s))
            for b in sorted(status.brokers, key=lambda b: (b.broker, b.kind))]


def log_dir_rows(status: ThrottleStatus) -> list[tuple[str, ...]]:
    """One row per log directory taking part in a move between directories: broker, path, capacity, live, headroom."""
    return [(str(d.broker), d.log_dir, rate_text(d.capacity_bytes_per_s), rate_text(d.live_bytes_per_s),
             rate_text(d.headroom_bytes_per_s))
            for d in sorted(status.log_dirs, key=lambda d: (d.broker, d.log_dir))]


def moves_text(status: ThrottleStatus) -> str:
    if not status.moving_partitions and not status.moving_log_dirs:
        return "no moves in flight"
    return (f"{status.moving_partitions} partition(s) moving between brokers, {status.moving_log_dirs} replica(s) "
            "between log directories")


def traffic_text(status: ThrottleStatus) -> str:
    """Where the live traffic figures came from, and how old they were when the rates were computed."""
    if status.traffic_source == "none":
        return "none (no live traffic figures: the rates Ballast sets stay at the floor)"
    if status.traffic_age_s is None:
        return status.traffic_source
    return f"{status.traffic_source} (figures {status.traffic_age_s:.1f} s old when the rates were computed)"


def back_off_text(status: ThrottleStatus) -> str | None:
    """The back-off in force, or None."""
    if status.back_off is None:
        return None
    cause = ("a partition outside the moves is out of its ISR" if status.back_off == "isr-back-off"
             else "the produce latency is past its limit")
    text = f"{status.back_off}: {cause}; the rates Ballast sets stay at the floor"
    if status.back_off_until is not None:
        text += f" until {_utc(status.back_off_until):%H:%M:%S} UTC at least (renewed while the cause lasts)"
    return text


def lagging_text(status: ThrottleStatus) -> str | None:
    lagging = status.lagging_partitions
    if not lagging:
        return None
    shown = ", ".join(lagging[:LAGGING_SHOWN])
    more = f" and {len(lagging) - LAGGING_SHOWN} more" if len(lagging) > LAGGING_SHOWN else ""
    return f"{len(lagging)} partition(s) outside the moves out of their ISR: {shown}{more}"


def status_lines(status: ThrottleStatus, now: datetime) -> list[tuple[str, str]]:
    """Everything the status says besides its tables, as (label, text)."""
    lines = [("moves", moves_text(status)), ("traffic", traffic_text(status)),
             ("back-off", back_off_text(status) or "none")]
    if (lagging := lagging_text(status)) is not None:
        lines.append(("lagging", lagging))
    if status.latency_p99_ms is not None:
        lines.append(("latency p99", f"{status.latency_p99_ms:,.1f} ms"))
    if status.message:
        lines.append(("message", status.message))
    lines.append(("updated", f"{_utc(status.updated_at):%Y-%m-%d %H:%M:%S} UTC ({_ago(status.updated_at, now)})"))
    return lines


def change_text(change: ThrottleRateChanged) -> str:
    """``1.0 MB/s -> 3.2 MB/s``; ``none`` where no rate was (or is) set."""
    def rate(value: int | None) -> str:
        return "none" if value is None else rate_text(value)

    return f"{rate(change.from_bytes_per_s)} -> {rate(change.to_bytes_per_s)}"


def change_row(change: ThrottleRateChanged) -> tuple[str, ...]:
    """One change as a row: time (UTC), broker, kind, from -> to, reason, detail."""
    return (f"{_utc(change.at):%Y-%m-%d %H:%M:%S}", str(change.broker), change.kind, change_text(change), change.reason,
            change.detail)


def change_line(change: ThrottleRateChanged) -> str:
    """One change on one line (``changes --follow``)."""
    at, broker, kind, rates, reason, detail = change_row(change)
    line = f"{at}  broker {broker:<4} {kind:<12}  {rates:<24}  {reason}"
    return f"{line}  {detail}" if detail else line


# -- tables ---------------------------------------------------------------------------------------------------------
