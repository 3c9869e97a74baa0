"""What the simulator holds grows with the cluster within reason (issue 52): its topics leave the garbage collector's
generations as they grow."""

from __future__ import annotations

async def test_the_simulators_topics_leave_the_collectors_generations_once_grown() -> None:
    import gc

    from services.adapters.admin.port import NewTopic
    from services.adapters.admin.simulator import SimulatorClusterAdmin
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
