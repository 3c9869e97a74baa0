"""Clients of a secured Kafka (issue 53, part 1): one model of a client's security for the bus and the managed
cluster, given to each client library in its own words, with the password from a file where one is given; and the
local secured cluster's node settings."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest
from pydantic import ValidationError

from services.common.settings import BusSettings, ClusterAdminSettings
from services.local.kafka_security import ADMIN, SERVICES, LocalSecurity


def test_the_password_comes_from_its_file_each_time_a_client_is_made(tmp_path: Path) -> None:
    secret = tmp_path / "ballast.password"
    secret.write_text("first\n")
    bus = BusSettings(security_protocol="SASL_SSL", sasl_mechanism="SCRAM-SHA-512", sasl_username="ballast",
                      sasl_password_file=secret, ssl_cafile=tmp_path / "ca.crt")
    assert bus.confluent_config()["sasl.password"] == "first"
    secret.write_text("rotated")
    assert bus.confluent_config() | {"socket.connection.setup.timeout.ms": "-"} == {
        "bootstrap.servers": "127.0.0.1:9092", "security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.username": "ballast", "sasl.password": "rotated", "ssl.ca.location": str(tmp_path / "ca.crt"),
        "socket.connection.setup.timeout.ms": "-"}
    assert "rotated" not in repr(bus)


def test_the_managed_clusters_clients_get_kafka_pythons_words_and_extra_settings_win() -> None:
    admin = ClusterAdminSettings(kind="kafka", bootstrap_servers="k:9093", security_protocol="SASL_SSL",
                                 sasl_mechanism="SCRAM-SHA-512", sasl_username="ballast", sasl_password="pw",
                                 extra={"request_timeout_ms": 5000})
    assert admin.client_config() == {"bootstrap_servers": "k:9093", "security_protocol": "SASL_SSL",
                                     "sasl_mechanism": "SCRAM-SHA-512", "sasl_plain_username": "ballast",
                                     "sasl_plain_password": "pw", "request_timeout_ms": 5000}
    assert "pw" not in repr(admin)


@pytest.mark.parametrize("settings, problem", [
    ({"security_protocol": "SASL_SSL", "sasl_username": "u", "sasl_password": "p"}, "needs SASL_MECHANISM"),
    ({"security_protocol": "SASL_SSL", "sasl_mechanism": "PLAIN", "sasl_password": "p"}, "and SASL_USERNAME"),
    ({"sasl_password": "p", "sasl_password_file": "/run/secrets/p"}, "not both"),
])
def test_settings_that_cannot_authenticate_are_refused(settings: dict, problem: str) -> None:
    with pytest.raises(ValidationError, match=problem):
        BusSettings(**settings)


def test_an_empty_setting_is_no_setting() -> None:
    bus = BusSettings(security_protocol="PLAINTEXT", sasl_mechanism="", sasl_username="", sasl_password_file="")
    assert bus.confluent_config()["security.protocol"] == "PLAINTEXT"
    assert "sasl.mechanism" not in bus.confluent_config()


def test_the_local_secured_cluster_keeps_its_secrets_in_files_only_their_owner_reads(tmp_path: Path) -> None:
    security = LocalSecurity.make(tmp_path / "security")
    for path in (security.password_file(ADMIN), security.password_file(SERVICES), security.certificates.keystore):
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
    assert security.password(ADMIN) != security.password(SERVICES)
    env = security.settings_env("BUS", SERVICES)
    assert env["BALLAST_BUS__SASL_PASSWORD_FILE"] == str(security.password_file(SERVICES))
    assert security.password(SERVICES) not in "".join(env.values())
    broker = security.node_properties(broker=True)
    assert broker["super.users"] == "User:admin;User:ballast"
    assert broker["listener.security.protocol.map"] == "CONTROLLER:SASL_PLAINTEXT,CLIENTS:SASL_SSL"
    assert security.format_arguments()[:2] == [
        "--add-scram", f"SCRAM-SHA-512=[name=admin,password={security.password(ADMIN)}]"]
    # The CA and the brokers' certificate: a client trusting the CA accepts the brokers' at 127.0.0.1.
    from cryptography import x509

    ca = x509.load_pem_x509_certificate(security.certificates.ca_file.read_bytes())
    chain = security.certificates.keystore.read_bytes()
    leaf = x509.load_pem_x509_certificates(chain)[0]
    assert leaf.issuer == ca.subject
    names = leaf.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert [str(ip) for ip in names.get_values_for_type(x509.IPAddress)] == ["127.0.0.1"]
    leaf.verify_directly_issued_by(ca)


def test_a_java_client_gets_its_login_in_a_jaas_line_and_the_ca_as_a_pem_trust_store(tmp_path: Path) -> None:
    bus = BusSettings(security_protocol="SASL_SSL", sasl_mechanism="SCRAM-SHA-512", sasl_username="ballast",
                      sasl_password='p"w\\d', ssl_cafile=tmp_path / "ca.crt")
    assert bus.java() == {
        "security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.jaas.config": 'org.apache.kafka.common.security.scram.ScramLoginModule required username="ballast" '
                            'password="p\\"w\\\\d";',
        "ssl.truststore.type": "PEM", "ssl.truststore.location": str(tmp_path / "ca.crt")}
    assert BusSettings().java() == {"security.protocol": "PLAINTEXT"}
