"""What a destroyed pool took comes back: member regions, the devices made for it, its tasks."""

from __future__ import annotations

import os

import pytest
import trio
import trio.testing
from storage_helpers import call_route

from cluster.ground.errors import ValidationFailed
from cluster.modules.rt_bdev import BdevContainer
from cluster.modules.rt_cte_core import CteCoreContainer
from cluster.modules.rt_safe_bdev import SafeBdevContainer
from cluster.runtime import Runtime
from cluster.runtime.workers import RETRY_LIMIT, RETRY_MAX_DELAY_S

CYCLES = 200


def tasks_below(task: trio.lowlevel.Task) -> int:
    """``task`` and every task its nurseries run, however deep."""
    return 1 + sum(tasks_below(t) for n in task.child_nurseries for t in n.child_tasks)


def free_bytes(runtime: Runtime, *names: str) -> list[int]:
    devices = [runtime.pools.by_name(n) for n in names]
    return [d.remaining_capacity for d in devices if isinstance(d, BdevContainer)]


def periodic_tasks(runtime: Runtime) -> int:
    rows = runtime.workers.snapshot()
    return sum(r["num_periodic_tasks"] + r["num_retry_tasks"] for r in rows)


async def test_create_destroy_cycles_leave_pools_extents_and_tasks_as_they_were(
    runtime: Runtime, autojump_clock: trio.testing.MockClock
) -> None:
    for i in range(3):
        await runtime.compose("rt_bdev", f"m{i}", f"80{i}.0", {"capacity": "256K"})
    pools = sorted(str(c.info.pool_id) for c in runtime.pools.all())
    free = free_bytes(runtime, "m0", "m1", "m2")
    root = trio.lowlevel.current_root_task()
    tasks, periodic = tasks_below(root), periodic_tasks(runtime)
    core_cfg = {
        "targets": [{"name": "t", "capacity": "64K"}, {"name": "a", "attach_pool_name": "arr"}],
        "rescore_period_s": 0.5,
    }
    for cycle in range(CYCLES):
        await runtime.compose(
            "rt_safe_bdev", "arr", "850.0", {"members": "m0,m1", "max_failures": 1}
        )
        await runtime.compose("rt_cte_core", "core", "700.0", core_cfg)
        array, core = runtime.pools.by_name("arr"), runtime.pools.by_name("core")
        assert isinstance(array, SafeBdevContainer)
        assert isinstance(core, CteCoreContainer)
        assert runtime.pools.by_name("arr_p0") is not None
        for i in range(3):  # blobs on both targets: space taken on the array and on core_t
            await core.put("tag", f"b{i}", os.urandom(30_000))
        assert {loc.target for loc in core.tags["tag"].values()} == {"t", "a"}
        order = ("700.0", "850.0") if cycle % 2 else ("850.0", "700.0")
        for pool in order:
            await runtime.destroy(pool)
    assert sorted(str(c.info.pool_id) for c in runtime.pools.all()) == pools
    assert free_bytes(runtime, "m0", "m1", "m2") == free, "every member region was freed"
    assert periodic_tasks(runtime) > periodic, "retry tasks stay visible for a while"
    await trio.sleep(RETRY_LIMIT * RETRY_MAX_DELAY_S + 1)  # no wall time: the clock autojumps
    assert periodic_tasks(runtime) == periodic
    assert tasks_below(root) == tasks
    assert autojump_clock.current_time() < 2 * RETRY_LIMIT * RETRY_MAX_DELAY_S


async def test_a_device_made_for_an_array_stays_while_something_else_uses_it(
    runtime: Runtime,
) -> None:
    for i in range(2):
        await runtime.compose("rt_bdev", f"m{i}", f"80{i}.0", {"capacity": "256K"})
    await runtime.compose("rt_safe_bdev", "arr", "850.0", {"members": "m0,m1", "max_failures": 1})
    array = runtime.pools.by_name("arr")
    assert isinstance(array, SafeBdevContainer)
    params = {"member_name": "big", "capacity": "1M", "as_parity": "1"}
    await call_route(runtime, "rt_safe_bdev", "POST", "850.0/add_member", params)
    big = runtime.pools.by_name("big")
    assert isinstance(big, BdevContainer)
    extent = await big.allocate(4096)  # someone else's data on it
    await runtime.destroy("850.0")
    assert runtime.pools.by_name("arr_p0") is None, "made for the array, used by nobody else"
    assert runtime.pools.by_name("big") is big, "made for the array, but holds other data"
    assert big.remaining_capacity == big.capacity - 4096, "the array's region was freed"
    await big.free(extent)


async def test_a_failed_start_gives_back_what_it_took(runtime: Runtime) -> None:
    await runtime.compose("rt_bdev", "m0", "800.0", {"capacity": "256K"})
    pools = len(runtime.pools)
    cfg = {"targets": [{"name": "t", "capacity": "64K"}, {"name": "t", "capacity": "64K"}]}
    with pytest.raises(ValidationFailed, match="exists already") as info:
        await runtime.compose("rt_cte_core", "core", "700.0", cfg)
    assert info.value.status == 400
    assert len(runtime.pools) == pools, "the first target's device was destroyed again"
    assert runtime.pools.by_name("core_t") is None
    assert runtime.workers.periodic_of(runtime.pools.suggest(700)) == []
