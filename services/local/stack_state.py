"""The stack `ballast up` left running, as the CLI finds it from any directory: its state file in the user's state
directory, and the settings a client needs to reach it."""

from __future__ import annotations

from pathlib import Path

from services.local.broker import group_alive
from services.local.stack import OPTIONAL_SERVICES, SERVICES, StackInfo, port_setting

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


def state_file(state_dir: Path) -> Path:
    return state_dir / "stack.json"


def running_stack(state_dir: Path) -> StackInfo | None:
    """The stack recorded in ``state_dir`` if any of its processes still runs (a record that outlived its stack, after
    a reboot say, points nowhere)."""
    path = state_file(state_dir)
    if not path.exists():
        return None
    try:
        info = StackInfo.load(path)
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return info if any(group_alive(pid) for pid in info.pids.values()) else None


def client_env(info: StackInfo) -> dict[str, str]:
    return {key: info.env[key] for key in CLIENT_KEYS if key in info.env}


def endpoints(info: StackInfo, dashboard_port: int) -> list[tuple[str, str]]:
    """What a person opens on a running stack, by name: each service's health and metrics (one port each), Cruise
    Control's API (the simulator's, with its admin port, or the caller's own), and where `ballast dashboard`
    serves."""
    ports = info.ports
    rows = [(service, f"http://127.0.0.1:{port}/health, /metrics") for service in (*SERVICES, *OPTIONAL_SERVICES)
            if (port := getattr(ports, service.replace("-", "_")))]
    if info.cruise_control_url:
        rows.append(("cruise-control", f"{info.cruise_control_url}state (yours)"))
    else:
        rows.append(("cruise-control", f"http://127.0.0.1:{ports.cruise_control}/kafkacruisecontrol/state (simulated)"))
        rows.append(("cluster-sim", f"http://127.0.0.1:{ports.sim_admin}/metrics"))
    rows.append(("dashboard", f"http://127.0.0.1:{dashboard_port} once `ballast dashboard` runs"))
    return rows
