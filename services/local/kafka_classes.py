"""The archive of Kafka's classes that the local cluster's JVMs map at start (the JDK's class data sharing).

A Kafka node spends most of its start loading and verifying the same few thousand classes. Mapped from an archive
made once, they cost far less: measured here on an idle machine, a node served after 1.6 s and 2.1 s of CPU with the
archive, 2.9 s and 3.6 s without; on a crowded one the saving grows. The suite starts and restarts dozens of nodes.

``make kafka`` makes it (``python -m services.local.kafka_classes``): one node with both roles, so that the broker's
and the controller's classes are in it, started with ``-XX:ArchiveClassesAtExit``, asked to create a topic and take
a record, and stopped; the JVM writes the archive as it exits. It is made with Kafka's jars alone on the class path,
so every node, whose class path adds Ballast's replica selector after them, can use it. Without it, or with one that
no longer matches the jars or the JDK, the nodes start as before (``kafka_cluster.class_sharing``).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from confluent_kafka import KafkaException, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from services.local.broker import free_port, popen
from services.local.kafka_cluster import (
    LOG_DIRS_PER_BROKER,
    NODE_DEFAULTS,
    PATIENCE_S,
    class_archive,
    jvm_options,
    kafka_lib_dir,
    random_cluster_id,
)

NODE_ID = 1
HEAP_MB = 256


def build(lib: Path, timeout_s: float = PATIENCE_S) -> Path:
    """Make the archive for the jars in ``lib`` (replacing any older one) and return its path."""
    archive = class_archive(lib)
    partial = archive.with_suffix(".partial")
    partial.unlink(missing_ok=True)
    with tempfile.TemporaryDirectory(prefix="ballast-kafka-classes-") as tmp:
        home = Path(tmp)
        port, controller_port = free_port(), free_port()
        properties = home / "node.properties"
        properties.write_text("".join(f"{key}={value}\n" for key, value in {
            "process.roles": "broker,controller",
            "node.id": NODE_ID,
            "controller.quorum.voters": f"{NODE_ID}@127.0.0.1:{controller_port}",
            "controller.listener.names": "CONTROLLER",
            "listeners": f"PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{controller_port}",
            "log.dirs": ",".join(str(home / f"data-{i}") for i in range(LOG_DIRS_PER_BROKER)),
            "offsets.topic.replication.factor": 1,
            **NODE_DEFAULTS,
        }.items()))
        java = ["java", *jvm_options(HEAP_MB), "-Dlog4j2.level=WARN", "-cp", f"{lib}/*"]
        subprocess.run([*java, "kafka.tools.StorageTool", "format", "-t", random_cluster_id(), "-c", str(properties)],
                       check=True, capture_output=True, timeout=timeout_s)
        with (home / "node.log").open("wb") as log:
            node = popen([java[0], f"-XX:ArchiveClassesAtExit={partial}", *java[1:], "kafka.Kafka", str(properties)],
                         death_signal=signal.SIGKILL, background=False, stdout=log, stderr=subprocess.STDOUT)
        try:
            _exercise(f"127.0.0.1:{port}", node, timeout_s)
        finally:
            os.killpg(node.pid, signal.SIGTERM)  # a clean exit: the JVM writes the archive as it exits
            node.wait(timeout=timeout_s)
        if not partial.is_file():
            raise RuntimeError(f"the node exited ({node.returncode}) without writing {partial}:\n"
                               + (home / "node.log").read_text(errors="replace")[-2000:])
    os.replace(partial, archive)
    return archive


def _exercise(bootstrap: str, node: subprocess.Popen[bytes], timeout_s: float) -> None:
    """Until the node has created a topic on both directories and taken a record: what a test's node loads too."""
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
    deadline = time.monotonic() + timeout_s
    while True:
        if node.poll() is not None:
            raise RuntimeError(f"the node exited with code {node.returncode} before it served")
        try:
            admin.create_topics([NewTopic("classes", num_partitions=2, replication_factor=1)])["classes"].result(10)
            break
        except (KafkaException, TimeoutError) as exc:  # not serving yet
            if isinstance(exc, KafkaException) and exc.args[0].name() == "TOPIC_ALREADY_EXISTS":
                break
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)
    producer = Producer({"bootstrap.servers": bootstrap, "log_level": 0})
    producer.produce("classes", b"record")
    if producer.flush(timeout_s) != 0:
        raise RuntimeError("the node did not take a record")


def main() -> None:
    lib = kafka_lib_dir()
    started = time.monotonic()
    archive = build(lib)
    print(f"archived Kafka's classes in {archive} ({archive.stat().st_size // 2**20} MB, "
          f"{time.monotonic() - started:.0f} s)", file=sys.stderr)


if __name__ == "__main__":
    main()
