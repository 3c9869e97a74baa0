"""The simulator's load model: skewed, drifting rates, partitions that grow, replicas over log directories."""

from services.cluster_sim.load import FANOUT, LoadModel
from services.cluster_sim.model import Broker, Cluster


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def cluster() -> Cluster:
    c = Cluster([Broker(i, f"/dc{(i + 1) // 2}/r{i % 2}") for i in range(1, 7)], default_partition_mb=10.0)
    for index in range(20):
        c.create_topic(f"topic-{index}", 4, 3, {})
    return c


def test_rates_are_skewed_between_topics_and_stable_for_a_given_time() -> None:
    clock = Clock()
    model = LoadModel(cluster(), time_scale=60, clock=clock)
    rates = sorted(model.rate_kb_s(f"topic-{i}", 0) for i in range(20))
    assert rates[-1] > 3 * rates[0], "some topics are much hotter than others"
    assert model.rate_kb_s("topic-3", 1) == model.rate_kb_s("topic-3", 1)
    clock.now = 600  # 10 real minutes at 60x: ten hours simulated, several drift cycles apart
    assert model.rate_kb_s("topic-3", 1) != LoadModel(cluster(), time_scale=60, clock=Clock()).rate_kb_s("topic-3", 1)


def test_partitions_grow_by_what_was_produced() -> None:
    clock = Clock()
    c = cluster()
    model = LoadModel(c, time_scale=60, clock=clock)
    partition = c.topics["topic-0"].partitions[0]
    clock.now = 1.0
    rate = model.rate_kb_s("topic-0", 0)
    model.advance()
    assert abs(partition.size_mb - (10.0 + rate * 60 / 1024)) < 0.05 * rate * 60 / 1024


def test_broker_figures_add_up() -> None:
    c = cluster()
    model = LoadModel(c, time_scale=60, clock=Clock())
    partitions = model.partitions()
    brokers = model.brokers()
    total_in = sum(p.bytes_in_kb_s for p in partitions)
    assert abs(sum(b["leader_in"] for b in brokers.values()) - total_in) < 1e-6
    assert abs(sum(b["out"] for b in brokers.values()) - FANOUT * total_in) < 1e-6
    replicas = c.replica_counts()
    for broker, row in brokers.items():
        dirs = row["dirs"]
        assert set(dirs) == {"/var/kafka/data-0", "/var/kafka/data-1"}
        assert sum(d["replicas"] for d in dirs.values()) == replicas[broker]
    used = [d["replicas"] for row in brokers.values() for d in row["dirs"].values()]
    assert min(used) > 0, "replicas spread over both directories of every broker"


def test_a_partition_stops_growing_at_what_its_retention_keeps() -> None:
    """However long the simulator runs, its disks hold the retention's worth (a demo on a slow machine once found
    them too full to drain a directory)."""
    clock = Clock()
    kept, unbounded = cluster(), cluster()
    models = [LoadModel(kept, time_scale=60, retention_s=600, clock=clock),
              LoadModel(unbounded, time_scale=60, retention_s=float("inf"), clock=clock)]
    for minute in range(1, 11):  # ten real minutes: six hundred simulated ones, the rate drifting meanwhile
        clock.now = 60.0 * minute
        for model in models:
            model.advance()
    size, unbounded_size = (c.topics["topic-0"].partitions[0].size_mb for c in (kept, unbounded))
    assert size == models[0].rate_kb_s("topic-0", 0) / 1024 * 600
    assert unbounded_size > 50 * size
