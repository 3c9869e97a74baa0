"""The simulated Cruise Control's warm-up after a (re)start, and what it refuses while its load model cannot be built.

Measured on the real one (``shared/reference/cruise-control-real``, issue 28): after a start its metadata holds only
the bootstrap servers, then its load monitor has no valid metric window, then its ``state`` lags what it can do.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from services.cluster_sim import proposals, responses
from services.cluster_sim.model import Cluster
from services.cluster_sim.proposals import CruiseControlFailure

NOT_ENOUGH_WINDOWS = "com.linkedin.cruisecontrol.exception.NotEnoughValidWindowsException"


@dataclass
class WarmUp:
    """A (re)start's warm-up, as the real one's was measured (shared/reference/cruise-control-real, issue 28):

    - ``metadata`` (its first 12 %): the metadata holds only the bootstrap servers, so no topic matches a pattern, no
      broker exists, and the load model meets broker ids -1..-N ("The broker id(-1) should be non-negative");
    - ``windows`` (to 40 %): no valid metric window yet: what needs the load model answers NotEnoughValidWindows;
    - ``stale`` (to the end): everything answers, but ``state`` does not say so yet (its partition counts are refreshed
      every 30 s): monitor RUNNING with no partition covered, no proposal ready;
    - ``warm``."""

    started_at: float = field(default_factory=time.monotonic)
    length_s: float = 0.0

    def progress(self) -> float:
        return 1.0 if self.length_s <= 0 else min(1.0, (time.monotonic() - self.started_at) / self.length_s)

    @property
    def phase(self) -> str:
        progress = self.progress()
        return "warm" if progress >= 1.0 else "metadata" if progress < 0.12 else "windows" if progress < 0.4 \
            else "stale"

    @property
    def done(self) -> bool:
        return self.phase == "warm"

    def refuse_without_load_model(self, cluster: Cluster, endpoint: str, *, method: str) -> None:
        """What needs the load model, while it cannot be built: bootstrap-only metadata, then no valid window.
        ``topic_configuration`` does not need it (while only the bootstrap servers are known it matches no topic
        instead: ``proposals.replication_factor_change``'s ``model_holds_topics``)."""
        phase = self.phase
        if phase == "metadata" and endpoint != "topic_configuration":
            cause = "java.lang.IllegalArgumentException"
            raise CruiseControlFailure(500, responses.error_body(
                method, endpoint, "The broker id(-1) should be non-negative.",
                cause if endpoint in ("load", "partition_load") else f"{proposals.KCC}: {cause}"))
        if phase == "windows" and endpoint != "topic_configuration":
            partitions = sum(len(t.partitions) for t in cluster.topics.values())
            raise CruiseControlFailure(500, responses.error_body(
                method, endpoint,
                f"There are only 0 valid windows when aggregating in range [-1, {int(time.time() * 1000)}] for "
                "aggregation options (minValidEntityRatio=0.95, minValidEntityGroupRatio=0.00, minValidWindows=1, "
                f"numEntitiesToInclude={partitions}, granularity=ENTITY)",
                f"{proposals.KCC}: {NOT_ENOUGH_WINDOWS}"))
