"""A certificate authority of the local stack's own, for its secured Kafka cluster (``ballast up --kafka --secure``):
a CA certificate the clients trust, and one certificate for every broker (they all listen on 127.0.0.1), made with
the ``cryptography`` package. Files only its owner reads; nothing leaves the stack's directory."""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

# Long enough for any local stack, short enough that a certificate copied off the machine soon means nothing.
VALID_FOR = datetime.timedelta(days=30)


@dataclass(frozen=True)
class LocalCertificates:
    ca_file: Path
    # The brokers' private key (PKCS#8, unencrypted: the file's mode protects it) and certificate chain, as Kafka's
    # PEM key store reads them from one file (ssl.keystore.type=PEM).
    keystore: Path

    @classmethod
    def make(cls, directory: Path, names: tuple[str, ...] = ()) -> LocalCertificates:
        """``names``: the brokers' host names beyond localhost and 127.0.0.1 (the compose stack's, by which its
        containers reach them)."""
        directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        now = datetime.datetime.now(datetime.timezone.utc)
        ca_key = ec.generate_private_key(ec.SECP256R1())
        ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "Ballast local stack CA")])
        ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name)
              .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
              .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + VALID_FOR)
              .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
              .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                           content_commitment=False, key_encipherment=False,
                                           data_encipherment=False, key_agreement=False, encipher_only=False,
                                           decipher_only=False), critical=True)
              .sign(ca_key, hashes.SHA256()))
        key = ec.generate_private_key(ec.SECP256R1())
        broker = (x509.CertificateBuilder()
                  .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")]))
                  .issuer_name(ca_name).public_key(key.public_key()).serial_number(x509.random_serial_number())
                  .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + VALID_FOR)
                  # Clients check the address they connect to (127.0.0.1) against these.
                  .add_extension(x509.SubjectAlternativeName([*map(x509.DNSName, ("localhost", *names)),
                                                              x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                                 critical=False)
                  .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
                  .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH,
                                                        x509.oid.ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
                  .sign(ca_key, hashes.SHA256()))
        pem = serialization.Encoding.PEM
        certificates = cls(ca_file=directory / "ca.crt", keystore=directory / "broker.pem")
        _write(certificates.ca_file, ca.public_bytes(pem))
        _write(certificates.keystore,
               key.private_bytes(pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
               + broker.public_bytes(pem) + ca.public_bytes(pem))
        return certificates


def _write(path: Path, data: bytes) -> None:
    path.touch(mode=0o600)
    path.write_bytes(data)
