"""The rules for what `ballast up` may ask of the local stack beyond its defaults: your own Cruise Control, broker
settings, jars on the brokers' classpath, and the rack of a broker added later. Each function takes what the user
typed and returns what the stack uses, or raises ``ValueError`` with the reason in the user's terms."""

from __future__ import annotations

import os
import urllib.parse
from collections import Counter
from collections.abc import Iterable, Mapping
from pathlib import Path

CRUISE_CONTROL = "BALLAST_CRUISE_CONTROL__"
DEFAULT_URL_PREFIX = "kafkacruisecontrol"

# What each node of the local cluster gets from the stack itself: its identity, its listeners and ports, its
# directories and its rack. A broker setting cannot change them (the stack would no longer find its own brokers, or
# two brokers would share a directory); a rack is chosen with `--rack` when a broker is added.
STACK_OWNED_BROKER_KEYS = frozenset({
    "node.id", "broker.id", "process.roles", "broker.rack",
    "listeners", "advertised.listeners", "listener.security.protocol.map", "inter.broker.listener.name",
    "controller.listener.names", "controller.quorum.voters", "controller.quorum.bootstrap.servers",
    "log.dirs", "log.dir", "metadata.log.dir",
})


def cruise_control_env(url: str) -> dict[str, str]:
    """``--cruise-control URL`` as the services' settings: host, port, scheme (TLS) and the API's path prefix
    (``/kafkacruisecontrol`` when the URL has no path). Credentials never go in the URL: it is recorded in the stack's
    state file and printed."""
    parts = urllib.parse.urlsplit(url.strip())
    example = "e.g. http://127.0.0.1:9090 or https://cruise-control.example:9090/kafkacruisecontrol"
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"--cruise-control takes Cruise Control's http:// or https:// address, {example}; "
                         f"not {url!r}")
    if parts.username is not None or parts.password is not None:
        raise ValueError("--cruise-control: no credentials in the URL (it is recorded and printed); set "
                         f"{CRUISE_CONTROL}AUTH_ENABLED=true with {CRUISE_CONTROL}USERNAME and "
                         f"{CRUISE_CONTROL}PASSWORD (or their _FILE forms) instead")
    if parts.query or parts.fragment:
        raise ValueError(f"--cruise-control: the address takes no query or fragment, {example}; not {url!r}")
    try:
        port = parts.port
    except ValueError:
        raise ValueError(f"--cruise-control: {url!r} has no valid port") from None
    secure = parts.scheme == "https"
    return {
        f"{CRUISE_CONTROL}HOST": parts.hostname,
        f"{CRUISE_CONTROL}PORT": str(port or (443 if secure else 80)),
        f"{CRUISE_CONTROL}SSL_ENABLED": "true" if secure else "false",
        f"{CRUISE_CONTROL}URL_PREFIX": parts.path.strip("/") or DEFAULT_URL_PREFIX,
    }


def cruise_control_url(env: Mapping[str, str]) -> str:
    """The address the settings of ``cruise_control_env`` name, as a person writes it."""
    scheme = "https" if env[f"{CRUISE_CONTROL}SSL_ENABLED"] == "true" else "http"
    return (f"{scheme}://{env[f'{CRUISE_CONTROL}HOST']}:{env[f'{CRUISE_CONTROL}PORT']}/"
            f"{env[f'{CRUISE_CONTROL}URL_PREFIX']}/")


def recorded_cruise_control(environ: Mapping[str, str]) -> dict[str, str]:
    """Of the caller's own Cruise Control settings, those the stack's record keeps for its clients (`ballast doctor`
    in another shell): the CA file and credentials given as files, with paths made absolute (a command may run from
    any directory). A password given in the environment is never recorded; nor then is ``AUTH_ENABLED``, since a
    client without the password would refuse every setting, and not only Cruise Control's."""
    def path(key: str) -> str | None:
        value = environ.get(f"{CRUISE_CONTROL}{key}")
        return str(Path(value).expanduser().resolve()) if value else None

    kept = {f"{CRUISE_CONTROL}{key}": value for key in ("CA_FILE", "USERNAME_FILE", "PASSWORD_FILE")
            if (value := path(key))}
    auth = environ.get(f"{CRUISE_CONTROL}AUTH_ENABLED")
    if auth is not None and f"{CRUISE_CONTROL}PASSWORD_FILE" in kept:
        kept[f"{CRUISE_CONTROL}AUTH_ENABLED"] = auth
        if username := environ.get(f"{CRUISE_CONTROL}USERNAME"):
            kept[f"{CRUISE_CONTROL}USERNAME"] = username
    return kept


def broker_config(items: Iterable[str]) -> dict[str, str]:
    """``--broker-config KEY=VALUE`` items as broker settings (the value may hold ``=``; a key given twice: the
    last wins, as in a properties file)."""
    config: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ValueError(f"--broker-config takes KEY=VALUE, e.g. num.partitions=3; not {item!r}")
        if any(c.isspace() for c in key):
            raise ValueError(f"--broker-config: {key!r} is not a Kafka setting's name (no spaces in names)")
        config[key] = value
    check_broker_config(config)
    return config


def check_broker_config(config: Mapping[str, str]) -> None:
    if owned := sorted(set(config) & STACK_OWNED_BROKER_KEYS):
        raise ValueError(f"--broker-config cannot set {', '.join(owned)}: the local stack sets each broker's id, "
                         "listeners, directories and rack itself (a broker's rack: --rack with --add-broker)")


def classpath_entries(paths: Iterable[str | Path]) -> tuple[Path, ...]:
    """``--broker-classpath`` items as absolute paths: a jar, or a directory (its classes and resources, and every
    jar directly in it)."""
    entries: list[Path] = []
    for given in paths:
        path = Path(given).expanduser().resolve()
        if ":" in str(path):
            raise ValueError(f"--broker-classpath: {path} holds ':', Java's classpath separator; move or link it")
        if path.is_dir():
            entries.append(path)
        elif path.is_file():
            if path.suffix.lower() not in (".jar", ".zip"):
                raise ValueError(f"--broker-classpath: {path} is neither a jar (.jar, .zip) nor a directory")
            entries.append(path)
        else:
            raise ValueError(f"--broker-classpath: {given} does not exist")
    return tuple(dict.fromkeys(entries))


def java_classpath(entries: Iterable[Path]) -> list[str]:
    """What Java's ``-cp`` needs for ``classpath_entries``: a directory both as itself and as ``dir/*``."""
    return [item for entry in entries for item in ((str(entry), f"{entry}{os.sep}*") if entry.is_dir()
                                                   else (str(entry),))]


def least_used_rack(racks: Iterable[str]) -> str:
    """Where a broker added without ``--rack`` goes: the rack with the fewest brokers (the first such in order), so
    the rack tree stays even."""
    counts = Counter(racks)
    if not counts:
        raise ValueError("the cluster has no broker with a rack to follow: give --rack")
    return min(counts, key=lambda rack: (counts[rack], rack))
