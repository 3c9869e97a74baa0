"""A key's shard is the partition Kafka's default partitioner gives it, and a handover pauses before it hands over."""

from __future__ import annotations

import asyncio
import threading

import pytest
from aiokafka.partitioner import DefaultPartitioner

from services.common.shards import Handover, shard_of

# Utils.murmur2 test vectors from Kafka's own UtilsTest (as signed 32-bit ints).
KAFKA_MURMUR2 = {b"21": -973932308, b"foobar": -790332482, b"a-little-bit-long-string": -985981536,
                 b"a-little-bit-longer-string": -1486304829,
                 b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971, b"abc": 479470107}


@pytest.mark.parametrize("key", sorted(KAFKA_MURMUR2))
def test_the_shard_is_kafkas_default_partition(key: bytes) -> None:
    for shards in (2, 3, 4, 12):
        assert shard_of(key, shards) == (KAFKA_MURMUR2[key] & 0x7FFFFFFF) % shards
        assert shard_of(key, shards) == DefaultPartitioner()(key, list(range(shards)), list(range(shards)))


def test_keyless_records_and_a_single_shard_go_to_shard_zero() -> None:
    assert shard_of(None, 4) == 0
    assert {shard_of(f"t{i}".encode(), 1) for i in range(100)} == {0}
    assert {shard_of(f"t{i}".encode(), 4) for i in range(100)} == {0, 1, 2, 3}


def test_a_handover_pauses_from_another_thread_and_a_pause_cancels_a_load_under_way() -> None:
    async def scenario() -> list[str]:
        seen: list[str] = []
        loading = asyncio.Event()

        async def pause() -> None:
            seen.append("paused")

        async def take(shards: frozenset[int]) -> None:
            seen.append(f"take {sorted(shards)}")
            loading.set()
            await asyncio.sleep(30)  # a long load: the pause must cancel it
            seen.append("loaded")

        handover = Handover(asyncio.get_running_loop(), pause=pause, take=take)
        handover.assign(frozenset({1, 2}))
        await loading.wait()
        lease_thread = threading.Thread(target=handover.pause)  # as the lease's rebalance callback does
        lease_thread.start()
        while lease_thread.is_alive():
            await asyncio.sleep(0.01)
        return seen

    assert asyncio.run(scenario()) == ["take [1, 2]", "paused"]


def test_a_failing_load_is_tried_again() -> None:
    async def scenario() -> int:
        attempts = []
        done = asyncio.Event()

        async def take(shards: frozenset[int]) -> None:
            attempts.append(shards)
            if len(attempts) < 2:
                raise TimeoutError("the bus is not there")
            done.set()

        async def pause() -> None:
            pass

        handover = Handover(asyncio.get_running_loop(), pause=pause, take=take)
        handover.take(frozenset({0}))
        await asyncio.wait_for(done.wait(), 10)
        return len(attempts)

    assert asyncio.run(scenario()) == 2
