"""Taking over a running cluster: ``ballast export`` writes specs for the topics that exist, ``ballast status
--unmanaged`` lists the topics no spec names."""

from __future__ import annotations

import re
from typing import Annotated, Optional

import typer
import yaml
from rich.markup import escape

from events import TopicSpec
from services.cli.exporting import Form, document, export as exported
from services.cli.output import console, err, fail
from services.cli.tenancy import spec_topics
from services.common import busio
from services.adapters.admin import AdminError, ClusterAdmin
from services.adapters.admin.factory import ask_cluster
from services.adapters.admin.port import TopicDescription
from services.common.busio import BusUnavailable
from services.common.settings import Settings, get_settings


def _cluster_and_specs(settings: Settings, names: list[str]) -> tuple[dict[str, TopicDescription], set[str]]:
    """The cluster's topics (these, or every one that is not internal), described; the topics with a spec."""
    async def look(admin: ClusterAdmin) -> dict[str, TopicDescription]:
        if not names:
            return await admin.list_topics()
        described = await admin.describe_topics(names)
        if missing := sorted(n for n, d in described.items() if d is None):
            raise typer.Exit(_missing(missing))
        return {n: d for n, d in described.items() if d is not None}

    try:
        topics = ask_cluster(settings.cluster_admin, look)
    except AdminError as exc:
        raise fail(f"the cluster did not answer: {exc}") from None
    try:
        specs = busio.latest(settings.bus, spec_topics(settings).specs, timeout_s=10)
    except BusUnavailable as exc:
        raise fail(str(exc)) from None
    return topics, {name for name, spec in specs.items() if isinstance(spec, TopicSpec)}


def _missing(names: list[str]) -> int:
    err.print(f"[red]error:[/red] no such topic in the cluster: {escape(', '.join(names))}", soft_wrap=True)
    return 1


def _pattern(match: str | None) -> re.Pattern[str] | None:
    try:
        return re.compile(match) if match is not None else None
    except re.error as exc:
        raise fail(f"--match {match!r} is not a regular expression: {exc}", 2) from None


def export(
    topics: Annotated[Optional[list[str]], typer.Argument(help="only these topics (default: every one)")] = None,  # noqa: UP007
    match: Annotated[Optional[str], typer.Option("--match", metavar="REGEX", help="only topics whose name this "  # noqa: UP007
                                                 "regular expression finds")] = None,
    form: Annotated[Form, typer.Option("--form", help="plain specs or Strimzi KafkaTopics")] = Form.plain,
    include_specified: Annotated[bool, typer.Option("--include-specified", help="export topics that have a spec "
                                                    "already too")] = False,
) -> None:
    """Write specs (YAML, with adopt: true) for topics that exist on the cluster, to take them over.

    Each says what the topic is now (partitions, replication factor, the configs set on the topic itself), so
    applying it changes nothing and makes the topic Ballast's, deletion included. Kafka's internal topics and
    Ballast's own are never exported, nor (by default) topics with a spec. Review with `ballast diff -f`, then
    `ballast apply -f`. What was left out, and why, goes to stderr."""
    settings = get_settings()
    cluster, specified = _cluster_and_specs(settings, topics or [])
    result = exported(cluster, specified, match=_pattern(match), include_specified=include_specified or bool(topics))
    documents = [document(spec, form) for spec in result.specs]
    if documents:
        print(yaml.safe_dump_all(documents, sort_keys=False, explicit_start=True), end="")
    for name, why in result.skipped.items():
        err.print(f"[dim]left out {escape(name)}: {escape(why)}[/dim]", soft_wrap=True)
    err.print(f"{len(documents)} topic(s) exported, {len(result.skipped)} left out", soft_wrap=True)


def print_unmanaged(match: str | None) -> None:
    """The cluster's topics that no spec names (Kafka's internal topics and Ballast's own left out), one a line:
    what `ballast export` would take over."""
    cluster, specified = _cluster_and_specs(get_settings(), [])
    for spec in exported(cluster, specified, match=_pattern(match)).specs:
        console.print(spec.name, soft_wrap=True, highlight=False)
