"""Small rt_bdev reads and writes run in the caller's task: still taught to the cost model,
still measured, and a loop of them still lets other tasks run."""

from __future__ import annotations

import os

import trio

from cluster.modules.rt_bdev import INLINE_BYTES, BdevContainer
from cluster.runtime import Runtime
from cluster.runtime.workers import INLINE_LEARN_EVERY


async def test_small_io_inline_is_counted_and_yields(runtime: Runtime) -> None:
    await runtime.compose("rt_bdev", "d", "870.0", {"bdev_type": "ram", "capacity": "4M"})
    dev = runtime.pools.by_name("d")
    assert isinstance(dev, BdevContainer)
    other_ran = trio.Event()

    async def other() -> None:
        other_ran.set()

    data = os.urandom(4096)
    processed0 = sum(w["num_tasks_processed"] for w in runtime.workers.snapshot())
    async with trio.open_nursery() as nursery:
        nursery.start_soon(other)
        with trio.fail_after(30):
            while not other_ran.is_set():  # never awaits anything but the device
                await dev.write(0, data)
    assert await dev.read(0, 4096) == data
    writes = dev.cost.method("write")
    assert dev.cost.method("read").samples == 1  # the first inline task of a method teaches
    stats = dev.stats()
    assert writes.inline == stats["total_writes"] > 0  # every inline task is counted,
    assert writes.samples == -(-writes.inline // INLINE_LEARN_EVERY)  # one in 4 teaches
    processed = sum(w["num_tasks_processed"] for w in runtime.workers.snapshot())
    assert processed - processed0 == stats["total_writes"] + 1  # the worker rows count them
    big = os.urandom(INLINE_BYTES + 1)  # the worker path, same answers
    await dev.write(4096, big)
    assert await dev.read(4096, len(big)) == big
    assert dev.stats()["total_bytes_written"] == stats["total_bytes_written"] + len(big)


async def test_cancelled_caller_is_cancelled_at_a_small_io(runtime: Runtime) -> None:
    await runtime.compose("rt_bdev", "d", "871.0", {"bdev_type": "ram", "capacity": "1M"})
    dev = runtime.pools.by_name("d")
    assert isinstance(dev, BdevContainer)
    with trio.CancelScope() as scope:
        scope.cancel()
        await dev.write(0, b"x" * 4096)
    assert scope.cancelled_caught
    assert dev.stats()["total_writes"] == 0
