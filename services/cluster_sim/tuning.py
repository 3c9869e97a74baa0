"""The simulated Cruise Control's settings: its time scale, its webserver's and task manager's limits, its
executor's pace. Read by ``cruise_control.py``, its executor (``executor.py``) and its endpoints (``endpoints.py``)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class SimTuning:
    time_scale: float = 60.0  # simulated seconds per real second
    replica_bandwidth_mb_s: float = 100.0  # simulated throttle per execution
    min_execution_s: float = 0.5  # real seconds; long enough to be seen InExecution
    proposal_s: float = 0.1  # real seconds a task stays Active computing its proposal
    max_block_s: float = 10.0  # webserver.request.maxBlockTimeMs: how long a request waits before answering 202
    warmup_s: float = 0.0  # the warm-up at the next (re)start
    restart_warmup_s: float = 30.0  # the warm-up after a restart that names none (the real one's: about 30 s)
    max_active_user_tasks: int = 5
    task_scanner_period_s: float = 5.0  # how often finished tasks leave the active ones
    session_expiry_s: float = 60.0  # webserver.session.maxExpiryTimeMs
    execution_check_s: float = 0.5  # execution.progress.check.interval.ms (real backend)
    movements_per_broker: int = 5  # num.concurrent.partition.movements.per.broker (real backend)
