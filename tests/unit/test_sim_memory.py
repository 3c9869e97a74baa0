"""What the simulator holds grows with the cluster within reason (issue 52): completed user tasks are kept as Cruise
Control keeps them, up to a cache size (kept without a bound, with answers the size of the cluster, they held more
than a gigabyte at 100,000 topics); its topics leave the garbage collector's generations as they grow."""

from __future__ import annotations

from dataclasses import dataclass

from services.cluster_sim import user_tasks
from services.cluster_sim.user_tasks import UserTaskManager, request_key


@dataclass
class Limits:
    max_active_user_tasks: int = 1000
    task_scanner_period_s: float = 5.0
    session_expiry_s: float = 60.0


def test_only_the_newest_completed_tasks_are_kept_with_their_answers() -> None:
    now = [0.0]
    tasks = UserTaskManager(Limits(), clock=lambda: now[0])
    made = []
    for i in range(user_tasks.MAX_CACHED_COMPLETED + 5):
        task = tasks.create("partition_load", request_key("GET", "partition_load", {"n": [str(i)]}), f"GET /{i}",
                            "127.0.0.1", "s", asynchronous=True)
        task.finish(200, {"records": [i]}, now[0])
        made.append(task)
        now[0] += 5.0  # a scanner run: the task completes
    tasks.scan()
    assert list(tasks.completed) == [t.id for t in made[-user_tasks.MAX_CACHED_COMPLETED:]]
    assert tasks.get(made[0].id) is None
    assert tasks.get(made[-1].id).answer == (200, {"records": [len(made) - 1]})


async def test_the_simulators_topics_leave_the_collectors_generations_once_grown() -> None:
    import gc

    from services.common.admin.port import NewTopic
    from services.common.admin.simulator import SimulatorClusterAdmin
    from services.cluster_sim.app import Simulator
    from services.common.settings import SimulatorSettings
    from services.local.broker import free_port

    simulator = Simulator(SimulatorSettings(cruise_control_port=free_port(), admin_port=free_port(),
                                            brokers=["1", "2", "3"]))
    simulator.frozen.every = 50
    await simulator.start()
    admin = SimulatorClusterAdmin(f"http://127.0.0.1:{simulator.settings.admin_port}")
    gc.unfreeze()
    try:
        await admin.create_topics([NewTopic(name=f"t-{i}", assignment=((1, 2, 3),)) for i in range(60)])
        assert gc.get_freeze_count() > 0
        assert not any(o is simulator.cluster.topics["t-0"] for o in gc.get_objects())
    finally:
        gc.unfreeze()
        await admin.aclose()
        await simulator.stop()
