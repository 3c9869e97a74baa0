"""The topic reconciler's shell driven through its ports without a broker: specs handed to its handler as the agent
would, the bus an in-memory outbox, the cluster the simulator's admin API."""

from __future__ import annotations

import asyncio
import gc
import weakref
from collections import Counter
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from events import TOPICS, Condition, PlaceholderRecord, TopicSpec, TopicSpecDeleted, TopicStatus
from services.cluster_sim.app import Simulator
from services.adapters.admin import ClusterUnavailable, OperationRefused
from services.adapters.admin.simulator import SimulatorClusterAdmin
from services.common.outbox import MemoryOutbox
from services.common.settings import PlacementSettings, ReconcilerSettings, Settings
from services.topic_reconciler.app import TopicReconciler
from services.topic_reconciler.placing import Placing
from services.topic_reconciler.reconciler import CHUNK, Reconciler
from tests.unit.records import Message, Record, record
from tests.unit.simulated import THREE_BROKERS, simulated_cluster


@pytest.fixture
async def reconciler(tmp_path: Path) -> AsyncIterator[tuple[TopicReconciler, MemoryOutbox, Simulator]]:
    async with simulated_cluster(brokers=THREE_BROKERS) as cluster:
        outbox = MemoryOutbox()
        service = TopicReconciler(Settings(data_dir=tmp_path), admin=cluster.admin, outbox=outbox)
        await service.intake.start()
        await service.intake.handover._taking  # type: ignore[union-attr,misc]  # the first load
        yield service, outbox, cluster.simulator


def statuses(outbox: MemoryOutbox, topic: str) -> list[TopicStatus]:
    return [s for s in outbox.on(TOPICS.status) if s.topic == topic]


async def test_a_spec_creates_its_topic_and_publishes_its_status_once(reconciler) -> None:
    service, outbox, simulator = reconciler
    spec = TopicSpec(name="orders", partitions=3, replicas=2)
    await service.intake.on_spec_events([record(TOPICS.specs, spec, offset=4)])
    assert len(simulator.cluster.topics["orders"].partitions) == 3
    # Ballast's before the request goes (its status says so), then ready.
    creating, status = statuses(outbox, "orders")
    assert not creating.ready and creating.origin == "created"
    assert creating.condition("Ready").reason == "Creating"  # type: ignore[union-attr]
    assert status.ready and status.generation == 5 and status.replicas == 2 and status.origin == "created"
    assert [p.topic for p in outbox.on(TOPICS.placements)] == ["orders"]
    # Read again (after a restart of the agent, or a handover): a record older than the spec applied is skipped,
    # whatever it says.
    older = TopicSpec(name="orders", partitions=3, replicas=3)
    await service.intake.on_spec_events([record(TOPICS.specs, older, offset=3)])
    assert len(statuses(outbox, "orders")) == 2 and outbox.on(TOPICS.replicas_commands) == []


async def test_a_restart_reads_the_compacted_topics_one_at_a_time(reconciler, tmp_path, monkeypatch) -> None:
    """Issue 52: the records of the four compacted topics held at once took three times what the memory keeps of
    them, and the process kept that peak (405-412 MB after a restart at 30,000 topics, 303 MB one at a time). Each
    topic's records are dropped before the next is read, and what they say is all remembered."""
    service, outbox, simulator = reconciler
    spec = TopicSpec(name="kept", partitions=1, replicas=2)
    await service.intake.on_spec_events([record(TOPICS.specs, spec, offset=outbox.put(TOPICS.specs, spec))])
    real = outbox.read_compacted
    earlier: list[weakref.ref] = []
    held_at_once: list[int] = []

    class Records(dict):  # a plain dict cannot be weakly referenced
        pass

    async def one_at_a_time(topic, **kwargs):  # noqa: ANN001, ANN003, ANN202
        gc.collect()
        held_at_once.append(sum(1 for ref in earlier if ref() is not None))
        records = Records(await real(topic, **kwargs))
        earlier.append(weakref.ref(records))
        return records

    monkeypatch.setattr(outbox, "read_compacted", one_at_a_time)
    restarted = TopicReconciler(Settings(data_dir=tmp_path / "restarted"), admin=service.reconciler.admin,
                                outbox=outbox)
    await restarted.intake.start()
    await restarted.intake.handover._taking  # type: ignore[union-attr,misc]
    assert len(held_at_once) == 6 and held_at_once[2:] == [0, 0, 0, 0]  # the brokers' two first, then the four
    topic = restarted.reconciler.memory["kept"]
    assert topic.spec is not None and topic.status is not None and topic.status.ready and topic.status.origin == "created"


class Killed(BaseException):
    """The process dies here (kill -9): nothing after it runs, no handler sees it."""


async def test_topics_made_just_before_a_kill_stay_ballasts_after_the_restart(reconciler, tmp_path,
                                                                               monkeypatch) -> None:
    """Issue 52: killed after the cluster made a batch of topics and before their ready statuses, the restarted
    reconciler makes none of them again and keeps them its own: withdrawing their specs deletes them."""
    service, outbox, simulator = reconciler
    specs = [TopicSpec(name=f"t{i}", partitions=2, replicas=2) for i in range(3)]
    offsets = [outbox.put(TOPICS.specs, spec) for spec in specs]
    admin = service.reconciler.admin
    real = admin.create_topics

    async def made_then_killed(topics, first=None):  # noqa: ANN001, ANN202
        await real(topics, first=first)
        raise Killed

    monkeypatch.setattr(admin, "create_topics", made_then_killed)
    with pytest.raises(Killed):
        await service.intake.on_spec_events([record(TOPICS.specs, s, offset=o) for s, o in zip(specs, offsets)])
    monkeypatch.undo()
    made = {name: [p.replicas for p in topic.partitions] for name, topic in simulator.cluster.topics.items()}
    assert sorted(made) == ["t0", "t1", "t2"]

    restarted = TopicReconciler(Settings(data_dir=tmp_path / "restarted"), admin=admin, outbox=outbox)
    await restarted.intake.start()
    await restarted.intake.handover._taking  # type: ignore[union-attr,misc]  # the load, and the resync after it
    for spec in specs:
        last = statuses(outbox, spec.name)[-1]
        assert last.ready and last.origin == "created", last
    assert {name: [p.replicas for p in topic.partitions] for name, topic in simulator.cluster.topics.items()} == made
    await restarted.intake.on_spec_events([record(TOPICS.specs, TopicSpecDeleted(name=spec.name), offset=offset)
                                           for offset, spec in enumerate(specs, start=len(specs))])
    assert simulator.cluster.topics == {}


async def test_topics_made_by_a_request_whose_answer_was_lost_are_ballasts(reconciler, monkeypatch) -> None:
    """The cluster made the topics and the answer was lost (a request timed out after the controller committed it):
    the reconciler looks at once and finds them made as asked, ready and Ballast's; withdrawing a spec deletes its
    topic."""
    service, outbox, simulator = reconciler
    admin = service.reconciler.admin
    real = admin.create_topics

    async def made_then_lost(topics, first=None):  # noqa: ANN001, ANN202
        await real(topics, first=first)
        raise ClusterUnavailable("request timed out")

    monkeypatch.setattr(admin, "create_topics", made_then_lost)
    await service.intake.on_spec_events([record(TOPICS.specs, TopicSpec(name="lost", partitions=1, replicas=2), 0)])
    monkeypatch.undo()
    last = statuses(outbox, "lost")[-1]
    assert last.ready and last.origin == "created" and "lost" in simulator.cluster.topics
    await service.reconciler.resync()
    assert statuses(outbox, "lost")[-1].ready
    await service.intake.on_spec_events([record(TOPICS.specs, TopicSpecDeleted(name="lost"), 1)])
    assert "lost" not in simulator.cluster.topics


async def test_a_topic_that_cannot_be_placed_is_never_said_to_be_ballasts(reconciler) -> None:
    """Only the topics placed are in the request, and only they are recorded as Ballast's ahead of it."""
    service, outbox, simulator = reconciler
    simulator.cluster.set_alive(3, False)
    strict = TopicSpec(name="strict", partitions=1, replicas=3, config={"min.insync.replicas": "3"})
    await service.intake.on_spec_events([record(TOPICS.specs, strict, offset=0)])
    (status,) = statuses(outbox, "strict")
    assert "cannot be reached" in (ready(outbox, "strict").message or "")  # a placement refusal
    assert status.origin is None and "strict" not in simulator.cluster.topics


async def test_bad_records_go_to_the_dead_letters_and_the_rest_is_handled(reconciler) -> None:
    service, outbox, simulator = reconciler
    good = TopicSpec(name="payments", partitions=1, replicas=1)
    await service.intake.on_spec_events([
        Record(b"junk", b"{not json", Message(TOPICS.specs.name, 0)),
        record(TOPICS.specs, TopicSpec(name="__consumer_offsets", partitions=1, replicas=1), offset=1),
        record(TOPICS.specs, good, offset=2, key=b"another-name"),
        record(TOPICS.specs, good, offset=3),
    ])
    reasons = [letter.reason for letter in outbox.on(TOPICS.dead_letters)]
    assert len(reasons) == 3
    assert reasons[0].startswith("not JSON") and "internal topic" in reasons[1] and "key" in reasons[2]
    assert "payments" in simulator.cluster.topics and "__consumer_offsets" not in simulator.cluster.topics


async def test_an_rf_change_is_a_command_to_the_replicas_change_service(reconciler) -> None:
    service, outbox, _ = reconciler
    await service.intake.on_spec_events([record(TOPICS.specs, TopicSpec(name="logs", partitions=1, replicas=2), 0)])
    await service.intake.on_spec_events([record(TOPICS.specs, TopicSpec(name="logs", partitions=1, replicas=3), 1)])
    (command,) = outbox.on(TOPICS.replicas_commands)
    assert (command.topic, command.target_replicas, command.generation) == ("logs", 3, 2)
    assert statuses(outbox, "logs")[-1].replicas_change.state == "pending"  # type: ignore[union-attr]


async def test_a_spec_leaving_its_counts_to_the_cluster_gets_the_clusters_defaults(reconciler) -> None:
    """A KafkaTopic without partitions or replicas (Strimzi's users at home): created with the cluster's defaults, read
    through the admin port (Kafka's own, 1 and 1, on the simulator), then left as the topic has them."""
    service, outbox, simulator = reconciler
    bare = TopicSpec(name="audit", config={"retention.ms": "60000"}, resource_name="audit-log")
    await service.intake.on_spec_events([record(TOPICS.specs, bare, offset=0)])
    topic = simulator.cluster.topics["audit"]
    assert (len(topic.partitions), len(topic.partitions[0].replicas)) == (1, 1)
    status = statuses(outbox, "audit")[-1]
    assert status.ready and status.resource_name == "audit-log" and status.named("audit-log")
    simulator.cluster.create_partitions("audit", 3)  # grown outside Ballast: the spec leaves that to the topic
    await service.reconciler.resync()
    assert len(topic.partitions) == 3 and outbox.on(TOPICS.replicas_commands) == []
    assert not [s for s in statuses(outbox, "audit") if s.condition("Drift") is not None]


async def test_a_new_topic_waits_while_the_clusters_defaults_cannot_be_read(reconciler, monkeypatch) -> None:
    service, outbox, simulator = reconciler

    async def unanswered() -> None:
        raise ClusterUnavailable("no broker answered")

    monkeypatch.setattr(service.reconciler.admin, "topic_defaults", unanswered)
    await service.intake.on_spec_events([record(TOPICS.specs, TopicSpec(name="audit"), offset=0)])
    (status,) = statuses(outbox, "audit")
    assert not status.ready and "cannot read the cluster's topic defaults" in status.condition("Ready").message
    assert "audit" not in simulator.cluster.topics
    monkeypatch.undo()
    await service.reconciler.resync()  # answered again: created at the next resync
    assert statuses(outbox, "audit")[-1].ready and "audit" in simulator.cluster.topics


async def test_config_ownership_all_removes_what_the_spec_does_not_name(reconciler) -> None:
    service, outbox, simulator = reconciler
    service.reconciler.settings = service.reconciler.settings.model_copy(update={"config_ownership": "all"})
    simulator.cluster.create_topic("legacy", 1, 1, {"retention.ms": "1000", "cleanup.policy": "compact"})
    spec = TopicSpec(name="legacy", partitions=1, replicas=1, config={"retention.ms": "1000"}, adopt=True)
    await service.intake.on_spec_events([record(TOPICS.specs, spec, offset=0)])
    assert simulator.cluster.topics["legacy"].config == {"retention.ms": "1000"}
    assert statuses(outbox, "legacy")[-1].ready


# -- temporary and permanent failures (the cluster-admin port's policy) --------------------------------------------

class Clock:
    def __init__(self) -> None:
        self.now = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


class Failing:
    """The simulator's admin, failing the operations it is told to fail and counting every call."""

    def __init__(self, admin: SimulatorClusterAdmin) -> None:
        self.admin = admin
        self.failures: dict[str, Exception] = {}
        self.calls: Counter[str] = Counter()

    def __getattr__(self, name: str) -> Any:
        real = getattr(self.admin, name)

        async def call(*args: Any, **kwargs: Any) -> Any:
            self.calls[name] += 1
            if (error := self.failures.get(name)) is not None:
                raise error
            return await real(*args, **kwargs)
        return call


@pytest.fixture
async def refusing() -> AsyncIterator[tuple[Reconciler, Failing, Clock, MemoryOutbox]]:
    async with simulated_cluster(brokers=THREE_BROKERS,
                                 admin=lambda url: Failing(SimulatorClusterAdmin(url))) as cluster:
        admin, clock, outbox = cluster.admin, Clock(), MemoryOutbox()
        placing = Placing(admin, outbox, PlacementSettings(), clock)  # type: ignore[arg-type]
        reconciler = Reconciler(admin, outbox, placing, clock, fence=set,  # type: ignore[arg-type]
                                settings=ReconcilerSettings(retry_initial_s=30, retry_max_s=120))
        yield reconciler, admin, clock, outbox


async def applied(reconciler: Reconciler, spec: TopicSpec, offset: int) -> None:
    """A spec record at ``offset``, as the intake hands it over: remembered, then reconciled at once."""
    reconciler.memory.apply_spec(spec.name, spec, offset, "c")
    await reconciler.reconcile([spec.name])


def ready(outbox: MemoryOutbox, topic: str) -> Condition:
    condition = statuses(outbox, topic)[-1].condition("Ready")
    assert condition is not None
    return condition


async def test_a_permanent_refusal_waits_out_the_backoff_and_a_new_spec_is_tried_at_once(refusing) -> None:
    reconciler, admin, clock, outbox = refusing
    await applied(reconciler, TopicSpec(name="t", partitions=1, replicas=2), 0)
    # A value the cluster refuses, as Kafka does (the simulator answers 400: permanent).
    await applied(reconciler, TopicSpec(name="t", partitions=1, replicas=2,
                                        config={"min.cleanable.dirty.ratio": "2"}), 1)
    assert admin.calls["alter_configs"] == 1
    refused = ready(outbox, "t")
    assert refused.reason == "ReconcileError" and "AlterConfig failed: " in (refused.message or "")
    assert "(refused: tried again after 2026-11-22T12:00:30Z, or at once when the spec changes)" in (
        refused.message or "")
    published = len(statuses(outbox, "t"))
    clock.advance(10)
    await reconciler.resync()  # the next resync: not asked again, and the status keeps the refusal
    assert admin.calls["alter_configs"] == 1 and len(statuses(outbox, "t")) == published
    clock.advance(21)
    await reconciler.resync()  # the backoff has passed: asked again, refused again, twice the wait
    assert admin.calls["alter_configs"] == 2
    assert "tried again after 2026-11-22T12:01:31Z" in (ready(outbox, "t").message or "")
    # A new spec is acted on at once, backoff or not.
    clock.advance(1)
    await applied(reconciler, TopicSpec(name="t", partitions=1, replicas=2,
                                        config={"min.cleanable.dirty.ratio": "0.2"}), 2)
    assert admin.calls["alter_configs"] == 3
    assert statuses(outbox, "t")[-1].ready and reconciler.memory["t"].refusal is None


async def test_a_temporary_failure_is_tried_again_at_the_next_resync(refusing) -> None:
    reconciler, admin, clock, outbox = refusing
    await applied(reconciler, TopicSpec(name="t", partitions=1, replicas=2), 0)
    admin.failures["alter_configs"] = ClusterUnavailable("cluster admin unreachable: ConnectError: refused")
    await applied(reconciler, TopicSpec(name="t", partitions=1, replicas=2, config={"retention.ms": "60000"}), 1)
    assert ready(outbox, "t").message == ("AlterConfig failed: cluster admin unreachable: ConnectError: refused "
                                          "(temporary: tried again at the next resync)")
    assert reconciler.memory["t"].refusal is None
    clock.advance(10)
    await reconciler.resync()
    assert admin.calls["alter_configs"] == 2
    del admin.failures["alter_configs"]
    clock.advance(10)
    await reconciler.resync()
    assert admin.calls["alter_configs"] == 3 and statuses(outbox, "t")[-1].ready


async def test_topics_of_one_look_are_created_in_one_request_each_with_its_own_outcome(refusing) -> None:
    """Issue 52: a batch of new topics is one CreateTopics; the cluster's refusal of one (permanent: it waits out
    the backoff) leaves the others created, and a failure of the whole request is every topic's, tried again at the
    next resync."""
    reconciler, admin, clock, outbox = refusing
    specs = [TopicSpec(name="a", partitions=2, replicas=2), TopicSpec(name="b", partitions=1, replicas=1),
             TopicSpec(name="c", partitions=1, replicas=1, config={"min.cleanable.dirty.ratio": "2"})]
    for offset, spec in enumerate(specs):
        reconciler.memory.apply_spec(spec.name, spec, offset, "c")
    await reconciler.reconcile(["a", "b", "c"])
    assert admin.calls["create_topics"] == 1
    assert statuses(outbox, "a")[-1].ready and statuses(outbox, "a")[-1].partitions == 2
    assert statuses(outbox, "b")[-1].ready
    refused = ready(outbox, "c")
    assert refused.reason == "ReconcileError" and "CreateTopic failed: " in (refused.message or "")
    assert "tried again after 2026-11-22T12:00:30Z" in (refused.message or "")
    # Each was Ballast's before the request went; the one refused is not.
    assert [s.origin for s in statuses(outbox, "c")] == ["created", None]
    # Each created topic's placement is on the bus, once.
    assert sorted(p.topic for p in outbox.on(TOPICS.placements)) == ["a", "b"]

    admin.failures["create_topics"] = ClusterUnavailable("no broker answered")
    for offset, spec in enumerate([TopicSpec(name="d", partitions=1, replicas=1),
                                   TopicSpec(name="e", partitions=1, replicas=1)], start=3):
        reconciler.memory.apply_spec(spec.name, spec, offset, "c")
    await reconciler.reconcile(["d", "e"])
    for name in ("d", "e"):
        assert ready(outbox, name).message == ("CreateTopic failed: no broker answered (temporary: tried again at the "
                                               "next resync)")
        # Whether the cluster made it is not known: Ballast's, should it be there at the next look.
        assert statuses(outbox, name)[-1].origin == "created"
    # Placed ahead of the answer, then forgotten: the next placements do not count topics that are not there.
    assert not {"d", "e"} & set((await reconciler.placing.view.view()).assignments)
    del admin.failures["create_topics"]
    await reconciler.resync()
    assert statuses(outbox, "d")[-1].ready and statuses(outbox, "e")[-1].ready


async def test_a_resync_creates_its_topics_in_one_request_whatever_its_chunks(refusing) -> None:
    """Issue 52: a resync reads thousands of topics a chunk at a time, and created those missing a chunk at a time: on
    real Kafka each chunk's directories waited for the brokers to create the logs of the chunk before (1.4-24 s a
    chunk of 200, after a lost lease in a burst of 3,000). They are now created in one request, after the chunks."""
    reconciler, admin, clock, outbox = refusing
    names = [f"t{i:03}" for i in range(2 * CHUNK + 50)]
    for offset, name in enumerate(names):
        reconciler.memory.apply_spec(name, TopicSpec(name=name, partitions=1, replicas=1), offset, "c")
    await reconciler.resync()
    assert admin.calls["create_topics"] == 1 and admin.calls["describe_topics"] > 3  # every chunk looked at
    assert all(statuses(outbox, name)[-1].ready for name in names)
    assert sorted(p.topic for p in outbox.on(TOPICS.placements)) == names
    await reconciler.resync()  # nothing left to create
    assert admin.calls["create_topics"] == 1


async def test_no_topic_is_created_before_the_bus_has_it_as_ballasts(refusing, monkeypatch) -> None:
    """The status that says a topic is Ballast's goes first: when the bus cannot take it, nothing is created (and
    nothing is left placed in the view), and the records' handler fails, to be handed them again."""
    reconciler, admin, _, outbox = refusing
    real = outbox.publish

    async def bus_down(topic, event, **kw):  # noqa: ANN001, ANN003, ANN202
        if topic == TOPICS.status:
            raise ConnectionError("the bus is down")
        return await real(topic, event, **kw)

    monkeypatch.setattr(outbox, "publish", bus_down)
    reconciler.memory.apply_spec("a", TopicSpec(name="a", partitions=1, replicas=1), 0, "c")
    with pytest.raises(ConnectionError):
        await reconciler.reconcile(["a"])
    assert (await admin.describe_topics(["a"]))["a"] is None
    assert "a" not in (await reconciler.placing.view.view()).assignments
    monkeypatch.undo()
    await reconciler.reconcile(["a"])
    assert (await admin.describe_topics(["a"]))["a"] is not None and statuses(outbox, "a")[-1].ready


async def test_new_topics_ready_statuses_go_before_their_placements_are_announced(refusing) -> None:
    """Users wait on the ready status; the placements (for the load aggregates) follow it, for every topic of the
    batch: announcing thousands of them kept the statuses waiting."""
    reconciler, _, _, outbox = refusing
    for name in ("a", "b", "c"):
        reconciler.memory.apply_spec(name, TopicSpec(name=name, partitions=2, replicas=1), 0, "c")
    await reconciler.reconcile(["a", "b", "c"])
    order = [(p.topic, p.event.topic) for p in outbox.published
             if p.topic == TOPICS.placements.name or (p.topic == TOPICS.status.name and p.event.ready)]
    ready, placed = (TOPICS.status.name,) * 3, (TOPICS.placements.name,) * 3
    assert [topic for topic, _ in order] == [*ready, *placed]
    assert sorted(name for _, name in order[3:]) == ["a", "b", "c"]


async def test_a_creation_request_the_cluster_refuses_whole_is_sent_again_topic_by_topic(refusing, monkeypatch) -> None:
    """A request the cluster refuses itself (too large for it, say) is not every topic's refusal: each is created
    alone, and only a topic refused on its own waits out the backoff."""
    reconciler, admin, clock, outbox = refusing
    real = admin.admin.create_topics
    requests: list[list[str]] = []

    async def refusing_many(topics, first=None):  # noqa: ANN001, ANN202
        requests.append([t.name for t in topics])
        if len(topics) > 1:
            raise OperationRefused("HTTP 413: Maximum request body size exceeded.")
        return await real(topics, first=first)

    monkeypatch.setattr(admin.admin, "create_topics", refusing_many)
    for offset, spec in enumerate([TopicSpec(name="x", partitions=1, replicas=1),
                                   TopicSpec(name="y", partitions=1, replicas=1)]):
        reconciler.memory.apply_spec(spec.name, spec, offset, "c")
    await reconciler.reconcile(["x", "y"])
    assert requests == [["x", "y"], ["x"], ["y"]]
    assert statuses(outbox, "x")[-1].ready and statuses(outbox, "y")[-1].ready


def test_creations_go_in_requests_kafkas_controller_takes() -> None:
    from services.adapters.admin import NewTopic
    from services.adapters.admin.port import in_requests

    def topic(name: str, partitions: int) -> NewTopic:
        return NewTopic(name, ((1,),) * partitions)

    # A topic writes one metadata record, one per partition and one per config: Kafka's controller takes at most
    # 10,000 a request.
    batches = in_requests([topic("a", 4), topic("b", 4), topic("huge", 30), topic("c", 2), topic("d", 9)], 11)
    assert [[t.name for t in batch] for batch in batches] == [["a", "b"], ["huge"], ["c"], ["d"]]
    configured = NewTopic("e", ((1,),), {"retention.ms": "1", "cleanup.policy": "compact"})
    assert [[t.name for t in b] for b in in_requests([topic("f", 6), configured], 10)] == [["f"], ["e"]]
    assert len(in_requests([topic(f"t{i}", 3) for i in range(3000)])) == 2  # 12,000 records
    assert in_requests([]) == []


async def test_a_looks_new_topics_are_placed_on_one_read_of_the_brokers(refusing) -> None:
    """Issue 52: the placements of one batch of creations read the brokers once (a read each cost a request per
    topic), and still count one another; the next look reads them again, and sees a broker stopped meanwhile."""
    reconciler, admin, clock, outbox = refusing
    for offset, name in enumerate(["a", "b", "c"]):
        reconciler.memory.apply_spec(name, TopicSpec(name=name, partitions=2, replicas=1), offset, "c")
    await reconciler.reconcile(["a", "b", "c"])
    assert admin.calls["brokers"] == 1
    assert all(statuses(outbox, name)[-1].ready for name in "abc")
    # Six single-replica partitions on three brokers, each placement counting the ones before it: two a broker.
    assignments = (await reconciler.placing.view.view()).assignments
    assert Counter(r[0] for name in "abc" for r in assignments[name]) == {1: 2, 2: 2, 3: 2}

    await admin.admin._call("POST", "brokers/3/stop")  # the simulator's own switch
    calls = admin.calls["brokers"]
    for offset, name in enumerate(["d", "e"], start=3):
        reconciler.memory.apply_spec(name, TopicSpec(name=name, partitions=2, replicas=1), offset, "c")
    await reconciler.reconcile(["d", "e"])
    assert admin.calls["brokers"] == calls + 1
    assert {r[0] for name in "de" for r in (await reconciler.placing.view.view()).assignments[name]} == {1, 2}


async def test_a_batchs_topics_spread_over_each_brokers_directories(refusing) -> None:
    """One batch of creations chooses every topic's directories before any is created: each topic's choice counts
    the batch's topics before it. (Counted only once created, a burst of one-partition topics went all to the same
    directory of each broker.)"""
    reconciler, admin, _clock, outbox = refusing
    names = [f"t{i}" for i in range(12)]
    for offset, name in enumerate(names):
        reconciler.memory.apply_spec(name, TopicSpec(name=name, partitions=1, replicas=3), offset, "c")
    await reconciler.reconcile(names)
    assert all(statuses(outbox, name)[-1].ready for name in names)
    described = await admin.describe_topics(names)
    per_dir = Counter((broker, path) for name in names for p in described[name].partitions
                      for broker, path in p.log_dirs)
    # Three brokers of two directories each, twelve replicas a broker: six in each directory.
    assert len(per_dir) == 6 and set(per_dir.values()) == {6}
async def test_a_batch_after_a_quiet_spell_places_on_the_old_view_and_it_is_read_again_after(refusing) -> None:
    """Issue 52: every topic's assignment, read before the first placement of a batch once 30 s old, took seconds at
    thousands of topics; the batch now places on the old read (with Ballast's placements in it), and a timer reads
    again after, without holding up the batches that come meanwhile."""
    reconciler, admin, clock, outbox = refusing
    await applied(reconciler, TopicSpec(name="a", partitions=2, replicas=1), 0)
    assert admin.calls["assignments"] == 1
    reconciler.placing.view.freshness.read_at -= 45  # type: ignore[operator]  # a quiet spell
    await applied(reconciler, TopicSpec(name="b", partitions=2, replicas=1), 1)
    assert statuses(outbox, "b")[-1].ready and admin.calls["assignments"] == 1 and reconciler.placing.due
    # The read again, held on its way: a batch meanwhile is not held by it, and its topic stays in the view after.
    read, held = admin.admin.assignments, asyncio.Event()

    async def slow_read() -> dict[str, list[list[int]]]:
        await held.wait()
        return await read()
    admin.admin.assignments = slow_read  # type: ignore[method-assign]
    refresh = asyncio.create_task(reconciler.refresh_placement_reads())
    while admin.calls["assignments"] == 1:
        await asyncio.sleep(0)
    await asyncio.wait_for(applied(reconciler, TopicSpec(name="c", partitions=2, replicas=1), 2), timeout=10)
    assert statuses(outbox, "c")[-1].ready and not refresh.done()
    held.set()
    await refresh
    assert admin.calls["assignments"] == 2 and not reconciler.placing.view.freshness.due
    assert {"a", "b", "c"} <= set((await reconciler.placing.view.view()).assignments)
    await reconciler.refresh_placement_reads()  # nothing used old since
    assert admin.calls["assignments"] == 2


async def test_the_timers_read_waits_for_a_tick_with_no_batch_under_way(refusing) -> None:
    """The read of the whole cluster takes CPU and the brokers' time: it goes between batches, not during one."""
    reconciler, admin, _clock, _outbox = refusing
    await applied(reconciler, TopicSpec(name="a", partitions=2, replicas=1), 0)
    reconciler.placing.view.freshness.read_at -= 45  # type: ignore[operator]  # a quiet spell
    await applied(reconciler, TopicSpec(name="b", partitions=2, replicas=1), 1)  # placed on the old read: due
    assert reconciler.placing.due and admin.calls["assignments"] == 1
    async with reconciler.lock:  # a batch under way
        await reconciler.refresh_placement_reads()
        assert admin.calls["assignments"] == 1 and reconciler.placing.due
    await reconciler.refresh_placement_reads()  # the next tick
    assert admin.calls["assignments"] == 2 and not reconciler.placing.due


def hiding(admin: Failing, monkeypatch: pytest.MonkeyPatch) -> set[str]:
    """The topics a broker behind the others does not show yet: every read of the cluster leaves them out."""
    real = admin.admin.describe_topics
    hidden: set[str] = set()

    async def lagging(names, **kwargs):  # noqa: ANN001, ANN003, ANN202
        return {n: (None if n in hidden else d) for n, d in (await real(names, **kwargs)).items()}

    monkeypatch.setattr(admin.admin, "describe_topics", lagging)
    return hidden


async def test_topics_created_that_the_cluster_shows_late_are_not_created_again_and_ready_once_shown(
        refusing, monkeypatch) -> None:
    """Issue 52: a real Kafka broker shows a creation only once it has created the logs of the topics before it
    (minutes, for thousands of them on a busy machine). A topic created but not shown yet says Creating, a resync
    meanwhile does not create it again (the cluster would refuse it: it exists), and it says ready as soon as the
    cluster shows it, without waiting for the next resync."""
    from services.topic_reconciler import reconciler as module

    monkeypatch.setattr(module, "UNSEEN_FIRST_WAIT_S", 0.01)
    reconciler, admin, clock, outbox = refusing
    hidden = hiding(admin, monkeypatch)
    hidden.add("late")
    for offset, name in enumerate(["late", "soon"]):
        reconciler.memory.apply_spec(name, TopicSpec(name=name, partitions=2, replicas=1), offset, "c")
    await reconciler.reconcile(["late", "soon"])
    assert statuses(outbox, "soon")[-1].ready
    assert ready(outbox, "late").reason == "Creating"
    await reconciler.resync()
    assert admin.calls["create_topics"] == 1
    assert ready(outbox, "late").reason == "Creating"

    hidden.clear()
    # The status is out while the look that published it still waits for the bus; the watch forgets it after.
    for _ in range(500):
        if statuses(outbox, "late")[-1].ready and not reconciler.unseen:
            break
        await asyncio.sleep(0.01)
    assert statuses(outbox, "late")[-1].ready and statuses(outbox, "late")[-1].partitions == 2
    assert admin.calls["create_topics"] == 1 and not reconciler.unseen


async def test_a_topic_one_broker_shows_and_the_next_does_not_is_not_created_again(refusing, monkeypatch) -> None:
    """Issue 52, seen creating 3,000 topics on real Kafka: each read asks whichever broker is least loaded, and they
    catch up at different times. The watch's read found a late topic shown; the look that followed asked a broker
    still behind, which showed it absent, and the topic was created again (refused: it exists; its replicas sent
    to directories, which moves existing ones). It stays watched until a look of the reconcile's own shows it."""
    from services.topic_reconciler import reconciler as module

    monkeypatch.setattr(module, "UNSEEN_FIRST_WAIT_S", 0.01)
    monkeypatch.setattr(module, "DESCRIBE_AGAIN_ATTEMPTS", 1)
    reconciler, admin, clock, outbox = refusing
    real = admin.admin.describe_topics
    # The look before creating, the read right after it, the watch's read, the look that follows; then caught up.
    behind = iter([True, True, False, True])

    async def brokers_disagree(names, **kwargs):  # noqa: ANN001, ANN003, ANN202
        lagging = next(behind, False)
        return {n: (None if lagging else d) for n, d in (await real(names, **kwargs)).items()}

    monkeypatch.setattr(admin.admin, "describe_topics", brokers_disagree)
    reconciler.memory.apply_spec("late", TopicSpec(name="late", partitions=2, replicas=1), 0, "c")
    await reconciler.reconcile(["late"])
    assert ready(outbox, "late").reason == "Creating" and "late" in reconciler.unseen
    # The status is out while the look that published it still waits for the bus; the watch forgets it after.
    for _ in range(500):
        if statuses(outbox, "late")[-1].ready and not reconciler.unseen:
            break
        await asyncio.sleep(0.01)
    assert statuses(outbox, "late")[-1].ready
    assert admin.calls["create_topics"] == 1 and not reconciler.unseen


async def test_a_topic_shown_then_absent_at_one_look_is_created_again_only_when_the_next_agrees(refusing,
                                                                                             monkeypatch) -> None:
    """Issue 52: a resync's read may ask a broker far behind the others, which does not show a topic created a
    moment ago. A topic the last look showed is created again (deleted outside Ballast) only once two looks in a row
    find it absent; a look that shows it again in between forgets the first."""
    reconciler, admin, clock, outbox = refusing
    hidden = hiding(admin, monkeypatch)
    reconciler.memory.apply_spec("steady", TopicSpec(name="steady", partitions=2, replicas=1), 0, "c")
    await reconciler.reconcile(["steady"])
    assert statuses(outbox, "steady")[-1].ready and admin.calls["create_topics"] == 1
    published = len(statuses(outbox, "steady"))

    hidden.add("steady")  # one broker behind
    await reconciler.resync()
    hidden.clear()  # and the next one caught up
    await reconciler.resync()
    hidden.add("steady")  # behind once more: a first absence again
    await reconciler.resync()
    assert admin.calls["create_topics"] == 1 and len(statuses(outbox, "steady")) == published

    await admin.admin.delete_topic("steady")  # now gone, at every look
    hidden.clear()
    await reconciler.resync()
    assert admin.calls["create_topics"] == 2 and statuses(outbox, "steady")[-1].ready


async def test_placeholders_filled_without_a_fill_of_its_own_are_announced_as_placed(tmp_path: Path) -> None:
    """A restart that finds a topic's placeholders taken on the cluster (its reassignment landed, the reconciler
    stopped before saying so; or Cruise Control's RF change filled them): the brokers that took them are counted as
    placed, in one "fill-placeholders" placement, and the record is closed. Nothing moves."""
    async with simulated_cluster(brokers=THREE_BROKERS) as cluster:
        await cluster.admin.create_topic("filled", 3, 3, assignment=[[1, 2, 3], [2, 3, 1], [3, 1, 2]])
        outbox = MemoryOutbox()
        outbox.put(TOPICS.specs, TopicSpec(name="filled", partitions=3, replicas=3))
        outbox.put(TOPICS.placeholders, PlaceholderRecord(
            topic="filled", replication_factor=3, assignment=[[1, 2, -1], [2, -1, 1], [3, 1, 2]]))
        service = TopicReconciler(Settings(data_dir=tmp_path), admin=cluster.admin, outbox=outbox)
        await service.intake.start()
        await service.intake.handover._taking  # type: ignore[union-attr,misc]  # the takeover's reads
        await service.reconciler.reconcile(["filled"])

        fills = [e for e in outbox.on(TOPICS.placements) if e.reason == "fill-placeholders"]
        assert [sorted((r.partition, r.broker) for r in e.placed) for e in fills] == [[(0, 3), (1, 3)]]
        assert all(r.log_dir is None for r in fills[0].placed)  # where they are: no directory chosen
        assert outbox.on(TOPICS.placeholders)[-1].filled
        assert [list(p.replicas) for p in cluster.simulator.cluster.topics["filled"].partitions] == [
            [1, 2, 3], [2, 3, 1], [3, 1, 2]]
        await service.reconciler.reconcile(["filled"])  # closed: never counted twice
        assert len([e for e in outbox.on(TOPICS.placements) if e.reason == "fill-placeholders"]) == 1


async def test_a_topic_made_again_closes_the_placeholders_of_the_one_deleted_without_counting_them(
        tmp_path: Path) -> None:
    """A topic deleted outside Ballast while it waited for brokers, and created again in full: the old record is
    not the new topic's. It is closed, and only the creation's own replicas are counted."""
    async with simulated_cluster(brokers=THREE_BROKERS) as cluster:
        outbox = MemoryOutbox()
        outbox.put(TOPICS.specs, TopicSpec(name="again", partitions=3, replicas=3))
        outbox.put(TOPICS.placeholders, PlaceholderRecord(
            topic="again", replication_factor=3, assignment=[[1, 2, -1], [2, 3, -1], [3, 1, -1]]))
        service = TopicReconciler(Settings(data_dir=tmp_path), admin=cluster.admin, outbox=outbox)
        await service.intake.start()
        await service.intake.handover._taking  # type: ignore[union-attr,misc]  # the takeover's reads
        for _ in range(2):  # a topic gone is acted on once a second look agrees
            await service.reconciler.reconcile(["again"])

        assert len(cluster.simulator.cluster.topics["again"].partitions) == 3
        assert [e.reason for e in outbox.on(TOPICS.placements)] == ["create"]
        assert outbox.on(TOPICS.placeholders)[-1].filled
        await service.reconciler.reconcile(["again"])
        assert [e.reason for e in outbox.on(TOPICS.placements)] == ["create"]
