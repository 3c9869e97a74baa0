"""Pure reconciliation logic of replication-factor changes. No I/O: every function takes the current records (and
what Cruise Control or the cluster said) and returns the records that changed.

States (seed 000): pending -> ongoing(sessionId) -> completed; a failure is pending again with a message and a retry
time. The rules that Strimzi's implementation gets wrong, and this one must not (reference/strimzi.md):
- a sessionId missing from a user_tasks answer means that task is gone, even if other tasks were returned;
- each record keeps its own sessionId; polling several tasks together never relabels one with another's;
- a failed poll changes nothing (the sessionId is never dropped because Cruise Control was unreachable).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Iterable, Mapping
from datetime import datetime, timedelta
from enum import StrEnum
from urllib.parse import quote

from events import ReplicasChangeBatch, ReplicasChangeRecord, ReplicasChangeState
from services.adapters.cruise_control.topic_names import all_topics_but
from services.adapters.cruise_control.models import TaskStatus, UserTask
from services.common.retry import backoff

PENDING, ONGOING, COMPLETED = ReplicasChangeState.PENDING, ReplicasChangeState.ONGOING, ReplicasChangeState.COMPLETED

Records = Mapping[str, ReplicasChangeRecord]


class TaskOutcome(StrEnum):
    PENDING = "pending"  # task unknown to Cruise Control: never sent, or forgotten by a restart
    ONGOING = "ongoing"  # Active or InExecution
    COMPLETED = "completed"
    FAILED = "failed"  # CompletedWithError


def task_outcome(task: UserTask | None) -> TaskOutcome:
    if task is None:
        return TaskOutcome.PENDING
    return {
        TaskStatus.ACTIVE: TaskOutcome.ONGOING,
        TaskStatus.IN_EXECUTION: TaskOutcome.ONGOING,
        TaskStatus.COMPLETED: TaskOutcome.COMPLETED,
        TaskStatus.COMPLETED_WITH_ERROR: TaskOutcome.FAILED,
    }[task.status]


def _update(record: ReplicasChangeRecord, now: datetime, **fields: object) -> ReplicasChangeRecord:
    return record.model_copy(update={**fields, "updated_at": now})


def due_for_submission(records: Records, now: datetime, *,
                       ended_sessions: Collection[str] = ()) -> list[ReplicasChangeRecord]:
    """Pending changes whose retry time has come, unless one of our tasks is still executing.

    Cruise Control runs one execution at a time; a request sent while ours executes would only fail with
    OngoingExecutionException. Holding the batch until then lets it grow into one request. ``ended_sessions``: tasks
    a poll has just seen end, whose changes are still recorded ongoing; they no longer hold the batch back."""
    if any(r.state == ONGOING and r.session_id not in ended_sessions for r in records.values()):
        return []
    return [
        r for r in records.values()
        if r.state == PENDING and r.batch_id is None and (r.next_attempt_at is None or r.next_attempt_at <= now)
    ]


def ended_sessions(sessions: Iterable[str], tasks: Mapping[str, UserTask]) -> set[str]:
    """The sessions whose task is no longer Active or InExecution (ended, or forgotten by Cruise Control)."""
    return {s for s in sessions if task_outcome(tasks.get(s)) != TaskOutcome.ONGOING}


def _waiting_since(record: ReplicasChangeRecord) -> datetime:
    if record.next_attempt_at is not None and record.next_attempt_at > record.updated_at:
        return record.next_attempt_at
    return record.updated_at


def batch_ready(due: Iterable[ReplicasChangeRecord], now: datetime, *, quiet: timedelta, window: timedelta) -> bool:
    """Whether a batch of due changes should be sent now rather than left to grow.

    A burst of specs reaches this service over several stream batches; sending at the first timer tick would split
    it into several requests, and Cruise Control runs only one of them at a time. So the batch goes when the burst
    has gone quiet, or when its oldest change has waited the whole window."""
    since = [_waiting_since(r) for r in due]
    if not since:
        return False
    return now - max(since) >= quiet or now - min(since) >= window


# The batch record lists the request's topics and must fit on the bus (events.limits): ~900 KB of names.
MAX_BATCH_NAME_BYTES = 800_000


def fit_in_one_request(due: list[ReplicasChangeRecord], *, url_bytes: int | None = None
                       ) -> list[ReplicasChangeRecord]:
    """As many of the due changes as one request (and the record of it) can carry; the rest go in the next.
    ``url_bytes``: the request names its topics in its URL too (a batch-scoped one's ``excluded_topics``), at most
    this many bytes of them (Cruise Control's web server bounds a request's headers, 8 KB by default)."""
    taken, size = [], 0
    for record in sorted(due, key=lambda r: r.topic):
        size += len(record.topic.encode()) + 3
        if size > MAX_BATCH_NAME_BYTES and taken:
            break
        taken.append(record)
    if url_bytes is None:
        return taken
    # The compact regex is not additive in its names: guess from the last size how many fit, until they do (sorted
    # names share prefixes, so a run of them compresses about as well as the whole).
    while len(taken) > 1 and (size := exclusion_url_bytes(r.topic for r in taken)) > url_bytes:
        taken = taken[:max(1, min(len(taken) - 1, int(len(taken) * url_bytes / size * 0.95)))]
    return taken


def exclusion_url_bytes(topics: Iterable[str]) -> int:
    """How many bytes of URL a batch-scoped request's ``excluded_topics`` takes."""
    return len(quote(all_topics_but(topics), safe=""))


def optimization_params(topics: Iterable[str], *, scope: str, goals: list[str], rack_enabled: bool
                        ) -> dict[str, object]:
    """What Cruise Control may move for a request changing ``topics`` (``ReplicasChangeSettings.optimization_scope``):
    with ``batch``, only their partitions: every other topic excluded from the optimization it runs after adding or
    dropping replicas, and only the placement goals (rack awareness where the cluster has racks, so a new replica
    lands on a rack the partition does not use yet); with ``cluster``, Cruise Control's full optimization."""
    if scope == "cluster":
        return {}
    chosen = goals or (["RackAwareGoal"] if rack_enabled else ["ReplicaCapacityGoal"])
    return {"goals": chosen, "skip_hard_goal_check": True, "excluded_topics": all_topics_but(topics)}


def group_by_target(records: Iterable[ReplicasChangeRecord]) -> dict[int, list[str]]:
    groups: dict[int, list[str]] = defaultdict(list)
    for record in records:
        groups[record.target_replicas].append(record.topic)
    return {rf: sorted(topics) for rf, topics in sorted(groups.items())}


def mark_submitting(records: Iterable[ReplicasChangeRecord], batch_id: str, now: datetime) -> list[ReplicasChangeRecord]:
    """The changes a request is about to carry (kept in memory; the ReplicasChangeBatch written before the request
    is what a restart finds)."""
    return [_update(r, now, batch_id=batch_id) for r in records]


def reopen_batch(records: Records, batch: ReplicasChangeBatch) -> list[ReplicasChangeRecord]:
    """After a restart, a batch still open: its request may or may not have reached Cruise Control. Its changes
    that are still pending are in doubt (``recover_in_doubt`` settles them)."""
    if not batch.open:
        return []
    return [r.model_copy(update={"batch_id": batch.batch_id}) for topic in batch.topics
            if (r := records.get(topic)) is not None and r.state == PENDING and r.batch_id is None]


def on_submitted(records: Records, topics: Iterable[str], session_id: str, now: datetime) -> list[ReplicasChangeRecord]:
    changed = []
    for topic in topics:
        record = records.get(topic)
        if record is not None and record.state == PENDING:
            changed.append(_update(record, now, state=ONGOING, session_id=session_id, batch_id=None, message=None,
                                   group=None))
    return changed


def on_submit_failed(records: Records, topics: Iterable[str], message: str, now: datetime, *,
                     initial_s: float, max_s: float, steady: bool = False) -> list[ReplicasChangeRecord]:
    """A request that failed for a temporary reason: its changes stay pending with the message, retried with
    backoff (``steady``: at the first step each time, while Cruise Control warms up: it is ready within minutes)."""
    changed = []
    for topic in topics:
        record = records.get(topic)
        if record is None or record.state != PENDING:
            continue
        attempts = record.attempts if steady else record.attempts + 1
        changed.append(_update(record, now, message=message, attempts=attempts, batch_id=None,
                               next_attempt_at=now + backoff(max(1, attempts) if not steady else 1,
                                                             initial_s=initial_s, max_s=max_s)))
    return changed


def said_already(records: Records, changed: Iterable[ReplicasChangeRecord]) -> bool:
    """Whether every changed record says what its last one said, with the same attempts: only its retry time moved,
    which is no news for the bus."""
    return all((old := records.get(r.topic)) is not None and (old.message, old.attempts) == (r.message, r.attempts)
               for r in changed)


def on_unreachable(records: Records, message: str, now: datetime) -> list[ReplicasChangeRecord]:
    """Cruise Control cannot be asked about our executing task, so pending changes wait behind it without a request
    of their own to fail: say why they wait (once, not at every poll)."""
    if not any(r.state == ONGOING for r in records.values()):
        return []  # pending changes make their own requests, whose failures carry the message
    waiting = f"waiting for the ongoing task; {message}"
    return [_update(r, now, message=waiting) for r in records.values()
            if r.state == PENDING and r.batch_id is None and r.message != waiting]


def waiting_behind_our_execution(records: Iterable[ReplicasChangeRecord]) -> bool:
    """Changes wait for Ballast's own executing task to end (Cruise Control runs one execution at a time): the
    service then looks more often, so they go as soon as it does."""
    records = list(records)
    return any(r.state == ONGOING for r in records) and any(r.state == PENDING and r.batch_id is None for r in records)


def in_doubt(records: Records, topics: Iterable[str], message: str, now: datetime) -> list[ReplicasChangeRecord]:
    """A request whose answer could not be read: its changes stay pending with the batch id, not sent again until
    ``recover_in_doubt`` has looked their task up."""
    return [_update(r, now, message=f"{message}; looking up whether Cruise Control took the request")
            for topic in topics if (r := records.get(topic)) is not None and r.state == PENDING and r.batch_id]


def recover_in_doubt(records: Records, tasks: Iterable[UserTask], now: datetime) -> list[ReplicasChangeRecord]:
    """After a restart: a pending record with a batch id was being submitted when the service stopped. If Cruise
    Control knows a task whose request carried that batch id as its reason, the change is ongoing under that task;
    otherwise the request never arrived and the change is simply pending."""
    in_doubt = {r.batch_id for r in records.values() if r.batch_id}
    by_batch = {reason: task.user_task_id for task in tasks if (reason := task.reason()) in in_doubt}
    changed = []
    for record in records.values():
        if record.state != PENDING or record.batch_id is None:
            continue
        session = by_batch.get(record.batch_id)
        if session:
            changed.append(_update(record, now, state=ONGOING, session_id=session, batch_id=None, message=None))
        else:
            changed.append(_update(record, now, batch_id=None, message=None))
    return changed


def _asked_about(record: ReplicasChangeRecord, asked: Collection[str] | None) -> bool:
    """Whether a poll's answer speaks for this change: a task the request did not name (one submitted after it was
    sent) is simply not in the answer, which must not be read as Cruise Control having forgotten it."""
    return asked is None or record.state != ONGOING or record.session_id in asked


def topics_to_check(records: Records, tasks: Mapping[str, UserTask], *,
                    asked: Collection[str] | None = None) -> list[str]:
    """Topics whose actual RF a poll needs: pending ones (a revert settles them) and those whose task has ended.
    A change whose task is still Active or InExecution needs no look at the cluster. ``asked``: the sessionIds the
    user_tasks request named (default: every one held)."""
    return sorted(
        r.topic for r in records.values()
        if _asked_about(r, asked) and (
            r.state == PENDING
            or (r.state == ONGOING and task_outcome(tasks.get(r.session_id or "")) != TaskOutcome.ONGOING))
    )


def on_poll(records: Records, tasks: Mapping[str, UserTask], actual_rf: Mapping[str, int | None], now: datetime, *,
            initial_s: float, max_s: float, asked: Collection[str] | None = None) -> list[ReplicasChangeRecord]:
    """Apply one user_tasks answer (for the sessionIds in ``asked``, default every one held) and the actual RFs of
    ``topics_to_check``."""
    changed = []
    for record in records.values():
        if record.state == COMPLETED or record.topic not in actual_rf or not _asked_about(record, asked):
            continue
        actual = actual_rf.get(record.topic)
        reached = actual == record.target_replicas
        gone = actual is None and record.topic in actual_rf
        if record.state == PENDING:
            # A pending change whose RF already matches (reverted spec, or done by someone else) is complete.
            if record.batch_id is None and (reached or gone):
                message = "Topic no longer exists; nothing left to change" if gone else None
                changed.append(_update(record, now, state=COMPLETED, message=message, next_attempt_at=None))
            continue
        outcome = task_outcome(tasks.get(record.session_id or ""))
        if outcome == TaskOutcome.ONGOING:
            continue
        if gone:
            changed.append(_update(record, now, state=COMPLETED, session_id=None,
                                   message="Topic no longer exists; nothing left to change"))
        elif reached:
            changed.append(_update(record, now, state=COMPLETED, session_id=None, message=None, attempts=0,
                                   next_attempt_at=None))
        elif outcome == TaskOutcome.FAILED:
            attempts = record.attempts + 1
            changed.append(_update(record, now, state=PENDING, session_id=None, attempts=attempts,
                                   message="Replicas change completed with error",
                                   next_attempt_at=now + backoff(attempts, initial_s=initial_s, max_s=max_s)))
        elif outcome == TaskOutcome.PENDING:
            changed.append(_update(record, now, state=PENDING, session_id=None, next_attempt_at=None,
                                   message=f"Cruise Control no longer knows task {record.session_id} "
                                           "(restarted?); resubmitting"))
        else:
            # Completed, but the RF is not the target: the target changed while the task ran. Submit again.
            changed.append(_update(record, now, state=PENDING, session_id=None, message=None, next_attempt_at=None))
    return changed
