"""The local Kafka cluster secured (``ballast up --kafka --secure``): clients on SASL_SSL with SCRAM-SHA-512 and
certificates from the stack's own CA, Kafka's StandardAuthorizer with ACLs, and the passwords in files only their
owner reads. The brokers talk to each other over the same listener as the admin user, and to the controller over
SASL_PLAINTEXT with PLAIN: SCRAM's credentials live in the metadata the controller serves, so the controller's own
listener cannot use them.

Users: ``admin`` (the brokers' own and the stack's tools') and ``ballast`` (Ballast's services), both super users
here."""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from services.local.tls import LocalCertificates

MECHANISM = "SCRAM-SHA-512"
ADMIN = "admin"
SERVICES = "ballast"
LISTENER = "CLIENTS"


@dataclass(frozen=True)
class LocalSecurity:
    directory: Path
    certificates: LocalCertificates

    @classmethod
    def make(cls, directory: Path, users: tuple[str, ...] = (ADMIN, SERVICES), names: tuple[str, ...] = ()
             ) -> LocalSecurity:
        """``names``: the brokers' host names beyond localhost (``LocalCertificates.make``)."""
        security = cls(directory, LocalCertificates.make(directory, names))
        for user in users:
            path = security.password_file(user)
            path.touch(mode=0o600)
            path.write_text(secrets.token_urlsafe(24))  # letters, digits, '-' and '_': nothing to escape anywhere
        return security

    @classmethod
    def at(cls, directory: Path) -> LocalSecurity:
        """The security ``make`` wrote in ``directory`` (a stack another process started)."""
        return cls(directory, LocalCertificates(directory / "ca.crt", directory / "broker.pem"))

    def password_file(self, user: str) -> Path:
        return self.directory / f"{user}.password"

    def password(self, user: str) -> str:
        return self.password_file(user).read_text().strip()

    def users(self) -> list[str]:
        return sorted(p.name.removesuffix(".password") for p in self.directory.glob("*.password"))

    # -- the nodes -----------------------------------------------------------------------------------------------

    def format_arguments(self) -> list[str]:
        """kafka-storage format's: the users' SCRAM credentials in the cluster's first metadata. StorageTool takes
        them on its command line only, so they are visible to this machine's users for the second it runs: the local
        stack is one user's; a production cluster's users are made through the admin API."""
        return [arg for user in self.users()
                for arg in ("--add-scram", f"{MECHANISM}=[name={user},password={self.password(user)}]")]

    def controller_login(self) -> str:
        """The controller listener's JAAS line: the controller's one PLAIN user, and the brokers' login as it."""
        admin = self.password(ADMIN)
        return (f'org.apache.kafka.common.security.plain.PlainLoginModule required username="{ADMIN}" '
                f'password="{admin}" user_{ADMIN}="{admin}";')

    def broker_login(self) -> str:
        """A SCRAM listener's JAAS line on a broker: the brokers' login to each other, as the admin user."""
        return (f'org.apache.kafka.common.security.scram.ScramLoginModule required username="{ADMIN}" '
                f'password="{self.password(ADMIN)}";')

    def node_properties(self, *, broker: bool) -> dict[str, str]:
        controller_login = self.controller_login()
        common = {
            "listener.security.protocol.map": f"CONTROLLER:SASL_PLAINTEXT,{LISTENER}:SASL_SSL",
            "sasl.mechanism.controller.protocol": "PLAIN",
            "listener.name.controller.sasl.enabled.mechanisms": "PLAIN",
            "listener.name.controller.plain.sasl.jaas.config": controller_login,
            "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
            "super.users": f"User:{ADMIN};User:{SERVICES}",
        }
        if not broker:
            return common
        return {
            **common,
            "inter.broker.listener.name": LISTENER,
            "sasl.mechanism.inter.broker.protocol": MECHANISM,
            f"listener.name.{LISTENER.lower()}.sasl.enabled.mechanisms": MECHANISM,
            f"listener.name.{LISTENER.lower()}.{MECHANISM.lower()}.sasl.jaas.config": self.broker_login(),
            "ssl.keystore.type": "PEM",
            "ssl.keystore.location": str(self.certificates.keystore),
            "ssl.truststore.type": "PEM",
            "ssl.truststore.location": str(self.certificates.ca_file),
        }

    # -- clients -------------------------------------------------------------------------------------------------

    def java_client(self, user: str) -> dict[str, str]:
        return {"security.protocol": "SASL_SSL", "sasl.mechanism": MECHANISM,
                "sasl.jaas.config": f'org.apache.kafka.common.security.scram.ScramLoginModule required '
                                    f'username="{user}" password="{self.password(user)}";',
                "ssl.truststore.type": "PEM", "ssl.truststore.location": str(self.certificates.ca_file)}

    def kafka_python(self, user: str) -> dict[str, Any]:
        return {"security_protocol": "SASL_SSL", "sasl_mechanism": MECHANISM, "sasl_plain_username": user,
                "sasl_plain_password": self.password(user), "ssl_cafile": str(self.certificates.ca_file)}

    def settings_env(self, section: str, user: str) -> dict[str, str]:
        """Ballast's settings for a client of the cluster as ``user`` (``section``: BUS or CLUSTER_ADMIN): the
        password's file, never the password."""
        prefix = f"BALLAST_{section}__"
        return {f"{prefix}SECURITY_PROTOCOL": "SASL_SSL", f"{prefix}SASL_MECHANISM": MECHANISM,
                f"{prefix}SASL_USERNAME": user, f"{prefix}SASL_PASSWORD_FILE": str(self.password_file(user)),
                f"{prefix}SSL_CAFILE": str(self.certificates.ca_file)}


