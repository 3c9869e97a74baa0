"""The contract of a replication-factor change, shared by the topic reconciler (which predicts it, for its status)
and the replicas-change service (which applies it): what a command does to a topic's change record, and which
change is still in flight. One home, so the prediction and the service cannot disagree."""

from __future__ import annotations

from datetime import datetime

from events import ReplicasChangeCommand, ReplicasChangeRecord, ReplicasChangeState

PENDING, ONGOING, COMPLETED = ReplicasChangeState.PENDING, ReplicasChangeState.ONGOING, ReplicasChangeState.COMPLETED


def on_command(current: ReplicasChangeRecord | None, command: ReplicasChangeCommand, now: datetime,
               actual_rf: int | None) -> ReplicasChangeRecord | None:
    """A new desired RF for one topic. Returns the new record, or None when nothing changes (a duplicate)."""
    target = command.target_replicas
    if current is not None and current.target_replicas == target and current.state in (PENDING, ONGOING):
        return None
    if current is not None and current.state == ONGOING:
        # Cruise Control is executing the previous target; remember the new one. When that task ends, the RF is
        # compared with this target and the change is resubmitted if they differ.
        return current.model_copy(update={"target_replicas": target, "generation": command.generation,
                                          "updated_at": now})
    if actual_rf == target:
        if current is not None and current.state == COMPLETED and current.target_replicas == target:
            return None
        return ReplicasChangeRecord(topic=command.topic, state=COMPLETED, target_replicas=target,
                                    generation=command.generation, updated_at=now)
    return ReplicasChangeRecord(topic=command.topic, state=PENDING, target_replicas=target,
                                generation=command.generation, updated_at=now)


def in_flight(change: ReplicasChangeRecord | None, target: int) -> bool:
    """A change to this target is pending or executing: the topic reconciler does not ask for it again."""
    return (change is not None and change.target_replicas == target
            and change.state in (PENDING, ONGOING))


def in_flight_elsewhere(change: ReplicasChangeRecord | None, target: int) -> bool:
    """A change to another target is pending or executing (the spec was reverted while it runs)."""
    return (change is not None and change.target_replicas != target
            and change.state in (PENDING, ONGOING))
