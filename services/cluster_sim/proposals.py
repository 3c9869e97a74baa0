"""What the simulated Cruise Control proposes, and what it refuses with Cruise Control's words.

Replication-factor changes follow ``UpdateTopicConfigurationRunnable``: its checks, message for message, then the
replicas added or dropped (``ClusterModel.createOrDeleteReplicas``: a new replica on a rack the partition does not
use yet, a dropped one never the leader), then the request's goals over the cluster, as the real one optimizes it: with
Cruise Control's default goals its leadership goals even out leaders over every topic not excluded, which moves
partitions that have nothing to do with the request (measured on the real one: 35 partitions and 33 leaders moved to
raise one topic of 3 partitions from RF 2 to 3). ``excluded_topics`` keeps topics out of that optimization.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from services.cluster_sim import responses
from services.cluster_sim.model import Cluster, ClusterError, ReplicaMove
from services.cluster_sim.optimizer import movements_to
from services.cluster_sim.request import Params
from services.placement.rebalance import balance_leaders

KCC = "com.linkedin.kafka.cruisecontrol.exception.KafkaCruiseControlException"
HARD_GOALS = ["NetworkInboundCapacityGoal", "DiskCapacityGoal", "RackAwareGoal", "NetworkOutboundCapacityGoal",
              "CpuCapacityGoal", "ReplicaCapacityGoal"]
# The goals the real one lists as supported (its answer to an unknown goal).
KNOWN_GOALS = {*HARD_GOALS, "BrokerSetAwareGoal", "CpuUsageDistributionGoal", "DiskUsageDistributionGoal",
               "IntraBrokerDiskCapacityGoal", "IntraBrokerDiskUsageDistributionGoal",
               "KafkaAssignerDiskUsageDistributionGoal", "KafkaAssignerEvenRackAwareGoal",
               "LeaderBytesInDistributionGoal", "LeaderReplicaDistributionGoal", "NetworkInboundUsageDistributionGoal",
               "NetworkOutboundUsageDistributionGoal", "PotentialNwOutGoal", "PreferredLeaderElectionGoal",
               "RackAwareDistributionGoal", "ReplicaDistributionGoal", "TopicReplicaDistributionGoal"}
DEFAULT_GOALS = ["RackAwareGoal", "ReplicaCapacityGoal", "DiskCapacityGoal", "ReplicaDistributionGoal",
                 "LeaderReplicaDistributionGoal", "TopicReplicaDistributionGoal"]
# Goals that move leaderships (by reordering replicas) across every topic they may touch.
LEADERSHIP_GOALS = frozenset({"LeaderReplicaDistributionGoal", "LeaderBytesInDistributionGoal"})


class CruiseControlFailure(Exception):
    """An error answer: HTTP status and Cruise Control's error body."""

    def __init__(self, status: int, body: dict[str, Any]) -> None:
        super().__init__(body.get("errorMessage"))
        self.status = status
        self.body = body


def failure(endpoint: str, message: str, exception: str, *, wrapped: bool = True) -> CruiseControlFailure:
    """A task's refusal (500). ``wrapped``: thrown inside the load-model work, where Cruise Control wraps it in its
    own exception; the runnable's earlier checks are not."""
    return CruiseControlFailure(500, responses.error_body("POST", endpoint, message,
                                                          f"{KCC}: {exception}" if wrapped else exception))


def java_collection(items: Iterable[Any]) -> str:
    """A Java collection's toString: ``[a, b]`` (Cruise Control formats topic sets and broker ids so)."""
    return "[" + ", ".join(str(i) for i in items) + "]"


def parse_goals(endpoint: str, params: Params) -> list[str]:
    """``sanityCheckGoals`` (in the task, so a 500): names are not trimmed; unknown goals, then missing hard
    goals, are refused unless ``skip_hard_goal_check``."""
    goals = params.strings("goals")
    if not goals:
        return DEFAULT_GOALS
    if params.boolean("skip_hard_goal_check", False) or goals == ["PreferredLeaderElectionGoal"]:
        return goals
    if unknown := sorted({g for g in goals if g not in KNOWN_GOALS}):
        raise failure(endpoint, f"Goals {java_collection(unknown)} are not supported. Supported: "
                                f"{java_collection(sorted(KNOWN_GOALS))}", "java.lang.IllegalArgumentException")
    if missing := [g for g in HARD_GOALS if g not in goals]:
        raise failure(endpoint, f"Missing hard goals [{', '.join(missing)}] in the provided goals: "
                                f"[{', '.join(goals)}]. Add skip_hard_goal_check=true parameter to ignore this sanity "
                                "check.", "java.lang.IllegalArgumentException")
    return goals


def literal_alternatives(regex: str) -> set[str] | None:
    """``a\\.c|b`` -> {"a.c", "b"}; None if any alternative uses a regex construct."""
    names, current, escaped = set(), [], False
    for ch in regex:
        if escaped:
            if ch.isalnum():
                return None  # \d, \w, ...: a character class, not a literal
            current.append(ch)
            escaped = False
        elif ch == "\\":
            escaped = True
        elif ch == "|":
            names.add("".join(current))
            current = []
        elif ch.isalnum() or ch in "_-":
            current.append(ch)
        else:
            return None
    if escaped:
        return None
    names.add("".join(current))
    return names


def matching_topics(cluster: Cluster, regex: str) -> list[str]:
    literals = literal_alternatives(regex)
    if literals is not None:
        # A pure alternation of escaped names (what Ballast sends): a set lookup instead of backtracking through
        # thousands of alternatives for every topic. Same answer as the regex.
        return sorted(name for name in literals if name in cluster.topics)
    return sorted(_matching(cluster, regex, "topic"))


def excluded(cluster: Cluster, regex: str | None) -> set[str]:
    """The topics ``excluded_topics`` names."""
    return _matching(cluster, regex, "excluded_topics") if regex else set()


def _matching(cluster: Cluster, regex: str, parameter: str) -> set[str]:
    """The topics whose whole name matches (Java's ``matches``)."""
    try:
        pattern = re.compile(regex)
    except re.error as exc:
        raise CruiseControlFailure(400, responses.error_body(
            "POST", "topic_configuration", f"Invalid {parameter} regex {regex!r}: {exc}",
            "java.util.regex.PatternSyntaxException")) from None
    return {name for name in cluster.topics if pattern.fullmatch(name)}


def replication_factor_change(cluster: Cluster, by_rf: Mapping[int, str], *, skip_rack_awareness_check: bool,
                              goals: list[str], excluded_topics: set[str], model_holds_topics: bool = True
                              ) -> list[ReplicaMove]:
    """UpdateTopicConfigurationRunnable, check for check and message for message: no partition may have an offline
    replica; every pattern must match a topic; something must be left to change; then
    RunnableUtils.populateRackInfoForReplicationFactorChange (RF against alive brokers and racks); then the replicas
    added or dropped and the goals' optimization. ``model_holds_topics``: False while a restarted Cruise Control's
    load model is still empty (it then matches no topic)."""
    alive = cluster.alive_ids
    for name in sorted(cluster.topics):
        for p in cluster.topics[name].partitions:
            if offline := sorted(b for b in p.replicas if b not in alive):
                raise failure("topic_configuration", f"Topic partition {name}-{p.index} has offline replicas on "
                              f"brokers {java_collection(offline)}.", "java.lang.IllegalStateException", wrapped=False)
    to_change: dict[int, list[str]] = {}
    for rf, regex in sorted(by_rf.items()):
        topics = matching_topics(cluster, regex) if model_holds_topics else []
        if not topics:
            raise failure("topic_configuration", f"There is no topic in cluster matching pattern '{regex}'.",
                          "java.lang.IllegalStateException", wrapped=False)
        changing = [t for t in topics if any(len(p.replicas) != rf for p in cluster.topics[t].partitions)]
        if changing:
            to_change[rf] = changing
    if not to_change:
        requested = "{" + ", ".join(f"{rf}={regex}" for rf, regex in sorted(by_rf.items())) + "}"
        raise failure("topic_configuration", "All topics matching given pattern already have target replication "
                      f"factor. Requested topic pattern by replication factor: {requested}.",
                      "java.lang.IllegalStateException", wrapped=False)
    if not alive:
        raise failure("topic_configuration", "All brokers are dead in the cluster.",
                      "java.lang.IllegalArgumentException")
    racks = {cluster.brokers[b].rack or "127.0.0.1" for b in alive}
    for rf, topics in to_change.items():
        if rf > len(alive):
            raise failure("topic_configuration",
                          f"Unable to change replication factor (RF) of topics {java_collection(topics)} to {rf} since "
                          f"there are only {len(alive)} alive brokers in the cluster. Requested RF cannot be more than "
                          "number of alive brokers.", "java.lang.RuntimeException")
        if rf > len(racks) and not skip_rack_awareness_check:
            raise failure("topic_configuration",
                          f"Unable to change replication factor of topics {java_collection(topics)} to {rf} since "
                          f"there are only {len(racks)} racks in the cluster, to skip the rack-awareness check, set "
                          "skip_rack_awareness_check to true in the request.", "java.lang.RuntimeException")
    moves: list[ReplicaMove] = []
    for rf, topics in to_change.items():
        try:
            moves.extend(cluster.plan_replication_factor(topics, rf))
        except ClusterError as exc:
            raise failure("topic_configuration", str(exc), "java.lang.IllegalStateException") from None
    return optimize_leaders(cluster, moves, goals, excluded_topics)


def optimize_leaders(cluster: Cluster, moves: list[ReplicaMove], goals: Iterable[str],
                     excluded_topics: set[str]) -> list[ReplicaMove]:
    """The goals' pass after a replication-factor change: with a leadership goal among them, leaders are evened out
    by reordering replicas of every topic not excluded (the request's own included). Returns every movement: the
    change's, with their new order, and the reorders of other partitions."""
    if not LEADERSHIP_GOALS & set(goals):
        return moves
    changed = {(m.topic, m.partition): m for m in moves}
    assignments = {name: [list(changed[(name, p.index)].new_replicas) if (name, p.index) in changed
                          else list(p.replicas) for p in topic.partitions]
                   for name, topic in cluster.topics.items() if name not in excluded_topics}
    balance_leaders(assignments, cluster.alive_ids)
    result = movements_to(cluster, assignments)
    # Movements of excluded topics (a request may change an excluded topic's RF) stay as the change made them.
    result.extend(m for m in moves if m.topic in excluded_topics)
    return result


def fix_offline(cluster: Cluster) -> list[ReplicaMove]:
    """FixOfflineReplicasRunnable: refused when nothing is offline (``sanityCheckOfflineReplicaPresence``) or every
    broker is dead; otherwise each offline replica moves to an alive broker."""
    if not cluster.alive_ids:
        raise failure("fix_offline_replicas", "All brokers are dead in the cluster.", "java.lang.IllegalArgumentException")
    moves = cluster.plan_fix_offline()
    if not moves:
        brokers = ", ".join(f"Broker[id={b.id},rack={b.rack or ''},state={'ALIVE' if b.alive else 'DEAD'},"
                            f"replicaCount={cluster.replica_counts()[b.id]},logdirs=[]]"
                            for b in sorted(cluster.brokers.values(), key=lambda b: b.id))
        raise failure("fix_offline_replicas", f"Cluster has no offline replica on brokers [{brokers}] to fix.",
                      "java.lang.IllegalStateException")
    return moves
