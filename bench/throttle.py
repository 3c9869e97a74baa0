"""Benchmark: a move under a varying produce load on the real local Kafka cluster, with (a) a fixed throttle chosen
for the traffic's peak, (b) a fixed throttle chosen for its average, (c) the throttle controller, and (d) the
controller with its latency probe and a produce-latency limit; between brokers (a rebalance) and between one
broker's directories (a drain), side by side in one run.

    python -m bench.throttle [--move-mb 160] [--capacity-mb 8] [--latency-limit-ms 40] [--write BENCHMARKS.md]

Each broker can carry ``capacity`` bytes per second (the controller's network and disk capacity settings). A client
produces to a topic of RF 3 over the four brokers at a rate that steps between a low and a peak every few seconds;
each broker takes about 3/4 of it in. The fixed throttles are what an operator would set from that: the safety share
(0.8) of the capacity less the peak's or the average's traffic. The move is all partitions of a topic on broker 1:
reassigned to broker 2 (rebalance), or from broker 1's first directory to its second (drain), set as Kafka's
reassignment tool sets it (rates on the brokers, the replicas in the topic's lists) for (a) and (b). For (c) and (d)
the move starts under the controller's floor, named in its ledger as if it had set it at a look before the copy
began, and the controller is started as the move starts: it takes the floor over as its own and goes on from there.
(Unthrottled, a move here copies about 100 MB/s: one this size would be over before the controller's first look, and
the figures would say nothing of its rates.)

Measured while the move runs: its completion time; the bytes it copied per second against the rate in force (the
mean of the rate polled every 0.5 s, the lower of the sender's and the receiver's); the client's produce latency p99
(acks=all, delivery callbacks); and the partitions outside the move that left their ISR.

The controller's log (at info: every rate it changes, and why) is kept in the run's directory, ``logs/throttle.log``;
its path is printed at the start and again when a step fails. Each variant's line names the time it began (UTC, as
the log's lines), to find its part of the log.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from confluent_kafka import Producer

from bench.markdown import replace_section
from bench.replicas_change import percentile
from events import TOPICS, ThrottleLedger
from events.throttle import OwnedBrokerConfig, OwnedListItems
from services.common import busio
from services.adapters.admin import INTRA_BROKER_THROTTLE
from services.adapters.admin.kafka import KafkaClusterAdmin
from services.local.stack import LocalStack
from services.throttle.ownership import FOLLOWER_ITEMS, FOLLOWER_RATE, LEADER_ITEMS, LEADER_RATE, RATE_CONFIGS

MB = 1_000_000
SHARE = 0.8
FLOOR = 1 * MB  # the controller's floor (its default)
SOURCE, DESTINATION = 1, 2
PARTITIONS = 8
CLIENT_TOPIC = "bench-clients"
LOW_MB_S, PEAK_MB_S = 0.4, 4.0
STEP_S = 8.0  # the client's rate changes every STEP_S seconds
WARM_UP_S = 4 * STEP_S
CLIENT_SHARE_PER_BROKER = 3 / 4  # RF 3 over 4 brokers
PROBE_TOPIC = "bench-latency-probe"
PROBE_EVERY_S = 0.1  # a hundred samples a window: its p99 is not one unlucky record
PROBE_WINDOW_S = HOLD_S = 10  # (d): a short window and hold, for moves of about half a minute
CONTROLLER_LABELS = {"c": "controller", "d": "controller, latency limit"}
# The controller logs what it changes and why at info: its log is what explains a run that went wrong.
CONTROLLER_LOG = {"BALLAST_LOG_LEVEL": "info"}


@dataclass
class Figures:
    variant: str
    rate_label: str
    seconds: float = 0.0
    copied_mb_s: float = 0.0
    allowed_mb_s: float = 0.0
    p99_ms: float = 0.0
    isr_lost: int = 0
    samples: list[tuple[float, int, int]] = field(default_factory=list)  # (t, bytes copied, rate in force)


class Client:
    """The producer whose rate steps between LOW and PEAK; delivery latencies are kept while ``measuring``."""

    def __init__(self, bootstrap: str) -> None:
        self.producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5,
                                  "compression.type": "none"})
        self.latencies: list[float] = []
        self.measuring = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def rate_now(self) -> float:
        return (PEAK_MB_S if int(time.monotonic() / STEP_S) % 2 else LOW_MB_S) * MB

    def _run(self) -> None:
        payload = os.urandom(10_000)
        sent = 0.0
        last = time.monotonic()
        while not self._stop.is_set():
            now = time.monotonic()
            sent += self.rate_now() * (now - last)
            last = now
            while sent >= len(payload):
                started = time.monotonic()
                self.producer.produce(CLIENT_TOPIC, payload, on_delivery=lambda err, _m, s=started: self._done(err, s))
                sent -= len(payload)
            self.producer.poll(0.005)
        self.producer.flush(30)

    def _done(self, err: object, started: float) -> None:
        if err is None and self.measuring:
            self.latencies.append((time.monotonic() - started) * 1000)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=60)


def fill(bootstrap: str, topic: str, partitions: int, mb_each: float) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "compression.type": "none", "acks": "all"})
    chunk = 100_000
    for partition in range(partitions):
        for _ in range(int(mb_each * MB / chunk)):
            producer.produce(topic, os.urandom(chunk), partition=partition)
            producer.poll(0)
    assert producer.flush(120) == 0


async def run_variant(stack: LocalStack, admin: KafkaClusterAdmin, client: Client, scenario: str, variant: str,
                      fixed: int | None, move_mb: float, limit_ms: float, say: Callable[[str], None]) -> Figures:
    assert stack.kafka is not None
    topic = f"bench-move-{scenario}-{variant}"
    source_dir, other_dir = (str(d) for d in stack.kafka.log_dirs(SOURCE))
    await admin.create_topic(topic, PARTITIONS, 1, assignment=[[SOURCE]] * PARTITIONS)
    await admin.alter_replica_log_dirs(topic, {(p, SOURCE): source_dir for p in range(PARTITIONS)})
    await _until(lambda: _all_in(admin, topic, source_dir), 120)
    fill(stack.kafka.bootstrap_servers, topic, PARTITIONS, move_mb / PARTITIONS)
    # Placing the replicas in the first directory may have been a move between broker 1's directories, which the
    # running controller throttled: its rate goes before the variant's throttles are set (else the controller could
    # take off a fixed rate set over its own, or be killed with its own still in force).
    await _until(lambda: _none_left(admin, topic), 60)
    label = f"{fixed / MB:.2f} MB/s fixed" if fixed else CONTROLLER_LABELS[variant]
    say(f"  {scenario} / {variant}: {move_mb:g} MB, {label} (from {_utc_now()})")
    if not fixed:
        stack.kill("throttle")
        bus = stack.settings().bus
        held = busio.latest(bus, TOPICS.throttle_ledger).get(ThrottleLedger().key, ThrottleLedger())
        busio.publish(bus, TOPICS.throttle_ledger, [seeded_ledger(held, topic, scenario)])
    await _throttle(admin, topic, scenario, fixed or FLOOR)
    outside_before = await _isr_short(admin, topic)
    figures = Figures(variant, label)
    client.latencies.clear()
    client.measuring = True
    started = time.monotonic()
    if scenario == "rebalance":
        await admin.reassign_partitions(topic, {p: [DESTINATION] for p in range(PARTITIONS)})
    else:
        await admin.alter_replica_log_dirs(topic, {(p, SOURCE): other_dir for p in range(PARTITIONS)})
    if not fixed:
        # Back with the floor it "set" in its ledger, which it takes over as its own; the copy meanwhile runs at it.
        stack.instance_env["throttle"] = {**CONTROLLER_LOG, **_controller_env(variant, limit_ms)}
        stack.start_process("throttle")
    lost: set[str] = set()
    while True:
        await asyncio.sleep(0.5)
        copied, done = await _progress(admin, topic, scenario, other_dir)
        figures.samples.append((time.monotonic() - started, copied, await _rate_in_force(admin, scenario)))
        lost |= await _isr_short(admin, topic) - outside_before
        if done:
            break
        if time.monotonic() - started > 1800:
            raise TimeoutError(f"{topic}: the move did not end in 30 minutes")
    figures.seconds = time.monotonic() - started
    client.measuring = False
    figures.copied_mb_s = move_mb / figures.seconds
    rates = [rate for _t, _b, rate in figures.samples if rate]
    figures.allowed_mb_s = (sum(rates) / len(rates) / MB) if rates else 0.0
    figures.p99_ms = percentile(client.latencies, 99) if client.latencies else 0.0
    figures.isr_lost = len(lost)
    if fixed:
        await _clear(admin, topic)
    else:
        await _until(lambda: _none_left(admin, topic), 60)  # the controller removes its own
    await admin.delete_topic(topic)
    say(f"    {figures.seconds:.1f} s, {figures.copied_mb_s:.2f} MB/s copied against {figures.allowed_mb_s:.2f} "
        f"allowed, p99 {figures.p99_ms:.0f} ms, {figures.isr_lost} partitions out of their ISR")
    return figures


def _utc_now() -> str:
    """As the controller's log lines stamp their time: to find a variant's part of that log."""
    return datetime.now(UTC).isoformat(timespec="seconds")


def _items(broker: int) -> str:
    return ",".join(f"{p}:{broker}" for p in range(PARTITIONS))


async def _throttle(admin: KafkaClusterAdmin, topic: str, scenario: str, rate: int) -> None:
    """The rates and the throttled replicas a move needs, as Kafka's reassignment tool sets them."""
    if scenario == "rebalance":
        for broker in (SOURCE, DESTINATION):
            await admin.alter_broker_configs(broker, {LEADER_RATE: str(rate), FOLLOWER_RATE: str(rate)})
        await admin.alter_configs(topic, {LEADER_ITEMS: _items(SOURCE), FOLLOWER_ITEMS: _items(DESTINATION)})
    else:
        await admin.alter_broker_configs(SOURCE, {INTRA_BROKER_THROTTLE: str(rate)})


def seeded_ledger(held: ThrottleLedger, topic: str, scenario: str) -> ThrottleLedger:
    """The controller's ledger as it would be had it set the floor for this move at a look before the copy began:
    what it ``held`` when it was killed, and the floor. What it held stays named: a throttle of its own still in
    force, no longer named, would be someone else's to the restarted controller, and left on the brokers for good."""
    if scenario == "drain":
        floor = [OwnedBrokerConfig(broker=SOURCE, config=INTRA_BROKER_THROTTLE, values=[str(FLOOR)])]
        items: list[OwnedListItems] = []
    else:
        floor = [OwnedBrokerConfig(broker=b, config=c, values=[str(FLOOR)])
                 for b in (SOURCE, DESTINATION) for c in (LEADER_RATE, FOLLOWER_RATE)]
        items = [OwnedListItems(topic=topic, config=LEADER_ITEMS, items=_items(SOURCE).split(",")),
                 OwnedListItems(topic=topic, config=FOLLOWER_ITEMS, items=_items(DESTINATION).split(","))]
    values: dict[tuple[int, str], list[str]] = {}
    for o in [*held.broker_configs, *floor]:
        values.setdefault((o.broker, o.config), [])
        values[(o.broker, o.config)] += [v for v in o.values if v not in values[(o.broker, o.config)]]
    listed: dict[tuple[str, str], set[str]] = {}
    for i in [*held.topic_items, *items]:
        listed.setdefault((i.topic, i.config), set()).update(i.items)
    return ThrottleLedger(
        broker_configs=[OwnedBrokerConfig(broker=b, config=c, values=v) for (b, c), v in sorted(values.items())],
        topic_items=[OwnedListItems(topic=t, config=c, items=sorted(i)) for (t, c), i in sorted(listed.items())])


def _controller_env(variant: str, limit_ms: float) -> dict[str, str]:
    """(c): the controller as configured for the run; (d): with its latency probe and ``limit_ms``."""
    if variant == "c":
        return {}
    return {"BALLAST_THROTTLE__LATENCY_PROBE_TOPIC": PROBE_TOPIC,
            "BALLAST_THROTTLE__LATENCY_LIMIT_MS": str(limit_ms),
            "BALLAST_THROTTLE__LATENCY_PROBE_EVERY_S": str(PROBE_EVERY_S),
            "BALLAST_THROTTLE__LATENCY_WINDOW_S": str(PROBE_WINDOW_S),
            "BALLAST_THROTTLE__BACK_OFF_HOLD_S": str(HOLD_S)}


async def _until(check: Callable[[], object], timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while not await check():  # type: ignore[misc]
        if time.monotonic() > deadline:
            raise TimeoutError("condition not met")
        await asyncio.sleep(0.2)


async def _all_in(admin: KafkaClusterAdmin, topic: str, path: str) -> bool:
    described = (await admin.describe_topics([topic]))[topic]
    return described is not None and all(dict(p.log_dirs).get(SOURCE) == path and
                                         p.replica_info[0].future_log_dir is None for p in described.partitions)


async def _progress(admin: KafkaClusterAdmin, topic: str, scenario: str, other_dir: str) -> tuple[int, bool]:
    """Bytes the move has written at its destination, and whether it has ended."""
    if scenario == "rebalance":
        dirs = await admin.describe_log_dirs([DESTINATION])
        copied = sum(r.size_bytes for d in dirs for r in d.replicas if r.topic == topic)
        return copied, not await admin.list_reassignments([topic])
    dirs = await admin.describe_log_dirs([SOURCE])
    moving = [r for d in dirs for r in d.replicas if r.topic == topic and r.is_future]
    arrived = [r for d in dirs if d.path == other_dir for r in d.replicas if r.topic == topic]
    return sum(r.size_bytes for r in arrived), not moving and len(arrived) == PARTITIONS


async def _rate_in_force(admin: KafkaClusterAdmin, scenario: str) -> int:
    if scenario == "rebalance":
        sender = (await admin.broker_configs(SOURCE)).get(LEADER_RATE)
        receiver = (await admin.broker_configs(DESTINATION)).get(FOLLOWER_RATE)
        found = [int(v) for v in (sender, receiver) if v is not None]
        return min(found) if found else 0
    return int((await admin.broker_configs(SOURCE)).get(INTRA_BROKER_THROTTLE, 0))


async def _isr_short(admin: KafkaClusterAdmin, moving: str) -> set[str]:
    states = await admin.partition_states()
    return {f"{t}-{p.id}" for t, parts in states.items() if t != moving for p in parts if len(p.isr) < len(p.replicas)}


async def _clear(admin: KafkaClusterAdmin, topic: str) -> None:
    """A fixed variant's throttles off, as the operator would take them off."""
    for broker in (SOURCE, DESTINATION):
        await admin.alter_broker_configs(broker, {k: None for k in RATE_CONFIGS})
    await admin.alter_configs(topic, {LEADER_ITEMS: None, FOLLOWER_ITEMS: None})


async def _none_left(admin: KafkaClusterAdmin, topic: str) -> bool:
    for broker in (SOURCE, DESTINATION):
        if any(k in RATE_CONFIGS for k in await admin.broker_configs(broker)):
            return False
    configs = (await admin.topic_configs([topic])).get(topic, {})
    return LEADER_ITEMS not in configs and FOLLOWER_ITEMS not in configs


async def run(move_mb: float, capacity: int, limit_ms: float, say: Callable[[str], None]) -> dict[str, list[Figures]]:
    live_peak = PEAK_MB_S * MB * CLIENT_SHARE_PER_BROKER
    live_average = (PEAK_MB_S + LOW_MB_S) / 2 * MB * CLIENT_SHARE_PER_BROKER
    peak_safe = int(SHARE * (capacity - live_peak))
    average = int(SHARE * (capacity - live_average))
    env = {"BALLAST_LOG_LEVEL": "warning",
           "BALLAST_THROTTLE__NETWORK_CAPACITY__DEFAULT": str(capacity),
           "BALLAST_THROTTLE__DISK_CAPACITY__DEFAULT": str(capacity),
           "BALLAST_THROTTLE__SAFETY_SHARE": str(SHARE), "BALLAST_THROTTLE__FLOOR": str(FLOOR),
           "BALLAST_THROTTLE__TRAFFIC_SOURCE": "log-growth"}
    run_dir = Path(tempfile.mkdtemp(prefix="ballast-bench-throttle-"))
    results: dict[str, list[Figures]] = {}
    with LocalStack(run_dir, env=env, services=("throttle",), kafka=True) as stack:
        stack.instance_env["throttle"] = dict(CONTROLLER_LOG)
        controller_log = stack.logs / "throttle.log"
        say(f"  the controller's log: {controller_log}")
        stack.start(progress=lambda m: say(f"  {m}"))
        assert stack.kafka is not None
        admin = KafkaClusterAdmin({"bootstrap_servers": stack.kafka.bootstrap_servers}, 30)
        await admin.create_topic(CLIENT_TOPIC, 4, 3)
        client = Client(stack.kafka.bootstrap_servers)
        # The client and the brokers warm up (connections, the JIT, the page cache) before anything is measured: the
        # first variant's latency is not the cluster's start.
        await asyncio.sleep(WARM_UP_S)
        try:
            for scenario in ("rebalance", "drain"):
                results[scenario] = [
                    await run_variant(stack, admin, client, scenario, variant, fixed, move_mb, limit_ms, say)
                    for variant, fixed in (("a", peak_safe), ("b", average), ("c", None), ("d", None))]
        except Exception:
            say(f"  failed; the controller's log is kept: {controller_log}")
            raise
        finally:
            client.stop()
            await admin.aclose()
    return results


def render(results: dict[str, list[Figures]], move_mb: float, capacity: int, limit_ms: float, command: str) -> str:
    rows = []
    for scenario, variants in results.items():
        for f in variants:
            allowed = f"{f.allowed_mb_s:.2f} MB/s" if f.allowed_mb_s else "none in force"
            ratio = f"{f.copied_mb_s / f.allowed_mb_s:.2f}" if f.allowed_mb_s else "-"
            rows.append(f"| {scenario} | ({f.variant}) {f.rate_label} | {f.seconds:.1f} s | {f.copied_mb_s:.2f} MB/s | "
                        f"{allowed} | {ratio} | {f.p99_ms:.0f} ms | {f.isr_lost} |")
    table = "\n".join(["| move | throttle | completion | copied | allowed (mean) | copied / allowed | client p99 | "
                       "ISR lost outside the move |", "| --- | --- | --- | --- | --- | --- | --- | --- |", *rows])
    return f"""## Throttles: fixed for the peak, fixed for the average, and the controller (real Kafka)

`{command}`

{move_mb:g} MB in {PARTITIONS} partitions moved from broker {SOURCE} to broker {DESTINATION} (rebalance) and from
broker {SOURCE}'s first directory to its second (drain), on the local Kafka 4.3.1 cluster, while a client produces
{LOW_MB_S:g} and {PEAK_MB_S:g} MB/s in turn ({STEP_S:g} s each) to a topic of RF 3 over the four brokers. Capacity
{capacity / MB:g} MB/s per broker and per directory; safety share {SHARE}. (d) is the controller restarted with its
latency probe (a record every {PROBE_EVERY_S:g} s, to each broker in turn, acks=all), a limit of {limit_ms:g} ms on the probe's p99 over
{PROBE_WINDOW_S} s, and a back-off held {HOLD_S} s.

{table}

"copied" is the move's data over its completion time; "allowed" the mean of the rate in force during the move,
polled every 0.5 s (for a rebalance the lower of the sender's leader rate and the receiver's follower rate). Kafka
lets a new replication quota take about ten seconds' worth of its rate at once (11 one-second windows, a young one
counted as ten seconds), so short moves can copy faster than their rate. On one machine the brokers share its disk
and cores, not a network: a throttle here decides how much of them the copy takes, and the client's latency shows
what is left. (c) and (d) start under the controller's floor ({FLOOR / MB:g} MB/s), named in its ledger as if it had
set it at a look before the copy began; the controller starts with the move and takes it over. Unthrottled, a move
here copies about a hundred MB a second, so a move this small would be over before the controller's first look
(every 2 s): in the run before this start was arranged, the controller's drain ended unthrottled in 1.8 s. A real
move of gigabytes loses only its first look's worth (docs/throttles.md#limits). The client's p99 moves by tens of
milliseconds from run to run on this two-core machine, where the copy and the client share the cores. (d)'s limit is
the knob between the two: near the probe's p99 at rest, the rates spend much of the move at the floor.

"""


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--move-mb", type=float, default=160.0, help="data moved in each run")
    parser.add_argument("--capacity-mb", type=float, default=8.0, help="bytes per second each broker can carry (MB)")
    parser.add_argument("--latency-limit-ms", type=float, default=40.0,
                        help="(d): the probe's produce-latency p99 above which the controller backs off")
    parser.add_argument("--write", type=Path, help="replace this benchmark's section in the given markdown file")
    args = parser.parse_args(argv)
    say = lambda m: print(m, file=sys.stderr, flush=True)  # noqa: E731
    results = asyncio.run(run(args.move_mb, int(args.capacity_mb * MB), args.latency_limit_ms, say))
    command = (f"python -m bench.throttle --move-mb {args.move_mb:g} --capacity-mb {args.capacity_mb:g} "
               f"--latency-limit-ms {args.latency_limit_ms:g}" + (f" --write {args.write}" if args.write else ""))
    section = render(results, args.move_mb, int(args.capacity_mb * MB), args.latency_limit_ms, command)
    print(section)
    if args.write:
        replace_section(args.write, section)


if __name__ == "__main__":
    main()
