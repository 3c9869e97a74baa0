"""The throttle controller's capacities and limits, as values: what its settings (services/common/settings.py) give
and its rules (services/throttle) take. Here, below both, so that the settings need not import the controller."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class Capacities:
    """Bytes per second a broker (or a log directory) can carry: the most specific setting wins, a broker's own,
    then its rack's (the longest rack path that is its rack or contains it: ``/dc1`` covers ``/dc1/r1``), then the
    default; for a directory, its own (``broker:path``) first."""

    default: int | None = None
    racks: Mapping[str, int] | None = None
    brokers: Mapping[int, int] | None = None
    log_dirs: Mapping[str, int] | None = None

    def of_broker(self, broker: int, rack: str | None) -> int | None:
        if self.brokers and broker in self.brokers:
            return self.brokers[broker]
        if rack and self.racks:
            path = rack.rstrip("/")
            covering = [r for r in self.racks if path == r.rstrip("/") or path.startswith(r.rstrip("/") + "/")]
            if covering:
                return self.racks[max(covering, key=len)]
        return self.default

    def of_log_dir(self, broker: int, rack: str | None, path: str) -> int | None:
        if self.log_dirs and (own := self.log_dirs.get(f"{broker}:{path}")) is not None:
            return own
        return self.of_broker(broker, rack)


@dataclass(frozen=True)
class Limits:
    share: float = 0.8  # of the headroom: what stays unused absorbs a rise in traffic until the next look
    floor: int = 1_000_000  # never lower: a move that crawls still ends
    ceiling: int | None = None
    ramp_up: float = 1.5  # at most this factor higher than the rate in force, per look
    min_change: float = 0.1  # a change of less than this share of the rate in force is not worth an AlterConfigs
