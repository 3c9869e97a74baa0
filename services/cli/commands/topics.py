"""Topic specs: apply, diff, delete, and their statuses (status, describe)."""

from __future__ import annotations

from typing import Annotated, Optional

import typer
from rich.markup import escape

from events import TOPICS, TopicSpecDeleted, TopicStatus
from services.cli.manifests import Manifest, ManifestError, load_sources
from services.cli.tenancy import spec_topics
from services.cli.output import (JsonFlag, Output, OutputOption, chosen, confirm, console, emit, emit_one, err,
                                fail)
from services.cli.views import status_table
from services.common import busio
from services.common.busio import BusUnavailable
from services.common.settings import get_settings
from services.common.wording import transition_line


PruneOption = Annotated[bool, typer.Option("--prune", help="also withdraw the specs on the bus of topics the files no "
                                           "longer name (their topics are deleted where Ballast created or adopted "
                                           "them)")]
PruneMatchOption = Annotated[Optional[str], typer.Option(  # noqa: UP007 -- typer
    "--prune-match", metavar="REGEX", help="with --prune: only specs whose topic name this regular expression finds "
    "(the files' share of the bus, as kubectl's --prune -l)")]
AdoptOption = Annotated[bool, typer.Option("--adopt", help="every topic spec of the files adopts its topic where it "
                                           "exists (adopt: true), as Strimzi's Topic Operator takes over a topic "
                                           "its KafkaTopic names: withdrawing the spec then deletes it")]
FilesOption = Annotated[list[str], typer.Option(
    "-f", "--file", metavar="PATH", help="YAML or JSON: topic specs (Strimzi KafkaTopic or plain) and rebalances "
    "(Strimzi KafkaRebalance or plain kind: Rebalance); a file, a directory (its .yaml, .yml and .json files, "
    "recursively) or - for standard input; repeat for more")]


def apply(
    file: FilesOption,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="publish nothing: show what would change (as `ballast "
                                          "diff`)")] = False,
    wait: Annotated[bool, typer.Option("--wait", help="wait until every topic applied is ready or has failed; "
                                       "exit 1 unless all are ready")] = False,
    timeout: Annotated[float, typer.Option(help="with --wait: give up after this many seconds", min=1)] = 300.0,
    prune: PruneOption = False,
    prune_match: PruneMatchOption = None,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="with --prune: do not ask for confirmation")] = False,
    adopt: AdoptOption = False,
) -> None:
    """Publish the desired state of topics and rebalances.

    A spec identical to the one on the bus is not published again (its generation stays); warnings (partitions Kafka
    cannot remove, a replication factor too few brokers can hold) are printed first. With --prune the files are the
    whole desired state: specs of topics they no longer name are withdrawn (after asking)."""
    from events import RebalanceRequest, TopicSpec
    from services.cli.applying import compare, compare_prune, compare_rebalances, print_diffs, wait_until_settled
    from services.cli.changes import Verdict

    manifests = desired(file, adopt)
    settings = get_settings()
    specs = [m for m in manifests if isinstance(m, TopicSpec)]
    diffs, unreachable = compare(settings, specs, need_cluster=dry_run)
    pruned = compare_prune(settings, specs, prune_match) if prune else []
    if dry_run:
        print_diffs([*diffs.values(), *pruned,
                     *compare_rebalances(settings, [m for m in manifests if isinstance(m, RebalanceRequest)])],
                    console)
        return
    if refused := [d for d in [*diffs.values(), *pruned] if d.verdict is Verdict.REFUSED]:
        for d in refused:
            for reason in d.warnings:
                err.print(f"[red]refused:[/red] {escape(d.name)}: {escape(reason)}", soft_wrap=True)
        raise fail(f"{len(refused)} spec(s) refused: nothing published", 2)
    if pruned:
        print_diffs(pruned, console)
        confirm(yes, "nothing applied")
    if unreachable:
        err.print(f"[yellow]note:[/yellow] {escape(unreachable)}: changes are not compared with the cluster",
                  soft_wrap=True)
    for d in diffs.values():
        for warning in d.warnings:
            err.print(f"[yellow]warning:[/yellow] {escape(d.name)}: {escape(warning)}", soft_wrap=True)
    sent = [m for m in manifests if not isinstance(m, TopicSpec) or diffs[m.name].publish]
    offsets: dict[bytes, int] = {}  # of the specs: a spec's generation is its record's offset + 1
    if sent_specs := [m for m in sent if isinstance(m, TopicSpec)]:
        busio.publish(settings.bus, spec_topics(settings).specs, sent_specs, offsets_by_key=offsets, as_burst=True)
    if requests := [m for m in sent if isinstance(m, RebalanceRequest)]:
        busio.publish(settings.bus, TOPICS.rebalance_requests, requests)
    if pruned:
        busio.publish(settings.bus, spec_topics(settings).specs, [TopicSpecDeleted(name=d.name) for d in pruned],
                      as_burst=True)
    for d in pruned:
        console.print(f"topic spec {escape(d.name)}: withdrawn", soft_wrap=True)
    for m in manifests:
        if isinstance(m, RebalanceRequest):
            brokers = f" brokers={m.brokers}" if m.brokers else ""
            console.print(f"rebalance {escape(m.name)}: mode={m.mode}{brokers}"
                          f"{' (auto-approved)' if m.auto_approve else ''} applied", soft_wrap=True)
        elif diffs[m.name].publish:
            counts = " ".join(f"{k}={v if v is not None else 'default'}" for k, v in (("partitions", m.partitions),
                                                                                       ("replicas", m.replicas)))
            console.print(f"topic spec {escape(m.name)}: {counts} applied", soft_wrap=True)
        else:
            console.print(f"topic spec {escape(m.name)}: unchanged", soft_wrap=True)
    if wait and specs:
        # An unchanged spec keeps the generation it has.
        generations = {key.decode(): offset + 1 for key, offset in offsets.items()}
        raise typer.Exit(wait_until_settled(settings, specs, generations, timeout_s=timeout, console=console))

def desired(files: list[str], adopt: bool) -> list[Manifest]:
    """This deployment's manifests of ``files`` (those for another cluster said and left out), adopting with --adopt."""
    try:
        loaded = load_sources(files)
    except ManifestError as exc:
        raise fail(str(exc), 2) from None
    for line in loaded.skipped:
        err.print(f"[yellow]skipped:[/yellow] {escape(line)}", soft_wrap=True)
    return adopting(loaded.manifests, adopt)


def adopting(manifests: list[Manifest], adopt: bool) -> list[Manifest]:
    """``--adopt``: every topic spec adopts its topic."""
    from events import TopicSpec

    return [m.model_copy(update={"adopt": True}) if adopt and isinstance(m, TopicSpec) else m for m in manifests]

def diff(
    file: FilesOption,
    output: OutputOption = None,
    prune: PruneOption = False,
    prune_match: PruneMatchOption = None,
    adopt: AdoptOption = False,
) -> None:
    """Show what `ballast apply -f PATH` would change, per topic and rebalance.

    Topics are compared with the live cluster and the specs on the bus: created, partitions, replication factor,
    config keys, placement choices; unchanged for no-ops. A rebalance is compared with its status on the bus: a new
    or changed request starts over with a new proposal, the same one changes nothing. With --prune, specs of topics
    the files no longer name are withdrawn. Exit 0: nothing would change, 1: something would, 2: a spec would be
    refused, a file is invalid or the cluster cannot be asked."""
    from events import RebalanceRequest, TopicSpec
    from services.cli.applying import compare, compare_prune, compare_rebalances, print_diffs
    from services.cli.changes import Verdict

    manifests = desired(file, adopt)
    settings = get_settings()
    specs = [m for m in manifests if isinstance(m, TopicSpec)]
    diffs, _ = compare(settings, specs, need_cluster=True)
    every = [*diffs.values(), *(compare_prune(settings, specs, prune_match) if prune else []),
             *compare_rebalances(settings, [m for m in manifests if isinstance(m, RebalanceRequest)])]
    if output in (None, Output.table):
        print_diffs(every, console)
    else:
        emit([d.document() for d in every], output, lambda: "")
    verdicts = {d.verdict for d in every}
    raise typer.Exit(2 if Verdict.REFUSED in verdicts else 0 if verdicts <= {Verdict.UNCHANGED} else 1)

def delete(
    topics: Annotated[list[str], typer.Argument(help="topic names")],
    yes: Annotated[bool, typer.Option("--yes", "-y", help="do not ask for confirmation")] = False,
) -> None:
    """Withdraw topic specs. A topic Ballast created (or a spec adopted) is deleted; any other is left as it is.

    Names without a live spec are refused, and so are Kafka's internal topics and Ballast's own."""
    from events.names import check_topic_name
    from events.topics import reserved_topic
    from services.cli.applying import policy_of
    from services.cli.changes import Withdrawal, withdrawal
    from services.domain.policy import check_withdrawal

    settings = get_settings()
    for name in topics:
        try:
            check_topic_name(name)
        except ValueError as exc:  # refused before the bus is asked: no such topic can exist
            raise fail(str(exc)) from None
        if reason := reserved_topic(name):
            raise fail(reason)
        if protected := check_withdrawal(policy_of(settings), name):
            raise fail(f"{name}: {protected}", 2)  # a policy refusal, as from apply and diff
    try:
        statuses = busio.latest(settings.bus, spec_topics(settings).status, timeout_s=10)
    except BusUnavailable as exc:
        raise fail(str(exc)) from None
    effects: dict[Withdrawal, list[str]] = {effect: [] for effect in Withdrawal}
    for name in topics:
        status = statuses.get(name)
        if status is None or status.deleted:
            if settings.tenant is not None:  # the tenant sees the statuses of its own names only
                raise fail(f"no spec for topic {name!r} among those of tenant {settings.tenant!r}: it is not one of "
                           "its topics (another tenant's, or one Ballast does not manage), so it has nothing to "
                           "withdraw")
            raise fail(f"no spec for topic {name!r}: Ballast does not manage it, so there is nothing to withdraw")
        assert isinstance(status, TopicStatus)
        if settings.tenant is not None and status.owner not in (None, settings.tenant):
            # A refusal's status names the owner: the gate would refuse this withdrawal too.
            raise fail(f"{name}: tenant {status.owner!r} owns it, not {settings.tenant!r}: only its owner withdraws "
                       "it", 2)
        effects[withdrawal(status)].append(name)
    deleting, retaining, absent = (effects[e] for e in (Withdrawal.DELETES, Withdrawal.RETAINS, Withdrawal.NO_TOPIC))
    if deleting:
        console.print(f"the topics {', '.join(deleting)} will be deleted with their data", soft_wrap=True)
    if retaining:
        console.print(f"the specs of {', '.join(retaining)} will be withdrawn; the topics stay (Ballast neither "
                      "created nor adopted them)", soft_wrap=True)
    if absent:
        console.print(f"the specs of {', '.join(absent)} will be withdrawn; there is no such topic in the cluster",
                      soft_wrap=True)
    confirm(yes, "nothing deleted")
    events = [TopicSpecDeleted(name=name) for name in topics]
    busio.publish(settings.bus, spec_topics(settings).specs, events, as_burst=True)
    said = {**dict.fromkeys(retaining, " (topic retained)"), **dict.fromkeys(absent, " (there is no topic)")}
    for name in topics:
        console.print(f"topic spec {name}: withdrawn{said.get(name, '')}")

def _latest_statuses() -> dict[str, TopicStatus]:
    settings = get_settings()
    return busio.latest(settings.bus, spec_topics(settings).status, timeout_s=10)

def status(
    topic: Annotated[Optional[str], typer.Argument(help="only this topic (its name, or its KafkaTopic's "  # noqa: UP007
                                                   "metadata.name)")] = None,
    output: OutputOption = None,
    as_json: JsonFlag = False,
    watch: Annotated[bool, typer.Option("--watch", "-w", help="keep printing transitions (Ctrl-C stops)")] = False,
    unmanaged: Annotated[bool, typer.Option("--unmanaged", help="list the cluster's topics that no spec names, one a "
                                            "line (what `ballast export` would take over)")] = False,
    match: Annotated[Optional[str], typer.Option("--match", metavar="REGEX", help="with --unmanaged: only names "  # noqa: UP007
                                                 "this regular expression finds")] = None,
) -> None:
    """Show topic statuses: the latest per topic, or every transition with --watch."""
    if unmanaged:
        from services.cli.commands.adopting import print_unmanaged

        print_unmanaged(match)
        return
    fmt = chosen(output, as_json)
    if not watch:
        statuses = [s for s in _latest_statuses().values() if topic is None or s.named(topic)]
        if topic is not None and not statuses:
            raise fail(f"no status for topic {topic!r} yet")
        emit(statuses, fmt, lambda: status_table(statuses))
        return
    previous: dict[str, TopicStatus] = {}
    try:
        settings = get_settings()
        for event in busio.events(settings.bus, spec_topics(settings).status, follow=True):
            if topic is not None and not event.named(topic):
                continue
            if fmt is Output.table:
                console.print(transition_line(event, previous.get(event.topic)), soft_wrap=True)
            else:
                emit_one(event, fmt)
            previous[event.topic] = event
    except BusUnavailable as exc:
        raise fail(f"stopped watching: {exc}") from None
    except KeyboardInterrupt:
        pass

def describe(
    topic: Annotated[str, typer.Argument(help="topic name")],
    output: OutputOption = None,
) -> None:
    """Show one topic: its spec, the cluster and its status side by side, and every partition.

    Partitions with their replicas' racks and log directories, leader, in-sync replicas, offline replicas and
    placeholders. Works on any topic, managed or not."""
    from services.cli.describe import AdminError, document, gather, render

    try:
        view = gather(get_settings(), topic)
    except AdminError as exc:
        raise fail(f"cannot describe {topic!r}: the cluster did not answer ({exc})") from None
    if not view.exists:
        raise fail(f"no topic {topic!r}: not in the cluster, and no spec names it")
    emit([document(view)], output or Output.table, lambda: render(view))
