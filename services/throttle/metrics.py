"""The controller's figures on ``/metrics``: the rate in force per broker and kind, the headroom, the back-off."""

from __future__ import annotations

from services.common.metrics import gauge
from services.throttle.controller import ThrottleController


def register(controller: ThrottleController) -> None:
    status = lambda: controller.status  # noqa: E731 -- read at each scrape
    gauge("ballast_throttle_rate_bytes_per_second", "Replication throttle in force on a broker taking part in a move "
          "(owner: ballast, or other for a rate someone else set)", ["broker", "kind", "owner"],
          lambda: {(str(b.broker), b.kind, b.owner): float(b.bytes_per_s) for b in status().brokers
                   if b.bytes_per_s is not None})
    gauge("ballast_throttle_headroom_bytes_per_second", "Capacity less live traffic, per broker taking part",
          ["broker", "kind"], lambda: {(str(b.broker), b.kind): float(b.headroom_bytes_per_s)
                                       for b in status().brokers if b.headroom_bytes_per_s is not None})
    gauge("ballast_throttle_log_dir_headroom_bytes_per_second", "Disk capacity less live writes, per log directory "
          "taking part in a move between directories", ["broker", "log_dir"],
          lambda: {(str(d.broker), d.log_dir): float(d.headroom_bytes_per_s) for d in status().log_dirs
                   if d.headroom_bytes_per_s is not None})
    gauge("ballast_throttle_back_off", "1 while the rates are held at the floor, by reason", ["reason"],
          lambda: {(status().back_off,): 1.0} if status().back_off else {})
    gauge("ballast_throttle_moving", "Moves in flight the controller sees", ["kind"],
          lambda: {("inter-broker",): float(status().moving_partitions),
                   ("intra-broker",): float(status().moving_log_dirs)})
