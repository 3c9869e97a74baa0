"""Whether Cruise Control is warming up, from its own ``state`` (substates monitor and analyzer).

Measured on the real one after a kill -9 and a restart (5 runs, 10 s windows): for its first 2-4 s its metadata holds
only the bootstrap servers, and it answers "There is no topic in cluster matching pattern", "Broker [4] does not
exist", "The broker id(-1) should be non-negative"; when it was down longer than its windows span, NotEnoughValid-
Windows follows for about 10 s. No field of ``state`` marks exactly those seconds (its partition counts are refreshed
every 30 s), but this rule never said "warm" while they happened, and said it about 30 s after the restart in every
run: the monitor running, with partitions counted and covered, and the analyzer ready with its goals.
"""

from __future__ import annotations

from services.adapters.cruise_control.models import CruiseControlState

# LoadMonitorState's states in which the monitor has a load model to answer from; the others (NOT_STARTED, LOADING,
# BOOTSTRAPPING, TRAINING) come before it has one.
SERVING = frozenset({"RUNNING", "SAMPLING", "PAUSED"})
SUBSTATES = "monitor,analyzer"


def warming_up(state: CruiseControlState) -> str | None:
    """Why Cruise Control cannot answer from a whole load model yet, or None when it can."""
    monitor, analyzer = state.monitor, state.analyzer
    if monitor is None:
        return None  # not asked for, or an older Cruise Control: nothing says it is warming up
    if monitor.state.upper() not in SERVING:
        loading = f", {monitor.loading_progress:.0%} loaded" if monitor.loading_progress is not None else ""
        return f"its load monitor is {monitor.state.lower()}{loading}"
    if not monitor.num_total_partitions or not monitor.monitoring_coverage_pct:
        return "its load monitor covers no partition yet"
    if analyzer is not None and not (analyzer.is_proposal_ready and analyzer.ready_goals):
        return "no proposal ready yet"
    return None
