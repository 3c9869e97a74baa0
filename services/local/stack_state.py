"""The stack `ballast up` left running, as the CLI finds it from any directory: its state file in the user's state
directory, and the settings a client needs to reach it."""

from __future__ import annotations

from pathlib import Path

from services.local.broker import group_alive
from services.local.stack import StackInfo
from services.local.stack_settings import OPTIONAL_SERVICES, SERVICES, client_settings


def state_file(state_dir: Path) -> Path:
    return state_dir / "stack.json"


def tenants_env_dir(state_dir: Path) -> Path:
    """Where `ballast up --tenants` writes each tenant's client settings (``<name>.env``)."""
    return state_dir / "tenants"


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
    return client_settings(info.env)


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
