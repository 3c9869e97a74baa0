"""Cordons (KIP-1066, Kafka 4.3): what a broker's ``cordoned.log.dirs`` becomes when directories are cordoned or
uncordoned, the one rule `ballast brokers cordon|uncordon` applies."""

from __future__ import annotations

from collections.abc import Sequence

ALL = "*"


def cordoned_dirs(value: str | None, broker_dirs: Sequence[str]) -> frozenset[str]:
    """The directories a value of ``cordoned.log.dirs`` cordons (``*``: all of the broker's)."""
    named = {d.strip() for d in (value or "").split(",") if d.strip()}
    return frozenset(broker_dirs) if ALL in named else frozenset(named)


def cordon_value(current: str | None, broker_dirs: Sequence[str], dirs: Sequence[str] = (), *,
                 cordon: bool) -> str | None:
    """``cordoned.log.dirs`` after cordoning (or uncordoning) ``dirs``, every directory of the broker when none is
    named; None: no directory cordoned (the config deleted). ``*`` when all are, so that a directory added to the
    broker later is cordoned too, as the operator meant. Raises ValueError for a directory the broker does not have."""
    if unknown := sorted(set(dirs) - set(broker_dirs)):
        raise ValueError(f"not a log directory of the broker: {', '.join(unknown)} (it has {', '.join(broker_dirs)})")
    now = cordoned_dirs(current, broker_dirs)
    wanted = set(dirs or broker_dirs)
    after = now | wanted if cordon else now - wanted
    if not after:
        return None
    return ALL if after >= set(broker_dirs) else ",".join(sorted(after))
