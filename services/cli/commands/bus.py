"""The bus itself: create Ballast's topics on it, produce events, record topics to a log, replay a log, export the
events' JSON schemas."""

from __future__ import annotations

import base64
import json
import sys
import time
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.markup import escape

from events import InvalidEvent, decode
from events.models import Event
from events.schema import json_schemas
from events.topics import BusTopic
from services.cli.output import console, fail
from services.common import busio
from services.common.busio import NoSuchTopic
from services.common.settings import get_settings
from services.domain.tenants import schema as tenants_schema

# The tenants file's schema among the events' (an editor checks a tenants file against it).
TENANTS_FILE_SCHEMA = "ballast.TenantsFile"


def produce(
    topic: Annotated[Optional[str], typer.Option(  # noqa: UP007
        help="bus topic (default: the spec topic of whoever the CLI acts as: a tenant's own with BALLAST_TENANT)")
    ] = None,
    key: Annotated[Optional[str], typer.Option(help="record key (default: the event's key)")] = None,  # noqa: UP007
    file: Annotated[Optional[Path], typer.Option("-f", "--file", help="JSON lines; - or omitted: stdin")] = None,  # noqa: UP007
    validate: Annotated[bool, typer.Option(help="refuse records that are not valid events of the topic")] = True,
) -> None:
    """Produce events, one JSON document per line, to a bus topic.

    A line is an envelope ({"schema": ..., "payload": ...}), or just the event itself, which gets the envelope of the
    topic's main event: on the specs topic {"name": "orders", "partitions": 6, "replicas": 3} is a topic spec."""
    from events.serde import envelope_for

    from services.cli.tenancy import bus_topic_named, spec_topics

    topic = topic or spec_topics(get_settings()).specs.name
    text = file.read_text() if file and str(file) != "-" else sys.stdin.read()
    bus_topic = bus_topic_named(topic)
    items = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        record_key, value = key, line.encode()
        if validate:
            try:
                event, enveloped = _event_of_line(line, bus_topic, topic)
            except InvalidEvent as exc:
                raise fail(f"line {number}: {exc.reason}") from None
            record_key = record_key or event.key
            if not enveloped:
                value = envelope_for(event).model_dump_json(by_alias=True).encode()
        items.append((topic, record_key.encode() if record_key else None, value, None))
    count = busio.produce(get_settings().bus, items)
    console.print(f"produced {count} record(s) to {escape(topic)}")

def _event_of_line(line: str, bus_topic: BusTopic[Event] | None, topic: str) -> tuple[Event, bool]:
    """The event a line holds, and whether the line is an envelope: decoded from its envelope, or validated as the
    topic's main event type."""
    from pydantic import ValidationError

    try:
        document = json.loads(line)
    except json.JSONDecodeError:
        document = None  # not JSON: the validation below says where
    if isinstance(document, dict) and "schema" in document:
        return decode(line, topic=bus_topic).event, True
    if bus_topic is None or not bus_topic.events:
        raise InvalidEvent(f"{topic} is not a Ballast topic with events: give whole envelopes "
                           '({"schema": ..., "version": ..., "payload": ...})')
    cls = bus_topic.events[0]
    try:
        return cls.model_validate_json(line), False
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or '(root)'}: {e['msg']}"
                             for e in exc.errors(include_url=False))
        raise InvalidEvent(f"not a valid {cls.SCHEMA.removeprefix('ballast.')} nor an envelope: {problems}") from None

def record(
    topics: Annotated[list[str], typer.Argument(help="bus topics to record")],
    follow: Annotated[bool, typer.Option(help="keep recording until Ctrl-C")] = False,
    idle: Annotated[float, typer.Option(help="without --follow: stop after this many idle seconds")] = 1.0,
) -> None:
    """Write every record of TOPICS to stdout as JSON lines (keys, headers and timestamps kept)."""
    try:
        for r in busio.consume(get_settings().bus, topics, follow=follow, idle_s=idle, must_exist=True):
            print(json.dumps({
                "topic": r.topic, "partition": r.partition, "offset": r.offset, "timestampMs": r.timestamp_ms,
                "key": _b64(r.key), "value": _b64(r.value),
                "headers": [[k, _b64(v)] for k, v in r.headers],
            }), flush=True)
    except NoSuchTopic as exc:
        raise fail(str(exc)) from None
    except KeyboardInterrupt:
        pass

def replay(
    log: Annotated[Path, typer.Argument(help="a log written by `ballast record`")],
    speed: Annotated[float, typer.Option(help="time compression; 0 = as fast as possible")] = 0.0,
    to_topic: Annotated[Optional[str], typer.Option(help="send everything to this topic instead")] = None,  # noqa: UP007
    into_live: Annotated[bool, typer.Option(
        "--into-live", help="replay into topics that already hold records: the services act on every recorded "
                            "event again, in order")] = False,
) -> None:
    """Feed a recorded log into the bus in order, keys and headers kept.

    For reproducing what happened: into a fresh bus (a new `ballast up`, a test stack), or another topic with
    --to-topic. Into a live bus, every old spec would be acted on again (a topic's replication factor would go through
    each recorded value), so a topic that holds records is refused unless --into-live says that is the point."""
    settings = get_settings()
    entries = recorded_entries(log)
    if not into_live:
        try:
            counts = busio.record_counts(settings.bus, sorted({to_topic or e["topic"] for e in entries}))
        except busio.BusUnavailable as exc:
            raise fail(str(exc)) from None
        if holding := {topic: n for topic, n in counts.items() if n}:
            raise fail(f"{', '.join(f'{t} ({n} records)' for t, n in holding.items())}: already on this bus, and "
                       "the services would act on every recorded event again. Replay into a fresh bus or another "
                       "topic (--to-topic), or pass --into-live if that is what you want")
    entries.sort(key=lambda e: (e["timestampMs"], e["offset"]))
    start_wall, start_log = time.monotonic(), entries[0]["timestampMs"] if entries else 0
    for entry in entries:
        if speed > 0:
            due = (entry["timestampMs"] - start_log) / 1000.0 / speed
            delay = due - (time.monotonic() - start_wall)
            if delay > 0:
                time.sleep(delay)
        headers = [(k, _unb64(v)) for k, v in entry.get("headers", [])]
        busio.produce(settings.bus, [(to_topic or entry["topic"], _unb64(entry["key"]), _unb64(entry["value"]), headers)])
    console.print(f"replayed {len(entries)} record(s) from {log}")

RECORDED_FIELDS = ("topic", "offset", "timestampMs", "key", "value")


def recorded_entries(log: Path) -> list[dict]:
    """The entries of a log `ballast record` wrote; any other file is refused with the line that is not one."""
    entries = []
    for number, line in enumerate(log.read_text().splitlines(), start=1):
        if not line.strip():
            continue
        try:
            entry = json.loads(line)
        except ValueError as exc:
            raise fail(f"{log}, line {number}: not JSON ({exc})") from None
        missing = [f for f in RECORDED_FIELDS if not isinstance(entry, dict) or f not in entry]
        if missing:
            raise fail(f"{log}, line {number}: not an entry of `ballast record` (no {', '.join(missing)}); to send "
                       "events themselves, use `ballast produce`") from None
        entries.append(entry)
    return entries


def _b64(data: bytes | None) -> str | None:
    return base64.b64encode(data).decode() if data is not None else None

def _unb64(text: str | None) -> bytes | None:
    return base64.b64decode(text) if text is not None else None

def init_bus() -> None:
    """Create Ballast's topics on the bus where missing, waiting for the bus to answer, then exit.

    For an init container or a Kubernetes Job; every service does the same as it starts. With a tenants file
    (BALLAST_TENANTS_FILE), each tenant's spec, status and dead-letter topics too. Partitions and replication
    are BALLAST_BUS__TOPIC_PARTITIONS and BALLAST_BUS__TOPIC_REPLICATION_FACTOR; topics that exist are left as
    they are."""
    from services.common.bus_topics import BusRefused, deployment_topics, wait_for_bus
    from services.common.logging import configure_logging, get_logger
    from services.domain.tenants import TenantsError

    settings = get_settings()
    # Its lines are a service's: JSON unless on a terminal (an init container's log), the waits included.
    configure_logging("init-bus", level=settings.log_level, fmt=settings.log_format)
    try:
        topics = deployment_topics(settings.tenants_file)
    except TenantsError as exc:
        raise fail(str(exc), 2) from None
    try:
        wait_for_bus(settings.bus, topics)
    except BusRefused as exc:
        raise fail(str(exc)) from None
    get_logger("init-bus").info("the bus holds Ballast's topics", bootstrap_servers=settings.bus.bootstrap_servers,
                                topics=len(topics))


def schema(out: Annotated[Optional[Path], typer.Option(help="write one file per schema here")] = None) -> None:  # noqa: UP007
    """Export the JSON schemas of the envelope, every event and the tenants file (BALLAST_TENANTS_FILE)."""
    schemas = {**json_schemas(), TENANTS_FILE_SCHEMA: tenants_schema()}
    if out is None:
        print(json.dumps(schemas, indent=2))
        return
    out.mkdir(parents=True, exist_ok=True)
    for name, document in schemas.items():
        (out / f"{name}.json").write_text(json.dumps(document, indent=2) + "\n")
    console.print(f"wrote {len(schemas)} schemas to {out}")
