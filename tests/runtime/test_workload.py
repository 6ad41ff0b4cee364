"""The synthetic workload stays modest and alive whatever its settings say."""

from __future__ import annotations

import copy
import math
import random
from typing import Any, TypeVar

import pytest
import trio
import trio.testing

from cluster.modules.rt_cte_core import CteCoreContainer
from cluster.runtime import Runtime, serve_workload
from cluster.runtime.workload import MAX_IO_SIZE, MAX_RATE, workload_limits

STEPS = 200
T = TypeVar("T")


def forced(frozen: T, **changes: Any) -> T:
    """A copy of a frozen dataclass with ``changes``, past its own checks."""
    out = copy.copy(frozen)
    for name, value in changes.items():
        object.__setattr__(out, name, value)
    return out


@pytest.mark.parametrize(
    ("rate", "io_size", "expected"),
    [
        (20.0, 4096, (0.05, 4096)),
        (math.inf, 4096, (1 / MAX_RATE, 4096)),
        (1e12, 4096, (1 / MAX_RATE, 4096)),
        (math.nan, 4096, (1.0, 4096)),
        (-3.0, 4096, (1.0, 4096)),
        (0, 4096, (1.0, 4096)),
        (True, 4096, (1.0, 4096)),
        (20.0, -5, (0.05, 1)),
        (20.0, 0, (0.05, 1)),
        (20.0, 1 << 40, (0.05, MAX_IO_SIZE)),
        (20.0, 4096.5, (0.05, MAX_IO_SIZE)),
    ],
)
def test_limits(rate: Any, io_size: Any, expected: tuple[float, int]) -> None:
    assert workload_limits(rate, io_size) == expected


@pytest.mark.parametrize(("rate", "io_size"), [(math.inf, -5), (1e9, 1 << 40), (math.nan, 0)])
async def test_hostile_rate_and_io_size_neither_spin_nor_crash(
    runtime: Runtime, autojump_clock: trio.testing.MockClock, rate: float, io_size: int
) -> None:
    # settings refuse these values since they are read; the workload must not rely on that
    workload = forced(runtime.settings.workload, rate=rate, io_size=io_size)
    runtime.settings = forced(runtime.settings, workload=workload)
    await runtime.compose(
        "rt_cte_core", "core", "700.0", {"targets": [{"name": "t", "capacity": "4M"}]}
    )
    core = runtime.pools.by_name("core")
    assert isinstance(core, CteCoreContainer)
    sizes: list[int] = []
    real_step = core.workload_step
    done = trio.Event()

    async def step(rng: random.Random, size: int) -> None:
        sizes.append(size)
        await real_step(rng, size)
        if len(sizes) == STEPS:
            done.set()

    core.workload_step = step  # type: ignore[method-assign]
    start = trio.current_time()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(serve_workload, runtime, 1)
        await done.wait()
        nursery.cancel_scope.cancel()
    assert trio.current_time() - start >= STEPS / MAX_RATE, "no busy loop: each step waits"
    assert set(sizes) <= set(range(1, MAX_IO_SIZE + 1))
    assert core.stats()["num_blobs"] > 0, "the steps really ran"
