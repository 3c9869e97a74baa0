"""The simulator's user tasks are kept as Cruise Control keeps them: completed ones up to a cache size (issue 52: kept
without a bound, with answers the size of the cluster, they held more than a gigabyte at 100,000 topics)."""

from __future__ import annotations

from dataclasses import dataclass

from services.cluster_sim import user_tasks
from services.cluster_sim.user_tasks import UserTaskManager, request_key


@dataclass
class Limits:
    max_active_user_tasks: int = 1000
    task_scanner_period_s: float = 5.0
    session_expiry_s: float = 60.0


def test_only_the_newest_completed_tasks_are_kept_with_their_answers() -> None:
    now = [0.0]
    tasks = UserTaskManager(Limits(), clock=lambda: now[0])
    made = []
    for i in range(user_tasks.MAX_CACHED_COMPLETED + 5):
        task = tasks.create("partition_load", request_key("GET", "partition_load", {"n": [str(i)]}), f"GET /{i}",
                            "127.0.0.1", "s", asynchronous=True)
        task.finish(200, {"records": [i]}, now[0])
        made.append(task)
        now[0] += 5.0  # a scanner run: the task completes
    tasks.scan()
    assert list(tasks.completed) == [t.id for t in made[-user_tasks.MAX_CACHED_COMPLETED:]]
    assert tasks.get(made[0].id) is None
    assert tasks.get(made[-1].id).answer == (200, {"records": [len(made) - 1]})
