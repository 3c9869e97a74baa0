"""The tenant gate (issue 53) driven through the topic reconciler's shell without a broker: specs handed to its
handler as the agent would from tenants' spec topics, the bus an in-memory outbox, the cluster the simulator's."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from events import TOPICS, TopicSpec, TopicSpecDeleted, encode
from events.topics import tenant_topics
from services.cluster_sim.app import Simulator
from services.common.metrics import TENANT_DECISIONS
from services.common.outbox import MemoryOutbox
from services.common.settings import BusSettings, Settings
from services.common.shards import shard_of
from services.topic_reconciler.app import TopicReconciler
from tests.unit.records import Message, Record, record
from tests.unit.simulated import THREE_BROKERS, simulated_cluster

TENANTS = """\
tenants:
  - {name: alpha, principal: User:alpha, topics: {prefixes: [alpha.]}, quota: {partitions: 10}}
  - {name: beta, principal: User:beta, topics: {prefixes: [beta.], pattern: '^shared\\.'}}
  - {name: gamma, principal: User:gamma, topics: {pattern: '^shared\\.'}}
"""


@pytest.fixture
async def service(tmp_path: Path) -> AsyncIterator[tuple[TopicReconciler, MemoryOutbox, Simulator]]:
    (tmp_path / "tenants.yaml").write_text(TENANTS)
    async with simulated_cluster(brokers=THREE_BROKERS) as cluster:
        outbox = MemoryOutbox()
        reconciler = TopicReconciler(Settings(data_dir=tmp_path, tenants_file=tmp_path / "tenants.yaml"),
                                     admin=cluster.admin, outbox=outbox)
        assert reconciler.gate is not None
        await reconciler.gate.start()
        await reconciler.intake.start()
        await reconciler.intake.handover._taking  # type: ignore[union-attr,misc]  # the first load
        yield reconciler, outbox, cluster.simulator


async def from_tenant(service: TopicReconciler, tenant: str, event: TopicSpec | TopicSpecDeleted,
                      offset: int) -> None:
    assert service.gate is not None
    await service.supervisor.handle([record(tenant_topics(tenant).specs, event, offset)], service.gate.on_spec_events)


async def read_back(service: TopicReconciler, outbox: MemoryOutbox, start: int = 0) -> None:
    """The spec agent reads what the gate forwarded from the ``start``-th forward on, as it was written."""
    forwarded = [p for p in outbox.published if p.topic == TOPICS.specs.name]
    for offset, item in list(enumerate(forwarded))[start:]:
        raw = encode(item.event, correlation_id=item.correlation_id, event_id=item.event_id)
        await service.intake.on_spec_events([Record(item.key.encode(), raw, Message(TOPICS.specs.name, offset))])


async def two_shards(service: TopicReconciler, outbox: MemoryOutbox) -> TopicReconciler:
    """Another instance of ``service``'s, of two shards, started: it holds both."""
    sharded = TopicReconciler(service.settings.model_copy(update={"bus": BusSettings(topic_partitions=2)}),
                              admin=service.reconciler.admin, outbox=outbox)
    assert sharded.gate is not None
    await sharded.gate.start()
    await sharded.intake.start()
    await sharded.intake.handover._taking  # type: ignore[union-attr,misc]  # the first load: both shards
    return sharded


def decisions(tenant: str, decision: str) -> float:
    return TENANT_DECISIONS.labels(tenant, decision)._value.get()


async def test_a_tenants_spec_goes_on_with_its_owner_and_its_status_comes_back_to_the_tenant(service) -> None:
    reconciler, outbox, simulator = service
    accepted = decisions("alpha", "accepted")
    # The tenant's own word for the owner is not taken: the topic it came on says who it is.
    await from_tenant(reconciler, "alpha", TopicSpec(name="alpha.orders", partitions=3, replicas=2, owner="beta"), 7)
    [forwarded] = outbox.on(TOPICS.specs)
    assert forwarded.name == "alpha.orders" and forwarded.owner == "alpha"
    assert decisions("alpha", "accepted") == accepted + 1
    await read_back(reconciler, outbox)
    assert len(simulator.cluster.topics["alpha.orders"].partitions) == 3
    mine = [s for s in outbox.on(tenant_topics("alpha").status) if s.topic == "alpha.orders"]
    assert mine and mine[-1].ready and mine[-1].owner == "alpha"
    # The tenant's copy has the generation the tenant knows (its record's offset 7, + 1), which its `apply --wait`
    # compares with; the deployment's, the forward's on the deployment's spec topic (offset 0, + 1).
    deployments = outbox.on(TOPICS.status)[-1]
    assert (mine[-1].generation, mine[-1].observed_generation) == (8, 8)
    assert (deployments.generation, deployments.observed_generation) == (1, 1)
    assert deployments == mine[-1].model_copy(update={"generation": 1, "observed_generation": 1})
    assert outbox.on(tenant_topics("beta").status) == []
    # Read again (a restart before the offset was committed): not forwarded twice.
    await from_tenant(reconciler, "alpha", TopicSpec(name="alpha.orders", partitions=3, replicas=2), 7)
    assert len(outbox.on(TOPICS.specs)) == 1
    # Withdrawn by its owner: the topic is deleted, and the tenant hears of it.
    await from_tenant(reconciler, "alpha", TopicSpecDeleted(name="alpha.orders"), 8)
    await read_back(reconciler, outbox, start=1)
    assert "alpha.orders" not in simulator.cluster.topics
    gone = [s for s in outbox.on(tenant_topics("alpha").status) if s.topic == "alpha.orders"][-1]
    assert gone.deleted and gone.owner == "alpha"


async def test_an_admins_spec_for_a_tenants_name_is_told_to_that_tenant_which_then_takes_it_over(service) -> None:
    """An admin's spec (no owner) for a name the tenant's names take: the tenant hears of it on its status topic
    (owner none, generation 0: no record of the tenant's), and its own spec for the name is accepted again."""
    reconciler, outbox, _ = service
    await from_tenant(reconciler, "alpha", TopicSpec(name="alpha.orders", partitions=3, replicas=2), 4)
    await read_back(reconciler, outbox)
    outbox.put(TOPICS.specs, TopicSpec(name="alpha.orders", partitions=3, replicas=3))  # the admin's override
    await read_back(reconciler, outbox, start=1)
    told = [s for s in outbox.on(tenant_topics("alpha").status) if s.topic == "alpha.orders"][-1]
    assert told.owner is None and (told.generation, told.observed_generation) == (0, 0)
    # A name of beta's pattern and gamma's alike ('shared.'): neither hears of an admin's spec for it.
    outbox.put(TOPICS.specs, TopicSpec(name="shared.x", partitions=1, replicas=1))
    await read_back(reconciler, outbox, start=2)
    assert not [s for t in ("beta", "gamma") for s in outbox.on(tenant_topics(t).status) if s.topic == "shared.x"]
    await from_tenant(reconciler, "alpha", TopicSpec(name="alpha.orders", partitions=3, replicas=2), 5)
    assert outbox.on(TOPICS.specs)[-1].owner == "alpha"


async def test_another_tenants_name_is_refused_with_the_reason_and_nothing_is_touched(service) -> None:
    reconciler, outbox, simulator = service
    refusals = decisions("alpha", "NotOwner")
    await from_tenant(reconciler, "alpha", TopicSpec(name="beta.payments", partitions=1), 3)
    assert decisions("alpha", "NotOwner") == refusals + 1
    assert outbox.on(TOPICS.specs) == [] and "beta.payments" not in simulator.cluster.topics
    [letter] = outbox.on(TOPICS.dead_letters)
    assert outbox.on(tenant_topics("alpha").dead_letters) == [letter]
    assert letter.source_topic == tenant_topics("alpha").specs.name and letter.offset == 3
    assert "'beta.payments' is not among the names of tenant 'alpha'" in letter.reason
    [status] = outbox.on(tenant_topics("alpha").status)
    refused = status.condition("NotOwner")
    assert status.topic == "beta.payments" and not status.ready and refused is not None
    assert refused.reason == "owner" and refused.message == letter.reason
    assert status.condition("Ready").reason == "NotOwner"  # type: ignore[union-attr]
    assert (status.generation, status.observed_generation) == (4, 4)  # the refused record's, in the tenant's eyes
    assert outbox.on(tenant_topics("beta").status) == [] and outbox.on(TOPICS.status) == []


async def test_a_spec_beyond_the_quota_is_refused_by_its_rule(service) -> None:
    reconciler, outbox, _ = service
    await from_tenant(reconciler, "alpha", TopicSpec(name="alpha.a", partitions=6), 0)
    await from_tenant(reconciler, "alpha", TopicSpec(name="alpha.b", partitions=6), 1)
    assert [s.name for s in outbox.on(TOPICS.specs)] == ["alpha.a"]
    [status] = outbox.on(tenant_topics("alpha").status)
    exceeded = status.condition("QuotaExceeded")
    assert exceeded is not None and exceeded.reason == "quota.partitions"
    assert exceeded.message == ("tenant rule quota.partitions: 6 partitions with the 6 of the other topics of "
                                "tenant 'alpha' is above its 10")


async def test_of_two_tenants_claiming_one_name_the_first_keeps_it(service) -> None:
    reconciler, outbox, _ = service
    await from_tenant(reconciler, "gamma", TopicSpec(name="shared.events", partitions=2), 0)
    await from_tenant(reconciler, "beta", TopicSpec(name="shared.events", partitions=4), 0)
    await from_tenant(reconciler, "beta", TopicSpecDeleted(name="shared.events"), 1)
    assert [(s.name, s.owner) for s in outbox.on(TOPICS.specs)] == [("shared.events", "gamma")]
    told = [s.condition("NotOwner") for s in outbox.on(tenant_topics("beta").status)]
    assert all(c is not None and "owned by tenant 'gamma', which claimed the name first" in (c.message or "") for c in told)
    assert len(told) == 2
    # Its owner withdraws it: the name is free again, and the next claim is taken.
    await from_tenant(reconciler, "gamma", TopicSpecDeleted(name="shared.events"), 1)
    await from_tenant(reconciler, "beta", TopicSpec(name="shared.events", partitions=4), 2)
    assert [(type(s).__name__, s.owner) for s in outbox.on(TOPICS.specs)] == [
        ("TopicSpec", "gamma"), ("TopicSpecDeleted", "gamma"), ("TopicSpec", "beta")]


async def test_an_invalid_record_or_a_reserved_name_is_dead_lettered_to_the_tenant_too(service) -> None:
    reconciler, outbox, _ = service
    bad = record(tenant_topics("alpha").specs, TopicSpec(name="alpha.x"), 0, key=b"alpha.y")
    assert reconciler.gate is not None
    await reconciler.supervisor.handle([bad], reconciler.gate.on_spec_events)
    [letter] = outbox.on(tenant_topics("alpha").dead_letters)
    assert "the event's key is 'alpha.x'" in letter.reason
    assert outbox.on(TOPICS.specs) == []


async def test_without_a_tenants_file_there_is_no_gate(tmp_path: Path) -> None:
    assert TopicReconciler(Settings(data_dir=tmp_path), outbox=MemoryOutbox()).gate is None


async def test_a_forward_read_again_by_a_restarted_gate_is_not_forwarded_twice(service, tmp_path: Path) -> None:
    """Killed after the forward and before its offset was committed: the next start reads the tenant's record again,
    and finds it forwarded on the deployment's spec topic."""
    reconciler, outbox, _ = service
    spec = TopicSpec(name="alpha.orders", partitions=3, replicas=2)
    await from_tenant(reconciler, "alpha", spec, 5)
    [forward] = [p for p in outbox.published if p.topic == TOPICS.specs.name]
    restarted = TopicReconciler(reconciler.settings, admin=reconciler.reconciler.admin, outbox=outbox)
    assert restarted.gate is not None
    await restarted.gate.start()
    await restarted.intake.start()
    await restarted.intake.handover._taking  # type: ignore[union-attr,misc]  # the first load
    await from_tenant(restarted, "alpha", spec, 5)
    assert len(outbox.on(TOPICS.specs)) == 1 and forward.event_id == f"{tenant_topics('alpha').specs.name}/0/5"
    await from_tenant(restarted, "alpha", spec, 6)  # the tenant applies it again: a new record, forwarded
    assert len(outbox.on(TOPICS.specs)) == 2


async def restarted(service: TopicReconciler, outbox: MemoryOutbox) -> TopicReconciler:
    again = TopicReconciler(service.settings, admin=service.reconciler.admin, outbox=outbox)
    assert again.gate is not None
    await again.gate.start()
    await again.intake.start()
    await again.intake.handover._taking  # type: ignore[union-attr,misc]  # the first load
    return again


async def test_an_admins_later_record_for_a_tenants_name_is_not_undone_by_a_restart(service) -> None:
    """The admin's record is the name's latest on the deployment's spec topic, and names no tenant record: the
    restarted gate knows from its own progress topic that the tenant's record was decided, and leaves it."""
    reconciler, outbox, _ = service
    await from_tenant(reconciler, "alpha", TopicSpec(name="alpha.orders", partitions=3, replicas=2), 5)
    outbox.put(TOPICS.specs, TopicSpecDeleted(name="alpha.orders"))  # an admin withdraws it
    again = await restarted(reconciler, outbox)
    await from_tenant(again, "alpha", TopicSpec(name="alpha.orders", partitions=3, replicas=2), 5)  # read again
    assert [type(e).__name__ for e in outbox.on(TOPICS.specs)] == ["TopicSpec", "TopicSpecDeleted"]
    [progress] = outbox.on(TOPICS.gate_progress)
    assert (progress.source, progress.partition, progress.offset) == (tenant_topics("alpha").specs.name, 0, 5)


async def test_a_refused_record_read_again_after_a_restart_is_not_refused_twice(service) -> None:
    reconciler, outbox, _ = service
    await from_tenant(reconciler, "alpha", TopicSpec(name="beta.orders", partitions=1), 2)
    assert len(outbox.on(tenant_topics("alpha").dead_letters)) == 1
    again = await restarted(reconciler, outbox)
    await from_tenant(again, "alpha", TopicSpec(name="beta.orders", partitions=1), 2)
    assert len(outbox.on(tenant_topics("alpha").dead_letters)) == 1
    await from_tenant(again, "alpha", TopicSpec(name="beta.orders", partitions=1), 3)  # sent again: refused again
    assert len(outbox.on(tenant_topics("alpha").dead_letters)) == 2


async def test_a_batch_writes_its_progress_once_per_partition_and_shard(service) -> None:
    reconciler, outbox, _ = service
    door = tenant_topics("alpha").specs
    batch = [record(door, TopicSpec(name=f"alpha.t{i}", partitions=1), offset) for i, offset in enumerate((4, 7, 9))]
    assert reconciler.gate is not None
    await reconciler.supervisor.handle(batch, reconciler.gate.on_spec_events)
    assert len(outbox.on(TOPICS.specs)) == 3
    [progress] = outbox.on(TOPICS.gate_progress)
    assert progress.offset == 9


async def test_what_a_handover_holds_back_or_passes_by_is_decided_once_the_shards_are_taken(service) -> None:
    """With several shards, a record arriving while a handover pauses the instance waits for the shards to be taken
    again; one of a shard the instance did not hold then is caught up on when it gains the shard."""
    reconciler, outbox, _ = service
    sharded = await two_shards(reconciler, outbox)
    gate, intake = sharded.gate, sharded.intake
    assert gate is not None
    names = [f"alpha.t{i}" for i in range(8)]
    first = next(n for n in names if shard_of(n.encode(), 2) == 0)
    second = next(n for n in names if shard_of(n.encode(), 2) == 1)
    door = tenant_topics("alpha").specs
    early = TopicSpec(name=first, partitions=1)
    await intake.pause()
    await from_tenant(sharded, "alpha", early, outbox.put(door, early))
    assert outbox.on(TOPICS.specs) == []  # held back
    await intake.take(frozenset({0}))  # shard 1 goes to another instance
    assert [s.name for s in outbox.on(TOPICS.specs)] == [first]
    late = TopicSpec(name=second, partitions=1)
    await from_tenant(sharded, "alpha", late, outbox.put(door, late))
    assert [s.name for s in outbox.on(TOPICS.specs)] == [first]  # another instance's shard: passed by
    await intake.pause()
    await intake.take(frozenset({0, 1}))  # shard 1 is back, and with it what this instance passed by
    assert [(s.name, s.owner) for s in outbox.on(TOPICS.specs)] == [(first, "alpha"), (second, "alpha")]


def test_a_tenants_file_that_cannot_be_read_stops_the_start(tmp_path: Path) -> None:
    (tmp_path / "tenants.yaml").write_text("tenants: [{name: Bad_Name, principal: User:x, topics: {prefixes: [x.]}}]")
    with pytest.raises(SystemExit) as stopped:
        TopicReconciler(Settings(data_dir=tmp_path, tenants_file=tmp_path / "tenants.yaml"), outbox=MemoryOutbox())
    assert stopped.value.code == 1


async def test_a_shard_gained_back_is_decided_on_what_was_claimed_and_forwarded_while_another_instance_held_it(
        service) -> None:
    """While another instance held a shard, a tenant claimed one of its names there: once this instance gains the
    shard back, the claim stands (another tenant's later claim is refused) and the forward is not made twice."""
    reconciler, outbox, _ = service
    sharded = await two_shards(reconciler, outbox)
    gate, intake = sharded.gate, sharded.intake
    assert gate is not None
    name = next(n for n in (f"shared.e{i}" for i in range(8)) if shard_of(n.encode(), 2) == 1)
    await intake.pause()
    await intake.take(frozenset({0}))  # shard 1 goes to another instance
    # That instance forwards gamma's claim; this one's spec agent reads the record and passes it by (not its shard).
    claim = TopicSpec(name=name, partitions=1)
    offset = outbox.put(tenant_topics("gamma").specs, claim)
    origin = f"{tenant_topics('gamma').specs.name}/0/{offset}"
    forwarded = claim.model_copy(update={"owner": "gamma"})
    at = outbox.put(TOPICS.specs, forwarded, event_id=origin)
    await intake.on_spec_events([Record(name.encode(), encode(forwarded, event_id=origin),
                                        Message(TOPICS.specs.name, at))])
    await intake.pause()
    await intake.take(frozenset({0, 1}))  # shard 1 is back
    assert [(s.name, s.owner) for s in outbox.on(TOPICS.specs)] == [(name, "gamma")]  # not forwarded twice
    await from_tenant(sharded, "beta", TopicSpec(name=name, partitions=4), outbox.put(
        tenant_topics("beta").specs, TopicSpec(name=name, partitions=4)))
    assert [(s.name, s.owner) for s in outbox.on(TOPICS.specs)] == [(name, "gamma")]  # beta's later claim: refused
    [refused] = [s for s in outbox.on(tenant_topics("beta").status) if s.topic == name]
    assert refused.condition("NotOwner") is not None


async def test_a_claim_is_not_undone_by_an_older_record_the_spec_agent_reads_back_late(service) -> None:
    """The spec agent lags behind the gate's forwards (its batches wait for a quiet period): the owner's withdrawal
    and new claim forwarded, a second tenant's claim decided while the agent has read the withdrawal only is
    refused, the name being claimed again."""
    reconciler, outbox, _ = service
    await from_tenant(reconciler, "gamma", TopicSpec(name="shared.n", partitions=1), 0)
    await from_tenant(reconciler, "gamma", TopicSpecDeleted(name="shared.n"), 1)
    await from_tenant(reconciler, "gamma", TopicSpec(name="shared.n", partitions=1), 2)
    forwards = [p for p in outbox.published if p.topic == TOPICS.specs.name]
    for offset, item in enumerate(forwards[:2]):  # the agent is one record behind
        raw = encode(item.event, correlation_id=item.correlation_id, event_id=item.event_id)
        await reconciler.intake.on_spec_events([Record(item.key.encode(), raw, Message(TOPICS.specs.name, offset))])
    await from_tenant(reconciler, "beta", TopicSpec(name="shared.n", partitions=4), 0)
    assert [s.owner for s in outbox.on(TOPICS.specs)] == ["gamma", "gamma", "gamma"]
    await read_back(reconciler, outbox, start=2)  # the agent reaches the new claim; an admin's spec since is taken
    admins = outbox.put(TOPICS.specs, TopicSpec(name="shared.n", partitions=1))
    await reconciler.intake.on_spec_events([record(TOPICS.specs, TopicSpec(name="shared.n", partitions=1), admins)])
    await from_tenant(reconciler, "beta", TopicSpec(name="shared.n", partitions=4), 1)
    assert outbox.on(TOPICS.specs)[-1].owner == "beta"  # an admin's spec for a tenant's name: the tenant takes over


async def test_a_spec_asking_fewer_partitions_than_its_topic_keeps_does_not_free_quota(service) -> None:
    """Kafka cannot remove partitions: a topic re-specified smaller keeps them, and they still count."""
    reconciler, outbox, simulator = service
    await from_tenant(reconciler, "alpha", TopicSpec(name="alpha.a", partitions=6), 0)
    await read_back(reconciler, outbox)
    await from_tenant(reconciler, "alpha", TopicSpec(name="alpha.a", partitions=1), 1)
    await read_back(reconciler, outbox, start=1)
    assert len(simulator.cluster.topics["alpha.a"].partitions) == 6  # kept
    await from_tenant(reconciler, "alpha", TopicSpec(name="alpha.b", partitions=9), 2)
    assert [(s.name, s.partitions) for s in outbox.on(TOPICS.specs)] == [("alpha.a", 6), ("alpha.a", 1)]
    exceeded = outbox.on(tenant_topics("alpha").status)[-1].condition("QuotaExceeded")
    assert exceeded is not None and "9 partitions with the 6 of the other topics of tenant 'alpha'" in (exceeded.message or "")


async def test_a_shard_gained_is_caught_up_on_every_name_whatever_the_order_of_their_records(service) -> None:
    """What the gate finds on gaining a shard is the latest record of each name, not in their offsets' order: one
    forwarded first is no reason to pass by another name's earlier record."""
    reconciler, outbox, _ = service
    sharded = await two_shards(reconciler, outbox)
    names = [n for n in (f"alpha.t{i}" for i in range(16)) if shard_of(n.encode(), 2) == 1][:2]
    await sharded.intake.pause()
    await sharded.intake.take(frozenset({0}))  # shard 1 goes to another instance, which is killed before it decides
    door = tenant_topics("alpha").specs
    for name in (names[0], names[1], names[0]):
        spec = TopicSpec(name=name, partitions=1)
        await from_tenant(sharded, "alpha", spec, outbox.put(door, spec))  # passed by: another instance's shard
    await sharded.intake.pause()
    await sharded.intake.take(frozenset({0, 1}))
    assert sorted(s.name for s in outbox.on(TOPICS.specs)) == sorted(names)


async def test_another_shards_later_forward_is_no_reason_to_pass_a_record_by(service) -> None:
    """Two instances, a shard each: one forwards a tenant's record while the other, killed, had not decided an
    earlier record of the same partition for a name of its own shard; restarted, it reads that record again and
    decides it."""
    reconciler, outbox, _ = service
    names = [f"alpha.t{i}" for i in range(16)]
    theirs = next(n for n in names if shard_of(n.encode(), 2) == 0)
    mine = next(n for n in names if shard_of(n.encode(), 2) == 1)
    other = await two_shards(reconciler, outbox)
    await other.intake.pause()
    await other.intake.take(frozenset({0}))
    door = tenant_topics("alpha").specs
    early, late = TopicSpec(name=mine, partitions=1), TopicSpec(name=theirs, partitions=1)
    early_at, late_at = outbox.put(door, early), outbox.put(door, late)
    await from_tenant(other, "alpha", late, late_at)
    assert [s.name for s in outbox.on(TOPICS.specs)] == [theirs]
    restarted = await two_shards(reconciler, outbox)
    await restarted.intake.pause()
    await restarted.intake.take(frozenset({1}))
    await from_tenant(restarted, "alpha", early, early_at)  # read from the beginning again
    await from_tenant(restarted, "alpha", late, late_at)
    assert [s.name for s in outbox.on(TOPICS.specs)] == [theirs, mine]
