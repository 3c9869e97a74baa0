"""The simulated Kafka cluster: brokers with hierarchical racks, topics and partitions. Pure and synchronous.

Replica choices here are deliberately simple (least-loaded alive broker, preferring racks the partition does not use
yet): the simulator stands in for Kafka and Cruise Control, it is not Ballast's placement logic.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from events.topic_configs import KAFKA_TOPIC_DEFAULTS, KEYS, topic_config_problem
from services.adapters.admin.port import CORDONED_LOG_DIRS


# A broker's disk capacity when nothing better is known (Cruise Control's capacity file), shared by its directories.
BROKER_DISK_CAPACITY_MB = 1_000_000.0


class ClusterError(Exception):
    """An operation Kafka would refuse, with Kafka's wording where it has one."""


class NotModelled(ClusterError):
    """Something a real cluster does that the simulator does not model (a broker config but the cordons): refused,
    rather than accepted and ignored."""


class InvalidConfig(ClusterError):
    """Kafka's INVALID_CONFIG: a topic config it refuses."""


def _check_config(config: dict[str, str]) -> None:
    if problem := topic_config_problem(config, tiered_storage=False):  # the simulated brokers have none
        raise InvalidConfig(problem)


class TopicExists(ClusterError):
    pass


class NoSuchTopic(ClusterError):
    pass


@dataclass
class Broker:
    id: int
    rack: str | None = None
    alive: bool = True
    log_dirs: tuple[str, ...] = ("/var/kafka/data-0", "/var/kafka/data-1")
    offline_log_dirs: tuple[str, ...] = ()  # failed disks (KIP-112), as a real cluster reports them
    dir_capacity_mb: dict[str, float] = field(default_factory=dict)  # where the cluster reports it (total bytes)
    configs: dict[str, str] = field(default_factory=dict)  # its dynamic configs (IncrementalAlterConfigs)

    def capacity_mb(self, log_dir: str) -> float:
        return self.dir_capacity_mb.get(log_dir) or BROKER_DISK_CAPACITY_MB / max(1, len(self.log_dirs))

    @property
    def cordoned_log_dirs(self) -> tuple[str, ...]:
        """Its directories the operator cordoned (KIP-1066: ``cordoned.log.dirs``, ``*`` for all)."""
        named = [d.strip() for d in self.configs.get(CORDONED_LOG_DIRS, "").split(",") if d.strip()]
        return self.log_dirs if "*" in named else tuple(d for d in self.log_dirs if d in named)

    @property
    def usable(self) -> bool:
        """Whether Kafka's controller places new replicas on it: alive, and a directory not cordoned."""
        return self.alive and set(self.log_dirs) > set(self.cordoned_log_dirs)

    def set_configs(self, changes: dict[str, str | None]) -> None:
        """Set (or, for None, delete) dynamic configs; a cordon must name its directories, as Kafka checks. The
        simulator models no other broker config (a throttle would throttle nothing): it refuses them."""
        if unmodelled := sorted(set(changes) - {CORDONED_LOG_DIRS}):
            raise NotModelled(f"the simulator models no broker config but {CORDONED_LOG_DIRS} "
                              f"(asked: {', '.join(unmodelled)})")
        if (cordons := changes.get(CORDONED_LOG_DIRS)) is not None:
            unknown = [d.strip() for d in cordons.split(",") if d.strip() not in (*self.log_dirs, "*", "")]
            if unknown:
                raise InvalidConfig(f"Invalid value {cordons} for configuration {CORDONED_LOG_DIRS}: "
                                    f"{', '.join(unknown)} is not one of the broker's log directories")
        for key, value in changes.items():
            if value is None:
                self.configs.pop(key, None)
            else:
                self.configs[key] = value


@dataclass
class Partition:
    index: int
    replicas: list[int]
    leader: int | None
    size_mb: float = 100.0
    # Log directories chosen through AlterReplicaLogDirs, per broker; a replica not named here is where the broker
    # put it (the load model's stable choice).
    log_dirs: dict[int, str] = field(default_factory=dict)
    # The in-sync replicas a real cluster reported; None where the model derives them (every alive replica).
    in_sync: list[int] | None = None
    # Replicas lost with a failed log directory (KIP-112): their broker is alive, they are offline.
    failed: set[int] = field(default_factory=set)

    def isr(self, alive: set[int]) -> list[int]:
        if self.in_sync is not None:
            return list(self.in_sync)
        return [b for b in self.replicas if b in alive and b not in self.failed]

    def offline(self, alive: set[int]) -> list[int]:
        """Replicas on a dead broker or a failed directory."""
        return [b for b in self.replicas if b not in alive or b in self.failed]

    def set_replicas(self, replicas: list[int] | tuple[int, ...]) -> None:
        self.replicas = list(replicas)
        # A replica that left its broker leaves its directory too: if it comes back, the broker chooses again.
        self.log_dirs = {b: d for b, d in self.log_dirs.items() if b in self.replicas}
        self.failed &= set(self.replicas)


@dataclass
class Topic:
    name: str
    partitions: list[Partition]
    config: dict[str, str] = field(default_factory=dict)

    @property
    def replication_factor(self) -> int:
        counts = Counter(len(p.replicas) for p in self.partitions)
        return counts.most_common(1)[0][0] if counts else 0


@dataclass(frozen=True)
class ReplicaMove:
    """One partition's change of replica set (what Cruise Control's executor calls a partition movement)."""

    topic: str
    partition: int
    old_replicas: tuple[int, ...]
    new_replicas: tuple[int, ...]
    size_mb: float

    @property
    def data_to_move_mb(self) -> float:
        return self.size_mb * len(set(self.new_replicas) - set(self.old_replicas))


@dataclass(frozen=True)
class IntraBrokerMove:
    """One replica's move between two log directories of its broker (AlterReplicaLogDirs)."""

    topic: str
    partition: int
    broker: int
    source: str
    destination: str
    size_mb: float


@dataclass
class Proposal:
    """What an optimization proposes: partition movements between brokers, then moves between a broker's
    directories (Cruise Control executes them in that order, then leadership)."""

    moves: list[ReplicaMove] = field(default_factory=list)
    intra: list[IntraBrokerMove] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.moves or self.intra)


class Cluster:
    def __init__(self, brokers: list[Broker], *, default_partition_mb: float = 100.0) -> None:
        self.brokers: dict[int, Broker] = {b.id: b for b in brokers}
        self.topics: dict[str, Topic] = {}
        self.default_partition_mb = default_partition_mb
        # What a topic created without partitions or a replication factor gets: Kafka's own defaults.
        self.topic_defaults = dict(KAFKA_TOPIC_DEFAULTS)

    # -- brokers -----------------------------------------------------------------------------------------------

    @property
    def alive_ids(self) -> set[int]:
        return {b.id for b in self.brokers.values() if b.alive}

    @property
    def usable_ids(self) -> set[int]:
        """The brokers Kafka's own placer puts new replicas on (not those whose every directory is cordoned)."""
        return {b.id for b in self.brokers.values() if b.usable}

    def add_broker(self, broker_id: int, rack: str | None) -> Broker:
        """A broker joins the cluster (empty, alive), as when a Kafka cluster is scaled up."""
        if broker_id in self.brokers:
            raise ClusterError(f"Broker {broker_id} already exists")
        if broker_id < 0:
            raise ClusterError(f"Broker id {broker_id} must not be negative")
        broker = Broker(broker_id, rack)
        self.brokers[broker_id] = broker
        return broker

    def remove_broker(self, broker_id: int) -> None:
        """A broker leaves the cluster for good (scale-down). Only an empty one: its replicas would be lost."""
        if broker_id not in self.brokers:
            raise ClusterError(f"Broker {broker_id} does not exist")
        if hosted := self.replica_counts()[broker_id]:
            raise ClusterError(f"Broker {broker_id} still hosts {hosted} replica(s); move them off first "
                               "(a remove-brokers rebalance)")
        del self.brokers[broker_id]

    def set_alive(self, broker_id: int, alive: bool) -> None:
        if broker_id not in self.brokers:
            raise ClusterError(f"Broker {broker_id} does not exist")
        self.brokers[broker_id].alive = alive
        for topic in self.topics.values():
            for p in topic.partitions:
                if not alive and p.leader == broker_id:
                    p.leader = next((b for b in p.replicas if b in self.alive_ids), None)
                if alive and p.leader is None and broker_id in p.replicas:
                    p.leader = broker_id

    def replica_counts(self) -> Counter[int]:
        counts: Counter[int] = Counter({b: 0 for b in self.brokers})
        for topic in self.topics.values():
            for p in topic.partitions:
                counts.update(p.replicas)
        return counts

    def leader_counts(self) -> Counter[int]:
        counts: Counter[int] = Counter({b: 0 for b in self.brokers})
        for topic in self.topics.values():
            counts.update(p.leader for p in topic.partitions if p.leader is not None)
        return counts

    def _pick(self, exclude: list[int], load: Counter[int], among: Iterable[int] | None = None) -> int | None:
        """Least-loaded broker that takes new replicas (``among``: of those), preferring racks not yet used by the
        partition."""
        used_racks = {self.brokers[b].rack for b in exclude if b in self.brokers}
        candidates = [b for b in sorted(self.usable_ids if among is None else among) if b not in exclude]
        if not candidates:
            return None
        return min(candidates, key=lambda b: (self.brokers[b].rack in used_racks, load[b], b))

    # -- topics ------------------------------------------------------------------------------------------------

    def create_topic(self, name: str, partitions: int, replication_factor: int, config: dict[str, str],
                     assignment: list[list[int]] | None = None) -> Topic:
        if name in self.topics:
            raise TopicExists(f"Topic '{name}' already exists.")
        _check_config(config)
        if assignment is not None:
            self._check_assignment(assignment, replication_factor=None)
            topic = Topic(name=name, partitions=[], config=dict(config))
            self.topics[name] = topic
            self._assign_partitions(topic, assignment)
            return topic
        if partitions < 1:
            raise ClusterError("Number of partitions must be larger than 0.")
        if replication_factor < 1:
            raise ClusterError("Replication factor must be larger than 0.")
        alive = len(self.usable_ids)
        if replication_factor > alive:
            raise ClusterError(
                f"Unable to replicate the partition {replication_factor} time(s): The target replication factor of "
                f"{replication_factor} cannot be reached because only {alive} broker(s) are registered."
            )
        topic = Topic(name=name, partitions=[], config=dict(config))
        self.topics[name] = topic
        self._add_partitions(topic, partitions, replication_factor)
        return topic

    def _add_partitions(self, topic: Topic, total: int, replication_factor: int) -> None:
        load = self.replica_counts()
        leaders = self.leader_counts()
        for index in range(len(topic.partitions), total):
            replicas: list[int] = []
            # Leader first: spread leadership, then followers by replica load.
            first = min(sorted(self.usable_ids), key=lambda b: (leaders[b], load[b], b))
            replicas.append(first)
            while len(replicas) < replication_factor:
                nxt = self._pick(replicas, load)
                if nxt is None:
                    break
                replicas.append(nxt)
            load.update(replicas)
            leaders[first] += 1
            topic.partitions.append(Partition(index, replicas, first, self.default_partition_mb))

    def _check_assignment(self, assignment: list[list[int]], replication_factor: int | None) -> None:
        """What KRaft's controller checks in a manual assignment (registered brokers, not necessarily alive)."""
        if not assignment:
            raise ClusterError("The manual partition assignment must include at least one partition.")
        for index, replicas in enumerate(assignment):
            if not replicas:
                raise ClusterError(f"The manual partition assignment includes an empty replica list for partition "
                                   f"{index}.")
            if len(set(replicas)) != len(replicas):
                raise ClusterError(f"The manual partition assignment includes the broker(s) "
                                   f"{sorted({b for b in replicas if replicas.count(b) > 1})} more than once in "
                                   f"partition {index}.")
            if unknown := [b for b in replicas if b not in self.brokers]:
                raise ClusterError(f"The manual partition assignment includes broker {unknown[0]}, but no such "
                                   f"broker is registered.")
            expected = replication_factor if replication_factor is not None else len(assignment[0])
            if len(replicas) != expected:
                raise ClusterError("All partitions in the manual partition assignment must have the same number of "
                                   "replicas.")

    def _assign_partitions(self, topic: Topic, assignment: list[list[int]]) -> None:
        alive = self.alive_ids
        for replicas in assignment:
            leader = next((b for b in replicas if b in alive), None)
            topic.partitions.append(Partition(len(topic.partitions), list(replicas), leader, self.default_partition_mb))

    def topic(self, name: str) -> Topic:
        try:
            return self.topics[name]
        except KeyError:
            raise NoSuchTopic(f"This server does not host this topic-partition: {name}") from None

    def delete_topic(self, name: str) -> None:
        self.topic(name)
        del self.topics[name]

    def create_partitions(self, name: str, total: int, assignment: list[list[int]] | None = None) -> None:
        topic = self.topic(name)
        if total <= len(topic.partitions):
            raise ClusterError(f"Topic currently has {len(topic.partitions)} partitions, {total} would not be an increase.")
        if assignment is not None:
            if len(assignment) != total - len(topic.partitions):
                raise ClusterError(f"Attempted to add {total - len(topic.partitions)} additional partition(s), but "
                                   f"only {len(assignment)} assignment(s) were specified.")
            self._check_assignment(assignment, replication_factor=topic.replication_factor)
            self._assign_partitions(topic, assignment)
            return
        self._add_partitions(topic, total, topic.replication_factor)

    def reassign(self, name: str, replicas: dict[int, list[int]]) -> None:
        """AlterPartitionReassignments, completed at once (the simulator copies no data for it)."""
        topic = self.topic(name)
        for index, wanted in replicas.items():
            if not 0 <= index < len(topic.partitions):
                raise ClusterError(f"Partition {index} of topic {name} does not exist.")
            if not wanted or len(set(wanted)) != len(wanted):
                raise ClusterError(f"Replica assignment {wanted} for partition {index} is empty or repeats a broker.")
            if unknown := [b for b in wanted if b not in self.brokers]:
                raise ClusterError(f"The replica assignment includes broker {unknown[0]}, which is not registered.")
        alive = self.alive_ids
        for index, wanted in replicas.items():
            partition = topic.partitions[index]
            partition.set_replicas(wanted)
            if partition.leader not in wanted:
                partition.leader = next((b for b in wanted if b in alive), None)

    def alter_replica_log_dirs(self, name: str, dirs: dict[tuple[int, int], str]) -> None:
        """AlterReplicaLogDirs for (partition, broker) -> log directory, completed at once. Validated whole first,
        with Kafka's wording for its errors, so a refused request changes nothing."""
        topic = self.topic(name)
        for (index, broker), log_dir in dirs.items():
            if not 0 <= index < len(topic.partitions) or broker not in topic.partitions[index].replicas:
                raise ClusterError(f"Replica {broker} of {name}-{index} is not available: the replica does not exist.")
            if log_dir not in self.brokers[broker].log_dirs:
                raise ClusterError(f"The user-specified log directory {log_dir} is not found in broker {broker}'s "
                                   "config.")
            if log_dir in self.brokers[broker].cordoned_log_dirs:  # Kafka 4.3: InvalidReplicaAssignmentException
                raise ClusterError(f"Log directory {log_dir} is cordoned")
        for (index, broker), log_dir in dirs.items():
            topic.partitions[index].log_dirs[broker] = log_dir

    def alter_config(self, name: str, config: dict[str, str | None]) -> None:
        """IncrementalAlterConfigs: set these keys; None deletes one (back to its default)."""
        topic = self.topic(name)
        after = {k: v for k, v in {**topic.config, **config}.items() if v is not None}
        # Kafka validates the topic's configs as they would be after the change (the keys across each other too).
        _check_config({k: v for k, v in after.items() if k in config or k in KEYS})
        topic.config = after

    # -- replication-factor changes ----------------------------------------------------------------------------

    def plan_replication_factor(self, topics: list[str], target: int) -> list[ReplicaMove]:
        """Movements that bring every partition of ``topics`` to ``target`` replicas (nothing for those already
        there). Growing adds the least-loaded alive brokers, cordoned ones included (Cruise Control knows no
        cordons); shrinking drops followers from the most-loaded ones."""
        load = self.replica_counts()
        moves: list[ReplicaMove] = []
        for name in topics:
            for p in self.topic(name).partitions:
                replicas = list(p.replicas)
                while len(replicas) < target:
                    nxt = self._pick(replicas, load, among=self.alive_ids)
                    if nxt is None:
                        break
                    replicas.append(nxt)
                    load[nxt] += 1
                while len(replicas) > target:
                    followers = [b for b in replicas if b != p.leader] or replicas[1:]
                    drop = max(followers, key=lambda b: (load[b], b))
                    replicas.remove(drop)
                    load[drop] -= 1
                if replicas != p.replicas:
                    moves.append(ReplicaMove(name, p.index, tuple(p.replicas), tuple(replicas), p.size_mb))
        return moves

    def fail_log_dir(self, broker_id: int, path: str, replicas_there: list[tuple[str, int]]) -> None:
        """A disk fails (KIP-112): the directory goes offline, its replicas (``replicas_there``: topic, partition)
        go offline with it, leadership moves to another in-sync replica; the broker serves the rest."""
        broker = self.brokers.get(broker_id)
        if broker is None or path not in broker.log_dirs:
            raise ClusterError(f"Broker {broker_id} has no log directory {path}")
        broker.offline_log_dirs = tuple(sorted({*broker.offline_log_dirs, path}))
        alive = self.alive_ids
        for name, index in replicas_there:
            partition = self.topics[name].partitions[index]
            partition.failed.add(broker_id)
            if partition.leader == broker_id:
                partition.leader = next((b for b in partition.isr(alive)), None)

    def plan_fix_offline(self) -> list[ReplicaMove]:
        """fix_offline_replicas: each offline replica (dead broker, failed disk) moves to the least-loaded alive
        broker the partition does not use, keeping its position in the replica list."""
        alive = self.alive_ids
        load = self.replica_counts()
        moves = []
        for name, topic in sorted(self.topics.items()):
            for p in topic.partitions:
                offline = p.offline(alive)
                if not offline:
                    continue
                replicas = list(p.replicas)
                for broker in offline:
                    target = self._pick(replicas, load, among=alive)  # Cruise Control knows no cordons
                    if target is None:
                        break
                    replicas[replicas.index(broker)] = target
                    load[target] += 1
                if replicas != p.replicas:
                    moves.append(ReplicaMove(name, p.index, tuple(p.replicas), tuple(replicas), p.size_mb))
        return moves

    def apply_intra(self, move: IntraBrokerMove) -> None:
        topic = self.topics.get(move.topic)
        if topic is None or move.partition >= len(topic.partitions):
            return
        partition = topic.partitions[move.partition]
        if move.destination in self.brokers[move.broker].cordoned_log_dirs:
            return  # Kafka refuses it (KIP-1066); Cruise Control counts the task done all the same
        if move.broker in partition.replicas:
            partition.log_dirs[move.broker] = move.destination

    def apply(self, move: ReplicaMove) -> None:
        topic = self.topics.get(move.topic)
        if topic is None or move.partition >= len(topic.partitions):
            return  # deleted while the movement ran: Kafka drops the reassignment with the topic
        p = topic.partitions[move.partition]
        p.set_replicas(move.new_replicas)
        # The executor ends a movement with a preferred-leader election: the first alive replica leads.
        p.leader = next((b for b in p.replicas if b in self.alive_ids), None)
