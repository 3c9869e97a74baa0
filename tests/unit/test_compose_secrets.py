"""The compose stack's secrets (services/local/compose_secrets.py, issue 53): what `make compose-up` makes before the
secured stack starts, and keeps for a second `compose-up` of a running stack."""

from __future__ import annotations

import stat
from pathlib import Path

from cryptography import x509

from services.local import compose_secrets
from services.local.kafka_security import ADMIN, SERVICES


def test_the_secrets_are_made_once_behind_a_directory_only_their_owner_enters(tmp_path: Path) -> None:
    directory = compose_secrets.make(tmp_path / "stack")
    kafka, clients = directory / "kafka", directory / "clients"
    assert stat.S_IMODE(directory.stat().st_mode) == 0o700
    assert {p.name for p in kafka.iterdir()} == {
        "ca.crt", "broker.pem", f"{ADMIN}.password", f"{SERVICES}.password", "node.properties"}
    # The clients get the CA and Ballast's own password, not the admin's nor the brokers' key.
    assert {p.name for p in clients.iterdir()} == {"ca.crt", f"{SERVICES}.password"}
    assert (clients / f"{SERVICES}.password").read_text() == (kafka / f"{SERVICES}.password").read_text()

    admin = (kafka / f"{ADMIN}.password").read_text()
    properties = dict(line.split("=", 1) for line in (kafka / "node.properties").read_text().splitlines())
    assert set(properties) == {"listener.name.controller.plain.sasl.jaas.config",
                               "listener.name.internal.scram-sha-512.sasl.jaas.config",
                               "listener.name.external.scram-sha-512.sasl.jaas.config"}
    assert f'password="{admin}"' in properties["listener.name.internal.scram-sha-512.sasl.jaas.config"]
    assert "password" not in properties["listener.name.external.scram-sha-512.sasl.jaas.config"]

    # The containers reach the brokers by name, this machine's clients at 127.0.0.1.
    certificate = x509.load_pem_x509_certificates((kafka / "broker.pem").read_bytes())[0]
    names = certificate.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert set(names.get_values_for_type(x509.DNSName)) >= {"kafka-1", "kafka-2", "kafka-3"}
    assert [str(a) for a in names.get_values_for_type(x509.IPAddress)] == ["127.0.0.1"]

    before = {p: p.read_bytes() for p in directory.rglob("*") if p.is_file()}
    compose_secrets.make(directory)
    assert {p: p.read_bytes() for p in directory.rglob("*") if p.is_file()} == before
