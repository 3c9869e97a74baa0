"""The I/O around ``ballast apply`` and ``ballast diff``: gathering what the specs are compared with, printing the
differences, and following the status topic until applied specs settle (``--wait``)."""

from __future__ import annotations

import re
import time
from collections.abc import Iterable, Mapping
from dataclasses import replace
from datetime import UTC, datetime

from rich.console import Console
from rich.markup import escape

from events import TOPICS, RebalanceRequest, TopicSpec, TopicSpecDeleted, TopicStatus
from services.cli.changes import (
    Diff,
    Outcome,
    RebalanceDiff,
    TopicDiff,
    Verdict,
    diff_topic,
    outcome,
    policy_refusal,
    prune,
    rebalance_diff,
)
from services.cli.output import fail
from services.cli.tenancy import answered, spec_topics
from services.common.wording import transition_line
from services.common import busio
from services.adapters.admin import AdminError, ClusterAdmin
from services.adapters.admin.factory import ask_cluster
from services.adapters.admin.port import TopicDefaults, TopicDescription
from services.common.settings import Settings
from services.domain.policy import Policy, PolicyError, check_spec, load_policy
from services.topic_reconciler.logic import effective_spec, needs_defaults


def compare(settings: Settings, specs: list[TopicSpec], *, need_cluster: bool
            ) -> tuple[dict[str, TopicDiff], str | None]:
    """Each spec against the spec on the bus and the topic in the cluster. When the cluster cannot be asked: exit 2
    if ``need_cluster``, else every spec counts as a change (the second value says why)."""
    if not specs:
        return {}, None
    # With their offsets: a tenant's spec is compared with its status by them (_republish_unanswered).
    records = busio.read_compacted(settings.bus, spec_topics(settings).specs, timeout_s=10)
    current = {name: stored.decoded.event for name, stored in records.items()}
    policy = policy_of(settings)
    unreachable = None

    async def look(admin: ClusterAdmin) -> tuple[dict[str, TopicDescription | None], int, TopicDefaults | None]:
        described = await admin.describe_topics([s.name for s in specs])
        # Only read where a spec leaves a new topic's partitions or replicas to the cluster.
        needing = any(needs_defaults(s, described.get(s.name)) for s in specs)
        defaults = await admin.topic_defaults() if needing else None
        return described, sum(1 for b in await admin.brokers() if b.alive), defaults

    try:
        actual, alive, defaults = ask_cluster(settings.cluster_admin, look)
    except AdminError as exc:
        unreachable = f"the cluster did not answer ({exc})" if exc.temporary else f"the cluster refused ({exc})"
        if need_cluster:
            raise fail(unreachable, 2) from None
        diffs = {s.name: policy_refusal(s.name, check_spec(policy, s))
                 or TopicDiff(s.name, Verdict.CHANGE, publish=current.get(s.name) != s) for s in specs}
        if settings.tenant is not None:
            # A tenant named by a pattern may describe none of its topics (Kafka's ACLs have no patterns).
            _republish_unanswered(settings, settings.tenant, diffs, records)
        return diffs, unreachable
    diffs = {}
    for spec in specs:
        existing = current.get(spec.name)
        effective = effective_spec(spec, actual.get(spec.name), None, defaults) or spec
        diffs[spec.name] = diff_topic(spec, existing if isinstance(existing, TopicSpec) else None,
                                      actual.get(spec.name), alive, check_spec(policy, effective),
                                      config_ownership=settings.reconciler.config_ownership, defaults=defaults)
    if settings.tenant is not None:
        _republish_unanswered(settings, settings.tenant, diffs, records)
    return diffs, None


def _republish_unanswered(settings: Settings, tenant: str, diffs: dict[str, TopicDiff],
                          records: Mapping[str, busio.Stored[TopicSpec | TopicSpecDeleted]]) -> None:
    """A tenant's spec identical to its last record is sent again where Ballast does not act on that record (refused,
    or an admin's spec took its place): "unchanged" would otherwise keep it refused, or the admin's, for good."""
    same = [name for name, d in diffs.items() if d.verdict is not Verdict.REFUSED and not d.publish]
    if not same:
        return
    statuses = busio.latest(settings.bus, spec_topics(settings).status, timeout_s=10)
    for name in same:
        record = records.get(name)
        if not answered(tenant, record.offset if record else None, statuses.get(name)):
            diffs[name] = replace(diffs[name], publish=True)


def policy_of(settings: Settings) -> Policy:
    """The policy file of the settings (the default policy without one); exit 2 when it is not a policy."""
    try:
        return load_policy(settings.policy_file)
    except PolicyError as exc:
        raise fail(str(exc), 2) from None


def compare_prune(settings: Settings, specs: list[TopicSpec], match: str | None = None) -> list[TopicDiff]:
    """``--prune``: the specs on the bus of topics ``specs`` does not name (only those whose name ``match`` finds,
    when given), each withdrawn. Refused when the files name no topic at all: that would withdraw every spec, which
    is what `ballast delete` is for."""
    if not specs:
        raise fail("--prune with no topic spec in the files would withdraw every spec: refused (ballast delete "
                   "withdraws specs by name)", 2)
    try:
        scope = re.compile(match) if match is not None else None
    except re.error as exc:
        raise fail(f"--prune-match {match!r} is not a regular expression: {exc}", 2) from None
    try:
        current = busio.latest(settings.bus, spec_topics(settings).specs, timeout_s=10)
        statuses = busio.latest(settings.bus, spec_topics(settings).status, timeout_s=10)
    except busio.BusUnavailable as exc:
        raise fail(str(exc), 2) from None
    specified = [name for name, spec in current.items() if isinstance(spec, TopicSpec)
                 and (scope is None or scope.search(name))]
    return prune(specified, [s.name for s in specs], statuses, policy_of(settings))  # type: ignore[arg-type]


def compare_rebalances(settings: Settings, requests: list[RebalanceRequest]) -> list[RebalanceDiff]:
    """Each request against its rebalance's status on the bus."""
    if not requests:
        return []
    try:
        statuses = busio.latest(settings.bus, TOPICS.rebalance_status, timeout_s=10)
    except busio.BusUnavailable as exc:
        raise fail(str(exc), 2) from None
    now = datetime.now(UTC)
    return [rebalance_diff(r, statuses.get(r.name), now) for r in requests]  # type: ignore[arg-type]


def print_diffs(diffs: Iterable[Diff], console: Console) -> None:
    colour = {Verdict.CREATE: "green", Verdict.CHANGE: "yellow", Verdict.UNCHANGED: "dim", Verdict.WITHDRAW: "red",
              Verdict.REFUSED: "red"}
    for d in diffs:
        head = f"[{colour[d.verdict]}]{escape(d.label)}: {d.verdict.value}[/{colour[d.verdict]}]"
        if isinstance(d, TopicDiff) and d.verdict is Verdict.CHANGE and not d.publish:
            head += " (the spec on the bus already asks for this)"
        console.print(head, soft_wrap=True)
        for line in d.changes:
            console.print(f"  {escape(line)}", soft_wrap=True)
        for line in d.spec_changes if isinstance(d, TopicDiff) else []:
            console.print(f"  spec {escape(line)}", soft_wrap=True)
        for line in d.warnings:
            console.print(f"  [yellow]warning:[/yellow] {escape(line)}", soft_wrap=True)


def wait_until_settled(settings: Settings, specs: list[TopicSpec], generations: dict[str, int], *, timeout_s: float,
                       console: Console) -> int:
    """Follow the status topic, printing each transition of the applied topics, until every one is ready or has
    failed. An unchanged spec (not in ``generations``) needs only its current status to be ready. Returns the exit
    code: 0 when all are ready (a paused or unmanaged spec is, once its status says so, if its topic exists), 1
    otherwise (failed, blocked, paused before its topic was created, or not settled within ``timeout_s``)."""
    wanted = {s.name: s for s in specs}
    latest: dict[str, TopicStatus] = {}
    settled: dict[str, tuple[Outcome, str]] = {}
    deadline = time.monotonic() + timeout_s
    console.print(f"[dim]waiting for {len(wanted)} topic(s) (up to {timeout_s:.0f} s)[/dim]")
    for status in busio.events(settings.bus, spec_topics(settings).status, follow=True, deadline=deadline):
        if status.topic not in wanted:
            continue
        previous = latest.get(status.topic)
        latest[status.topic] = status
        if status.generation < generations.get(status.topic, 0):
            continue  # the topic's history, read from the start of the status topic: not this change's transitions
        state, why = outcome(wanted[status.topic], generations.get(status.topic, 0), status)
        if previous is not None or state is not Outcome.WAITING:
            console.print(f"[dim]{time.strftime('%H:%M:%S')}[/dim]  {escape(transition_line(status, previous))}",
                          soft_wrap=True)
        if state is Outcome.WAITING:
            settled.pop(status.topic, None)
        else:
            settled[status.topic] = (state, why)
        if len(settled) == len(wanted):
            break
    for name in wanted:
        state, why = settled.get(name, (Outcome.WAITING, "not settled in time"))
        mark = {"ready": "[green]ready[/green]", "failed": "[red]failed[/red]", "blocked": "[yellow]blocked[/yellow]",
                "held": "[yellow]not ready[/yellow]"}.get(state.value, "[yellow]timed out[/yellow]")
        shown = state is not Outcome.READY or why != "ready"
        console.print(f"{escape(name)}: {mark}" + (f": {escape(why)}" if shown else ""), soft_wrap=True)
    return 0 if all(settled.get(n, (Outcome.WAITING, ""))[0] is Outcome.READY for n in wanted) else 1
