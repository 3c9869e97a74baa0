"""The replicas-change service's shell driven through its ports without a broker: commands handed to its handler,
its timers' steps called directly, Cruise Control and the cluster the simulator, the bus an in-memory outbox."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from events import TOPICS, ReplicasChangeCommand, ReplicasChangeRecord
from services.cluster_sim.app import Simulator
from services.adapters.cruise_control import CruiseControlClient
from services.common.outbox import MemoryOutbox
from services.common.settings import CruiseControlSettings, ReplicasChangeSettings, Settings
from services.replicas_change.app import ReplicasChangeService
from services.replicas_change.changes import ReplicasChanges
from tests.unit.records import Message, Record, record
from tests.unit.simulated import FOUR_BROKERS, simulated_cluster


@pytest.fixture
async def service(tmp_path: Path) -> AsyncIterator[tuple[ReplicasChanges, MemoryOutbox, Simulator]]:
    async with simulated_cluster(brokers=FOUR_BROKERS, min_execution_s=0.1, proposal_s=0.01) as cluster:
        for name in ("a", "b"):
            await cluster.admin.create_topic(name, 2, 2)
        outbox = MemoryOutbox()
        settings = Settings(data_dir=tmp_path, replicas_change=ReplicasChangeSettings(batch_quiet_s=0.01,
                                                                                    batch_window_s=0.01))
        changes = ReplicasChangeService(settings, admin=cluster.admin, cruise_control=cluster.cruise_control(),
                                        outbox=outbox).changes
        await changes.rebuild()
        yield changes, outbox, cluster.simulator


def latest(outbox: MemoryOutbox) -> dict[str, ReplicasChangeRecord]:
    return {r.topic: r for r in outbox.on(TOPICS.replicas_state) if isinstance(r, ReplicasChangeRecord)}


async def test_commands_go_to_cruise_control_in_one_request_and_complete(service) -> None:
    changes, outbox, simulator = service
    await changes.on_command_events([
        record(TOPICS.replicas_commands, ReplicasChangeCommand(topic=t, target_replicas=3, generation=2), i)
        for i, t in enumerate(("a", "b"))])
    assert {t: r.state for t, r in latest(outbox).items()} == {"a": "pending", "b": "pending"}
    await asyncio.sleep(0.02)
    await changes.submit_due()
    submitted = latest(outbox)
    assert {r.state for r in submitted.values()} == {"ongoing"}
    assert submitted["a"].session_id == submitted["b"].session_id, "one request for both"
    for _ in range(50):
        await changes.poll()
        if {r.state for r in latest(outbox).values()} == {"completed"}:
            break
        await asyncio.sleep(0.05)
    assert {r.state for r in latest(outbox).values()} == {"completed"}
    assert all(len(p.replicas) == 3 for t in ("a", "b") for p in simulator.cluster.topics[t].partitions)


async def test_a_command_that_is_not_one_is_a_dead_letter(service) -> None:
    changes, outbox, _ = service
    await changes.on_command_events([Record(b"a", b'{"schema": "ballast.TopicSpec"}', Message("x", 0))])
    (letter,) = outbox.on(TOPICS.dead_letters)
    assert "invalid envelope" in letter.reason and latest(outbox) == {}


@pytest.mark.parametrize("where", ["batches topic", "state topic (an earlier release)"])
async def test_a_batch_left_open_by_a_crash_is_settled_from_cruise_controls_tasks(service, where: str) -> None:
    from events import ReplicasChangeBatch
    from services.replicas_change.changes import LEGACY_BATCHES

    changes, outbox, _ = service
    # A request that reached Cruise Control (reason = batch id) before the service could record its task id.
    sent = await changes.cc.topic_configuration({3: ["a"]}, dryrun=False, reason="ballast-crashed")
    outbox.put(TOPICS.replicas_state, ReplicasChangeRecord(topic="a", state="pending", target_replicas=3,
                                                           generation=2))
    batch = ReplicasChangeBatch(batch_id="ballast-crashed", topics=["a"])
    outbox.put(TOPICS.replicas_batches if where == "batches topic" else LEGACY_BATCHES, batch)
    await changes.rebuild()
    assert changes.records["a"].state == "ongoing" and changes.records["a"].session_id == sent.task_id
    assert outbox.on(TOPICS.replicas_batches)[-1].open is False, "settled: nothing is in doubt any more"


class WithoutTaskId(httpx.AsyncBaseTransport):
    """Forwards to Cruise Control, then loses the User-Task-ID of topic_configuration's answers: Cruise Control took
    the request, but its answer cannot tell the service which task it made (a proxy in between, say)."""

    def __init__(self) -> None:
        self._real = httpx.AsyncHTTPTransport()

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        response = await self._real.handle_async_request(request)
        if request.url.path.endswith("/topic_configuration"):
            await response.aread()
            return httpx.Response(response.status_code, content=response.content,
                                  headers={k: v for k, v in response.headers.items() if k.lower() != "user-task-id"})
        return response

    async def aclose(self) -> None:
        await self._real.aclose()


def _submissions(simulator: Simulator) -> int:
    return sum(1 for t in simulator.cruise_control.tasks.all() if t.endpoint == "topic_configuration")


async def _finish(changes: ReplicasChanges, outbox: MemoryOutbox) -> None:
    for _ in range(100):
        await changes.submit_due()
        await changes.poll()
        if {r.state for r in latest(outbox).values()} == {"completed"}:
            return
        await asyncio.sleep(0.05)
    raise AssertionError(latest(outbox))


async def test_an_unreadable_answer_that_was_taken_is_found_by_its_reason_and_not_sent_twice(service) -> None:
    changes, outbox, simulator = service
    changes.cc = CruiseControlClient(CruiseControlSettings(port=simulator.settings.cruise_control_port),
                                     transport=WithoutTaskId())
    await changes.on_command_events([record(TOPICS.replicas_commands, ReplicasChangeCommand(
        topic="a", target_replicas=3, generation=2), 0)])
    await asyncio.sleep(0.02)
    await changes.submit_due()
    (doubt,) = latest(outbox).values()
    assert doubt.state == "pending" and doubt.batch_id is not None
    assert doubt.message.startswith("Cruise Control accepted the request but sent no User-Task-ID header; looking up")
    await changes.submit_due()
    assert _submissions(simulator) == 1, "in doubt: not sent again"
    await changes.poll()
    found = latest(outbox)["a"]
    # Found by its reason: ongoing under its task's id, or already completed when the simulator's 0.1 s execution
    # ended before this poll (a loaded machine); either way no longer in doubt.
    assert found.message is None and (found.state == "completed" or (found.state == "ongoing"
                                                                      and found.session_id is not None)), found
    await _finish(changes, outbox)
    assert _submissions(simulator) == 1
    assert outbox.on(TOPICS.replicas_batches)[-1].open is False
    await changes.cc.aclose()


async def test_an_unreadable_answer_to_a_request_not_taken_sends_it_again(service) -> None:
    changes, outbox, simulator = service
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{simulator.settings.admin_port}") as sim:
        (await sim.post("/faults/errors", json={"endpoint": "topic_configuration", "status": 200,
                                                "message": "not what a client expects", "count": 1})).raise_for_status()
    await changes.on_command_events([record(TOPICS.replicas_commands, ReplicasChangeCommand(
        topic="a", target_replicas=3, generation=2), 0)])
    await asyncio.sleep(0.02)
    await changes.submit_due()
    assert latest(outbox)["a"].batch_id is not None
    await changes.poll()  # no task carries the batch id: pending again, and sent at the next tick
    assert latest(outbox)["a"].state == "pending" and latest(outbox)["a"].batch_id is None
    await _finish(changes, outbox)
    assert all(len(p.replicas) == 3 for p in simulator.cluster.topics["a"].partitions)
