"""What both services read from Cruise Control's tasks, and the one backoff rule they retry by."""

from __future__ import annotations

from datetime import timedelta

from services.adapters.cruise_control.models import UserTask
from services.common.retry import backoff


def task(url: str | None) -> UserTask:
    return UserTask.model_validate({"UserTaskId": "t", "Status": "Active", "StartMs": "1", "RequestURL": url})


def test_a_task_is_found_by_the_exact_reason_its_request_carried() -> None:
    assert task("POST /kafkacruisecontrol/rebalance?dryrun=false&reason=ballast-1a&json=true").reason() == "ballast-1a"
    # A substring match took the task of "ballast-1ab" for the request of "ballast-1a".
    assert task("/kafkacruisecontrol/rebalance?reason=ballast-1ab").reason() != "ballast-1a"
    assert task("/kafkacruisecontrol/rebalance?reason=a%20b").reason() == "a b"
    assert task("/kafkacruisecontrol/state").reason() is None and task(None).reason() is None


def test_backoff_doubles_from_the_initial_delay_up_to_the_cap() -> None:
    delays = [backoff(n, initial_s=0.5, max_s=3) for n in range(0, 6)]
    assert delays == [timedelta(seconds=s) for s in (0.5, 0.5, 1, 2, 3, 3)]


def test_only_a_refusal_of_the_request_itself_is_permanent() -> None:
    from services.adapters.cruise_control.errors import classify

    assert not classify(400, "Bad POST request '/rebalance' due to 'x'.").temporary
    assert not classify(500, "Error processing POST request '/add_broker' due to: 'Broker [9] does not exist.'.").temporary
    for temporary in (classify(401, ""), classify(500, "NotEnoughValidWindowsException: ..."),
                      classify(500, "OngoingExecutionException: ..."),
                      classify(500, "There are already 5 active user tasks, which has reached the servlet capacity.")):
        assert temporary.temporary, temporary
