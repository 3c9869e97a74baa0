"""One more broker in the running `ballast up` stack's cluster (``ballast up --add-broker``), as when a cluster is
scaled up: on the real Kafka a new broker JVM joins with the others' jars and settings and is recorded, so that
`ballast down` stops it too; on the embedded stack the simulator's model gets one. The services notice it at their
next look at the cluster, as they would any broker that joined (the rebalancer's add-brokers rebalance, seed 001)."""

from __future__ import annotations

import fcntl
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from services.local.kafka_cluster import LocalKafka
from services.local.stack import StackInfo
from services.local.stack_options import least_used_rack
from services.placement.model import Broker, InvalidRack
from services.placement.rack_tree import validate_racks


@contextmanager
def stack_lock(state_file: Path) -> Iterator[None]:
    """One change of the stack's record at a time: two brokers added at once would take the same id."""
    with state_file.with_name(f".{state_file.name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def rack_for(racks: dict[int, str | None], rack: str | None, new_id: int) -> str:
    """``rack``, or the least used one; refused (``ValueError``) unless it fits the cluster's rack tree."""
    chosen = rack if rack is not None else least_used_rack(r for r in racks.values() if r)
    try:
        validate_racks([*(Broker(id=b, rack=r) for b, r in racks.items()), Broker(id=new_id, rack=chosen)])
    except InvalidRack as exc:
        raise ValueError(f"--rack {chosen}: {exc}") from None
    return chosen


def add_broker(info: StackInfo, rack: str | None) -> tuple[int, str]:
    """Adds a broker to the stack ``info`` records and updates ``info`` (the caller saves it); returns its id and
    rack. ``ValueError``: the rack does not fit; ``RuntimeError``, ``TimeoutError``: the broker did not join (and does
    not run); ``httpx.HTTPError``: the simulator did not answer."""
    if info.kafka is None:
        if info.env.get("BALLAST_CLUSTER_ADMIN__KIND") == "kafka":
            raise ValueError("this stack was started before `ballast up` recorded its Kafka cluster: restart it "
                             "(`ballast down`, then `ballast up --kafka`) to add brokers to it")
        return _add_simulated_broker(info, rack)
    kafka = LocalKafka.attach(Path(info.run_dir), info.kafka)
    new_id = max(kafka.brokers) + 1
    chosen = rack_for(kafka.racks(), rack, new_id)
    kafka.add_broker(chosen, new_id)
    node = kafka.brokers[new_id]
    assert node.process is not None
    info.pids[f"kafka-broker-{new_id}"] = node.process.pid
    info.kafka = kafka.record()
    return new_id, chosen


def _add_simulated_broker(info: StackInfo, rack: str | None) -> tuple[int, str]:
    admin = info.env["BALLAST_CLUSTER_ADMIN__SIMULATOR_URL"]
    with httpx.Client(base_url=admin, timeout=10.0) as client:
        brokers = client.get("/admin/brokers").raise_for_status().json()["brokers"]
        racks = {b["id"]: b["rack"] for b in brokers}
        new_id = max(racks, default=0) + 1
        chosen = rack_for(racks, rack, new_id)
        client.post("/admin/brokers", json={"id": new_id, "rack": chosen}).raise_for_status()
    return new_id, chosen
