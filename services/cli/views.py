"""How statuses look to a person: one line per transition, and a table."""

from __future__ import annotations

from rich.table import Table

from events import TopicStatus


def change_text(status: TopicStatus) -> str:
    change = status.replicas_change
    if change is None:
        return "-"
    text = f"{change.state} -> RF {change.target_replicas}"
    if change.session_id:
        text += f" (session {change.session_id[:8]})"
    return text


def transition_line(status: TopicStatus, previous: TopicStatus | None) -> str:
    parts = [f"{status.topic:<24}"]
    if status.deleted:
        parts.append("deleted")
    else:
        parts.append("ready" if status.ready else "not ready")
        parts.append(f"RF {status.replicas if status.replicas is not None else '?'}")
        parts.append(f"partitions {status.partitions if status.partitions is not None else '?'}")
    if status.replicas_change is not None:
        parts.append(f"replicasChange {change_text(status)}")
        if status.replicas_change.message:
            parts.append(f"message: {status.replicas_change.message}")
    for condition in status.conditions:
        if condition.type != "Ready" or condition.status != "True":
            if previous is None or previous.condition(condition.type) != condition:
                note = f"[{condition.type}={condition.status}]"
                if condition.message:
                    note += f" {condition.message}"
                parts.append(note)
    return "  ".join(parts)


def status_table(statuses: list[TopicStatus], title: str = "Topics") -> Table:
    table = Table(title=title)
    for column in ("topic", "ready", "partitions", "RF", "replicas change", "notes", "generation"):
        table.add_column(column, overflow="fold")
    for s in sorted(statuses, key=lambda s: s.topic):
        notes = [s.replicas_change.message] if s.replicas_change and s.replicas_change.message else []
        notes += [c.reason or c.type for c in s.conditions if c.type != "Ready" and c.status == "True"]
        message = ", ".join(n for n in notes if n)
        table.add_row(s.topic, "deleted" if s.deleted else ("yes" if s.ready else "no"),
                      str(s.partitions if s.partitions is not None else "-"),
                      str(s.replicas if s.replicas is not None else "-"), change_text(s), message,
                      f"{s.observed_generation}/{s.generation}")
    return table
