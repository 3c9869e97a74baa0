"""The compose stack's secrets (deploy/compose.yaml runs secured: SASL_SSL with SCRAM-SHA-512 and Kafka's
StandardAuthorizer, as ``ballast up --kafka --secure`` does): a CA and the brokers' certificate, the SCRAM users'
passwords (``admin``, the brokers' and the tools'; ``ballast``, the services'), and the Kafka nodes' JAAS lines. ``make
compose-up`` makes them before the stack starts, in a directory of the checkout's that only its owner may enter
(``.ballast/compose/<project>``); ``make compose-down`` removes them with the stack's volumes. Two directories in it
are mounted read-only, never copied into an image or the environment: ``kafka/`` into the Kafka nodes, ``clients/``
(the CA and Ballast's password) into Ballast's containers, and the CLI on this machine reads ``clients/`` too.

Inside that directory the files are readable by all: the containers' users (Kafka's 10002, Ballast's 10001) are not
this machine's user, and the directory above them keeps everyone else out. They are kept when they exist: a second
``compose-up`` of a running stack must not change its passwords."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from services.local.kafka_security import ADMIN, MECHANISM, SERVICES, LocalSecurity

# The Kafka nodes' names on the project's network, which their certificate names for the containers' clients.
NODES = ("controller", "kafka-1", "kafka-2", "kafka-3")
# The broker listeners of deploy/compose.yaml: INTERNAL between the containers (and the brokers), EXTERNAL for this
# machine's clients.
LISTENERS = ("internal", "external")


def make(directory: Path) -> Path:
    """The secrets in ``directory`` (made where missing); returns it."""
    clients = directory / "clients"
    if (clients / "ca.crt").is_file():
        return directory
    directory.mkdir(parents=True, exist_ok=True)
    directory.chmod(0o700)
    security = LocalSecurity.make(directory / "kafka", users=(ADMIN, SERVICES), names=NODES)
    # The brokers log in to the controller as admin (PLAIN) and to each other on INTERNAL as admin (SCRAM); on
    # EXTERNAL they only answer.
    properties = {
        "listener.name.controller.plain.sasl.jaas.config": security.controller_login(),
        f"listener.name.internal.{MECHANISM.lower()}.sasl.jaas.config": security.broker_login(),
        f"listener.name.external.{MECHANISM.lower()}.sasl.jaas.config":
            "org.apache.kafka.common.security.scram.ScramLoginModule required;",
    }
    (security.directory / "node.properties").write_text("".join(f"{k}={v}\n" for k, v in properties.items()))
    clients.mkdir(exist_ok=True)
    shutil.copyfile(security.certificates.ca_file, clients / "ca.crt")
    shutil.copyfile(security.password_file(SERVICES), clients / f"{SERVICES}.password")
    for mounted in (security.directory, clients):
        mounted.chmod(0o755)
        for path in mounted.iterdir():
            path.chmod(0o644)
    return directory


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python -m services.local.compose_secrets DIRECTORY")
    make(Path(sys.argv[1]))
