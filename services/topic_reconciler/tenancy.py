"""The tenant gate (issue 53): what a tenant's spec topic asks for, let through to the deployment's spec topic or
refused.

Each tenant of the tenants file (``BALLAST_TENANTS_FILE``) writes its specs to a spec topic of its own, which Kafka's
ACLs let only it write: the topic a record arrived on says who sent it (``events.topics.tenant_of``), never the record.
A spec or withdrawal the rules accept (``services.domain.tenants.decide``: the name is the tenant's and nobody claimed
it first, an existing topic is its to adopt, the spec keeps within its quota) goes on to the deployment's spec topic
with the tenant as its ``owner`` (a tenant's own value for it is written over), so that topic stays the one record of
who owns what, and the reconciler acts on it as on any spec (the policy file's rules included: its status says when
one is broken). A refused one is dead-lettered with the reason (to the tenant's dead-letter topic and the
deployment's), its name's status on the tenant's status topic says why (condition NotOwner or QuotaExceeded), and
nothing else is touched.

A record is decided once: records at or before the last one decided from a partition for the names of a shard are
not decided again (the names of one shard are decided in their records' order, by one instance at a time; those of two
shards are not). How far it got, the gate keeps on a topic of its own (``TOPICS.gate_progress``), written after each
batch and before the agent's offsets are committed; a forward's envelope id also names the tenant's record
(``<topic>/<partition>/<offset>``), and a forward is awaited before the next record, so a kill -9 between a forward and
its progress finds the forward on the spec topic as it starts and goes on after it. The progress topic, not the spec
topic alone, is what keeps an admin's later record for a tenant's name from hiding the gate's progress (the name's
latest record there is then the admin's): the tenant's older record is not forwarded again over it.

With several shards, each instance decides for the names of its shards (as it reconciles them), so one name's claims
are decided in one place, in order; what a handover's pause holds back is decided when the shards are taken again,
and a shard gained from another instance is caught up on from the tenants' spec topics.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

from events import TOPICS, Condition, TopicSpec, TopicSpecDeleted, TopicStatus, encode
from events.tenancy import TenantGateProgress
from events.conditions import READY
from events.topics import BusTopic, TenantTopics, not_ours, reserved_topic, tenant_of, tenant_topics, tenants_topics
from services.common.bus import DeadLetters, raw_bytes
from services.common.busio import record_key
from services.common.logging import get_logger
from services.common.metrics import TENANT_DECISIONS
from services.common.outbox import Outbox, send
from services.common.shards import shard_of
from services.domain.tenants import Claim, Decision, Tenant, Tenants, TenantsError, decide, load_tenants

log = get_logger(__name__)
INVALID = "Invalid"
# A partition of a tenant's spec topic, and a shard of the names.
Where = tuple[str, int, int]


def origin_id(topic: str, partition: int, offset: int) -> str:
    """The envelope id of a forwarded spec: the tenant's record it came from."""
    return f"{topic}/{partition}/{offset}"


def origin_of(event_id: str) -> tuple[str, int, int] | None:
    topic, _, rest = event_id.partition("/")
    partition, _, offset = rest.partition("/")
    if not (topic and partition.isdigit() and offset.isdigit()):
        return None
    return topic, int(partition), int(offset)


def tenant_generation(event_id: str) -> int | None:
    """The generation a forwarded spec has in its tenant's eyes: its record's offset + 1 on the tenant's spec topic
    (the tenant's `apply --wait` compares a status's generation with it), or None for a spec no tenant sent."""
    origin = origin_of(event_id)
    return origin[2] + 1 if origin is not None and tenant_of(origin[0]) is not None else None


def claim_of(event: TopicSpec | TopicSpecDeleted) -> Claim | None:
    """A spec-topic record's claim on its name: a withdrawal leaves the name free."""
    if isinstance(event, TopicSpecDeleted):
        return None
    return Claim(event.owner, event.partitions or 0)


def refusal_status(name: str, decision: Decision, owner: str | None, generation: int) -> TopicStatus:
    """What the tenant's status topic says of a name whose spec (or withdrawal) was refused; ``generation``: the
    refused record's, in the tenant's eyes (its offset + 1 on the tenant's spec topic)."""
    message = f"refused, nothing was changed: {decision.reason}"
    return TopicStatus(topic=name, ready=False, owner=owner, generation=generation, observed_generation=generation,
                       conditions=[
        Condition(type=READY, status="False", reason=decision.condition, message=message),
        Condition(type=decision.condition or INVALID, status="True", reason=decision.rule, message=decision.reason)])


def bus_topics(path: Path | None) -> list[BusTopic[Any]]:
    """Ballast's topics and, with a tenants file, every tenant's: made before the service's consumer starts (one that
    subscribes to a topic not made yet sees none of its partitions until its metadata is next refreshed, minutes)."""
    tenants = tenants_of(path)
    return [*TOPICS.all(), *tenants_topics(t.name for t in (tenants.tenants if tenants else []))]


def tenants_of(path: Path | None) -> Tenants | None:
    """The tenants file's tenants (None: no file, or one naming no tenant: nothing changes); a file that cannot be read
    stops the service's start with its reason."""
    if path is None:
        return None
    try:
        tenants = load_tenants(path)
    except TenantsError as exc:
        log.error("cannot start", reason=str(exc))
        raise SystemExit(1) from None
    return tenants if tenants.tenants else None


class TenantGate:
    def __init__(self, tenants: Tenants, outbox: Outbox, dead_letters: DeadLetters, *, shards: int,
                 owns: Callable[[Any], bool], holds: Callable[[Any], bool],
                 in_cluster: Callable[[str], int | None]) -> None:
        self.tenants = tenants
        self.outbox = outbox
        self.dead_letters = dead_letters
        self.shards = shards
        # Whether this instance decides for a record's name now (its shards'), whether it holds the name's shard
        # (a handover may have paused it), and how many partitions a topic has in the cluster (None: it is not there).
        self._owns = owns
        self._holds = holds
        self._in_cluster = in_cluster
        # The deployment's spec topic: each name's claim.
        self.claims: dict[str, Claim] = {}
        # The last tenant record decided per partition of a tenant's spec topic and shard of the names (another
        # instance may be behind on another shard's), and what of it the progress topic does not have yet.
        self.decided: dict[Where, int] = {}
        self._unwritten: dict[Where, int] = {}
        # This gate's forwards the spec agent has not read back yet, by name (their envelope ids): the agent lags
        # (its batches wait for a quiet period), and a record of the name it reads before the forward is older, whose
        # claim must not undo the forward's (a withdrawal read back late left the name free to another tenant).
        self._unread: dict[str, str] = {}
        # Records of held shards that arrived while a handover paused them: decided once the shards are taken again.
        self._deferred: list[Any] = []
        # One record decided at a time: the agent's, and those a handover catches up on.
        self._lock = asyncio.Lock()
        self.ready = asyncio.Event()

    def doors(self) -> list[TenantTopics]:
        return [tenant_topics(t.name) for t in self.tenants.tenants]

    async def start(self) -> None:
        """Read how far the gate got, and who claimed what from the deployment's spec topic."""
        await self._read_progress()
        for name, item in (await self.outbox.read_compacted(TOPICS.specs)).items():
            self.take(name, item.decoded.event, item.decoded.envelope.id, latest=True)
        log.info("tenant gate open", tenants=[t.name for t in self.tenants.tenants], claims=len(self.claims))
        self.ready.set()

    def take(self, name: str, event: TopicSpec | TopicSpecDeleted, event_id: str, *, latest: bool = False) -> None:
        """A record of the deployment's spec topic (written by anyone): as the spec agent reads it, in order, or
        (``latest``) the name's latest, read from the compacted topic or just forwarded."""
        if (origin := origin_of(event_id)) is not None:
            topic, partition, offset = origin
            self._passed((topic, partition, shard_of(name.encode(), self.shards)), offset)
        if not latest and (unread := self._unread.get(name)) is not None:
            if event_id != unread:
                return  # older than this gate's forward of the name, which the agent has not reached yet
        self._unread.pop(name, None)
        if (claim := claim_of(event)) is None:
            self.claims.pop(name, None)
        else:
            self.claims[name] = claim

    def _where(self, topic: str, partition: int, key: bytes | None) -> Where:
        return topic, partition, shard_of(key, self.shards)

    def _done(self, topic: str, partition: int, offset: int, key: bytes | None) -> bool:
        return offset <= self.decided.get(self._where(topic, partition, key), -1)

    def _passed(self, where: Where, offset: int) -> None:
        self.decided[where] = max(offset, self.decided.get(where, -1))

    def _decided(self, topic: str, partition: int, offset: int, key: bytes | None) -> None:
        where = self._where(topic, partition, key)
        self._passed(where, offset)
        self._unwritten[where] = self.decided[where]

    async def _read_progress(self) -> None:
        for item in (await self.outbox.read_compacted(TOPICS.gate_progress)).values():
            progress = item.decoded.event
            self._passed((progress.source, progress.partition, progress.shard), progress.offset)

    async def _write_progress(self) -> None:
        """How far the gate got, written before the agent commits its offsets (or a handover's catch-up ends)."""
        acks = [await self.outbox.publish(TOPICS.gate_progress, TenantGateProgress(
            source=topic, partition=partition, shard=shard, offset=offset))
            for (topic, partition, shard), offset in self._unwritten.items()]
        await asyncio.gather(*acks)
        self._unwritten.clear()  # kept if the bus failed: the batch is handled again, and finds it decided

    async def on_spec_events(self, events: Sequence[Any]) -> None:
        async with self._lock:
            for event in events:
                await self._record(event)
            await self._write_progress()

    async def on_shards_taken(self, gained: Callable[[bytes | None], bool] | None) -> None:
        """Shards taken (``intake.take``): decide what a pause held back, and, for shards gained from another
        instance (``gained`` picks their keys), the tenants' latest records the agent passed by as another's."""
        async with self._lock:
            deferred, self._deferred = self._deferred, []
            for event in deferred:
                await self._record(event)  # one whose shard went to another instance: that one catches up on it
            if gained is not None:
                await self._catch_up(gained)
            await self._write_progress()

    async def _catch_up(self, gained: Callable[[bytes | None], bool]) -> None:
        await self._read_progress()  # the previous holder's, of the shards gained
        for door in self.doors():
            latest = await self.outbox.read_compacted(door.specs, keys=gained)
            # In their records' order, as the agent would have: a forward counts for the records before it.
            for name, item in sorted(latest.items(), key=lambda named: (named[1].partition, named[1].offset)):
                if self._done(door.specs.name, item.partition, item.offset, name.encode()):
                    continue
                tenant = self.tenants.named(door.tenant)
                assert tenant is not None
                raw = encode(item.decoded.event, correlation_id=item.decoded.envelope.correlation_id)

                async def reject(reason: str, item: Any = item, raw: bytes = raw, name: str = name) -> None:
                    await self.dead_letters.send(source=door.specs.name, key=name.encode(), value=raw,
                                                 reason=reason, partition=item.partition, offset=item.offset,
                                                 copy_to=door.dead_letters)

                await self._decide(tenant, item.decoded.event, item.decoded.envelope.correlation_id,
                                   (door.specs.name, item.partition, item.offset), reject)

    async def _record(self, event: Any) -> None:
        message = event.message
        if self._done(message.topic, message.partition, message.offset, raw_bytes(event.key)):
            return  # forwarded before (read again after a restart)
        if not self._owns(event.key):
            if self._holds(event.key):
                self._deferred.append(event)
            return  # another instance's shard
        name = tenant_of(message.topic)
        tenant = self.tenants.named(name) if name is not None else None
        if tenant is None:  # not one of the tenant topics subscribed: cannot happen
            await self.dead_letters.reject(event, f"{message.topic} is no tenant's spec topic in the tenants file")
            return
        door = tenant_topics(tenant.name)
        decoded = await self.dead_letters.decode_or_reject(event, door.specs, copy_to=door.dead_letters)
        if decoded is None:
            self._decided(message.topic, message.partition, message.offset, raw_bytes(event.key))
            self._audit(tenant, record_key(event.key) or "", INVALID, "event", "not a valid spec")
            return

        async def reject(reason: str) -> None:
            await self.dead_letters.reject(event, reason, copy_to=door.dead_letters)

        await self._decide(tenant, decoded.event, decoded.envelope.correlation_id,
                           (message.topic, message.partition, message.offset), reject)

    async def _decide(self, tenant: Tenant, spec: TopicSpec | TopicSpecDeleted, correlation_id: str,
                      origin: tuple[str, int, int], reject: Callable[[str], Awaitable[None]]) -> None:
        await self._accept_or_refuse(tenant, spec, correlation_id, origin, reject)
        self._decided(*origin, spec.name.encode())

    async def _accept_or_refuse(self, tenant: Tenant, spec: TopicSpec | TopicSpecDeleted, correlation_id: str,
                                origin: tuple[str, int, int], reject: Callable[[str], Awaitable[None]]) -> None:
        if reason := reserved_topic(spec.name) or not_ours(spec):
            await reject(reason)
            self._audit(tenant, spec.name, INVALID, "reserved", reason)
            return
        decision = decide(tenant, spec, self.claims, existing=self._in_cluster(spec.name) is not None,
                          kept=lambda name: self._in_cluster(name) or 0)
        if not decision.accepted:
            await reject(decision.reason)
            claim = self.claims.get(spec.name)
            await send(self.outbox, tenant_topics(tenant.name).status,
                       refusal_status(spec.name, decision, claim.owner if claim else None, origin[2] + 1))
            self._audit(tenant, spec.name, decision.condition or INVALID, decision.rule, decision.reason)
            return
        forwarded = spec.model_copy(update={"owner": tenant.name})
        event_id = origin_id(*origin)
        # Awaited before the next record: its claim counts for the next, and the offset is committed after it.
        await send(self.outbox, TOPICS.specs, forwarded, correlation_id=correlation_id, event_id=event_id)
        self.take(spec.name, forwarded, event_id, latest=True)
        self._unread[spec.name] = event_id
        self._audit(tenant, spec.name, "accepted", "-", type(spec).__name__)

    @staticmethod
    def _audit(tenant: Tenant, topic: str, decision: str, rule: str, reason: str) -> None:
        TENANT_DECISIONS.labels(tenant.name, decision).inc()
        log.info("tenant change", tenant=tenant.name, topic=topic, decision=decision, rule=rule, reason=reason)
