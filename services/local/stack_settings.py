"""The settings a local stack gives: which services it runs, the setting each one's port is in, and which of its
settings a client of the stack needs. Both the stack (which writes them) and its state as the CLI finds it (which
hands them to clients) read these; neither imports the other for them."""

from __future__ import annotations

SERVICES = ("topic-reconciler", "replicas-change", "rebalancer", "load-collector")
# Services a stack may also run: the throttle controller, where replicas move on a real Kafka (`ballast up --kafka`).
OPTIONAL_SERVICES = ("throttle",)


def port_setting(service: str) -> str:
    return f"BALLAST_PORTS__{service.upper().replace('-', '_')}"


# What a client of the stack needs (the CLI, or any Kafka client for the bootstrap servers; `ballast doctor` for the
# services' health pages); the rest of a stack's environment is for its own services.
# A secured stack's: who the client is and the file its password is in, never the password.
_SECURITY_KEYS = ("SECURITY_PROTOCOL", "SASL_MECHANISM", "SASL_USERNAME", "SASL_PASSWORD_FILE", "SSL_CAFILE")
CLIENT_KEYS = ("BALLAST_BUS__BOOTSTRAP_SERVERS", "BALLAST_BUS__TOPIC_REPLICATION_FACTOR",
               *(f"BALLAST_{section}__{key}" for section in ("BUS", "CLUSTER_ADMIN") for key in _SECURITY_KEYS),
               *(f"BALLAST_CRUISE_CONTROL__{key}" for key in (
                   "HOST", "PORT", "URL_PREFIX", "SSL_ENABLED", "CA_FILE", "AUTH_ENABLED", "USERNAME",
                   "USERNAME_FILE", "PASSWORD_FILE")),
               "BALLAST_CLUSTER_ADMIN__KIND", "BALLAST_CLUSTER", "BALLAST_TENANTS_FILE",
               "BALLAST_CLUSTER_ADMIN__BOOTSTRAP_SERVERS", "BALLAST_CLUSTER_ADMIN__SIMULATOR_URL",
               *(port_setting(service) for service in (*SERVICES, *OPTIONAL_SERVICES)))


def client_settings(env: dict[str, str]) -> dict[str, str]:
    """The settings of a stack's environment ``env`` that a client of it needs."""
    return {key: env[key] for key in CLIENT_KEYS if key in env}
