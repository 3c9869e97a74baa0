"""Cordons and the rebalances Ballast asks Cruise Control for (pure functions, no I/O).

Cruise Control knows no cordons (KIP-1066). What it can be told: the brokers replicas may move onto
(``destination_broker_ids``, on rebalance and remove_broker), which leaves fully cordoned brokers out. What it cannot:
a cordoned directory of a broker that still takes replicas. Kafka itself puts a replica arriving from another broker
in one of the broker's uncordoned directories (``LogManager.nextLogDirs``), so only an intra-broker move names a
directory, and Cruise Control's proposal does not list them (its ``proposals`` give brokers only). The one way to see
them is the proposal's per-directory figures (``DiskState`` before and after): a proposal that adds replicas to a
cordoned directory, or to a fully cordoned broker (add_broker and fix_offline_replicas take no destinations), is
shown with the condition ``CordonsCrossed`` and executed only when the operator approves it knowingly
(``accept_cordoned``). Kafka refuses such a directory move (InvalidReplicaAssignmentException); the real Cruise
Control marks the task dead and still ends the execution Completed, so nothing moves there either way.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from datetime import datetime

from events import Condition, RebalanceMode, RebalanceRequest, RebalanceStatus
from events.conditions import CORDONS_CROSSED
from services.adapters.cruise_control.models import BrokerLoads, OptimizationResult
from services.domain.cordons import Cordons, rebalance_destinations
from services.rebalancer.statuses import update, without

APPROVE_KNOWINGLY = "approve with accept_cordoned (ballast rebalance approve NAME --accept-cordoned) to execute it " \
                    "knowingly, or uncordon and refresh"


def _chosen(request: RebalanceRequest, cordons: Cordons, alive: Iterable[int]) -> list[int] | None:
    """The destinations of a mode that takes them (full and remove-brokers), None for the others or when no broker is
    fully cordoned (Cruise Control's default: every broker)."""
    if request.mode not in (RebalanceMode.FULL, RebalanceMode.REMOVE_BROKERS) or request.rebalance_disk:
        return None
    leaving = request.brokers if request.mode == RebalanceMode.REMOVE_BROKERS else ()
    return rebalance_destinations(cordons, alive, leaving)


def destinations(request: RebalanceRequest, cordons: Cordons, alive: Iterable[int]) -> tuple[int, ...]:
    """``destination_broker_ids`` for the request: empty (Cruise Control's default) unless a broker is fully cordoned
    and the mode takes destinations. Never empty when some broker is: ``refusal`` refuses that request first."""
    chosen = _chosen(request, cordons, alive)
    if chosen == []:
        raise ValueError("no destination broker: the request must be refused (cordon_check.refusal)")
    return tuple(chosen) if chosen is not None else ()


def refusal(request: RebalanceRequest, cordons: Cordons, alive: Iterable[int]) -> str | None:
    """Why the request cannot be met without a cordoned place (None: it can). Adding a broker whose every directory is
    cordoned would move replicas onto it; a full or remove-brokers rebalance needs a broker that takes replicas."""
    cordoned = cordons.fully_cordoned
    if request.mode == RebalanceMode.ADD_BROKERS and (named := sorted(set(request.brokers) & cordoned)):
        return (f"broker(s) {', '.join(map(str, named))} have all their log directories cordoned (cordoned.log.dirs): "
                "adding them would move replicas onto them. Uncordon them (ballast brokers uncordon), then refresh")
    if _chosen(request, cordons, alive) == []:
        return ("no broker would take the replicas: every alive broker that is not leaving has all its log "
                "directories cordoned (cordoned.log.dirs). Uncordon one (ballast brokers uncordon), then refresh")
    return None


def crossings(result: OptimizationResult, cordons: Cordons,
              dir_replicas: Mapping[tuple[int, str], int] | None = None) -> list[str]:
    """Where the proposal adds replicas to cordoned places, in words (empty: nowhere). ``dir_replicas``: the replicas
    in each cordoned directory now, as Kafka tells them (remove_disks answers no figures from before its proposal)."""
    if not cordons:
        return []
    said = []
    for broker, count in sorted(_arrivals(result, cordons.fully_cordoned).items()):
        said.append(f"{count} replica(s) onto broker {broker}, whose log directories are all cordoned")
    if needs_dir_figures(result, cordons):
        said.extend(_onto_cordoned_dirs(result, cordons, dir_replicas or {}))
    return said


def needs_dir_figures(result: OptimizationResult, cordons: Cordons) -> bool:
    """Whether the proposal moves replicas between the directories of a broker with a cordoned one."""
    return bool(result.summary.num_intra_broker_replica_movements and cordons.partly_cordoned)


def _arrivals(result: OptimizationResult, brokers: frozenset[int]) -> Counter[int]:
    """Replicas the proposal adds to each of ``brokers``: from its movements when listed (verbose), else from the
    replica counts before and after."""
    arrivals: Counter[int] = Counter()
    if not brokers:
        return arrivals
    if result.proposals:
        for p in result.proposals:
            for broker in set(p.get("newReplicas", ())) - set(p.get("oldReplicas", ())):
                if broker in brokers:
                    arrivals[broker] += 1
        return arrivals
    before, after = _by_broker(result.load_before_optimization), _by_broker(result.load_after_optimization)
    for broker in brokers:
        if broker in before and broker in after and after[broker].replicas > before[broker].replicas:
            arrivals[broker] = after[broker].replicas - before[broker].replicas
    return arrivals


def _onto_cordoned_dirs(result: OptimizationResult, cordons: Cordons,
                        dir_replicas: Mapping[tuple[int, str], int]) -> list[str]:
    before, after = _by_broker(result.load_before_optimization), _by_broker(result.load_after_optimization)
    said = []
    for broker, paths in sorted(cordons.partly_cordoned.items()):
        for path in sorted(paths):
            will = after[broker].disk_state.get(path) if broker in after else None
            was = dir_replicas.get((broker, path))
            if was is None and broker in before and path in before[broker].disk_state:
                was = before[broker].disk_state[path].replicas
            if was is not None and will is not None and will.replicas > was:
                said.append(f"{will.replicas - was} replica(s) into broker {broker}'s cordoned directory {path}")
    return said


def _by_broker(loads: BrokerLoads | None) -> dict:
    return loads.by_broker() if loads is not None else {}


def judged(status: RebalanceStatus, crossed: list[str], now: datetime) -> RebalanceStatus:
    """The status with the proposal's crossings said (condition ``CordonsCrossed``), or the condition dropped."""
    kept = without(status.conditions, CORDONS_CROSSED)
    if not crossed:
        return status if len(kept) == len(status.conditions) else update(status, now, conditions=kept)
    message = (f"The proposal moves {'; '.join(crossed)}. Cruise Control knows no cordons; "
               f"{APPROVE_KNOWINGLY}.")
    condition = Condition(type=CORDONS_CROSSED, status="True", reason="ProposalCrossesCordons",
                          last_transition_time=now, message=message)
    return update(status, now, conditions=[*kept, condition])


def held(status: RebalanceStatus) -> bool:
    """Whether the proposal may not execute: it crosses cordons and was not approved knowingly."""
    crossed = status.condition(CORDONS_CROSSED)
    return crossed is not None and crossed.status == "True" and not status.cordons_accepted
