"""rt_cte_core: placement, attach, unregister without data loss; periodic tasks after destroy."""

from __future__ import annotations

import os

import pytest
from storage_helpers import call_route, digest

from cluster.ground.errors import BadRequest, Conflict, NotFound, ValidationFailed
from cluster.modules.rt_cte_core import CteCoreContainer
from cluster.runtime import Runtime
from tests.support import wait_for_async


async def make_core(runtime: Runtime, name: str = "core") -> CteCoreContainer:
    body = await call_route(
        runtime, "rt_cte_core", "POST", "create",
        {"pool_name": name, "pool_id": runtime.suggest_pool_id("rt_cte_core")},
    )  # fmt: skip
    core = runtime.pools.by_name(str(body["pool_name"]))
    assert isinstance(core, CteCoreContainer)
    return core


async def register(runtime: Runtime, core: CteCoreContainer, **params: str) -> dict[str, object]:
    return await call_route(
        runtime, "rt_cte_core", "POST", f"{core.info.pool_id}/register_target", params
    )


async def test_attach_array_and_unregister_keep_every_blob(runtime: Runtime) -> None:
    for i in range(3):
        await runtime.compose("rt_bdev", f"m{i}", f"80{i}.0", {"capacity": "256K"})
    await runtime.compose(
        "rt_safe_bdev", "arr", "850.0", {"members": "m0,m1,m2", "max_failures": 1}
    )
    core = await make_core(runtime)
    body = await register(runtime, core, name="ram0", capacity="128K")
    assert body == {"ok": True, "name": "ram0", "bdev_pool_id": "901.0", "attached": False}
    body = await register(runtime, core, name="array", attach_pool_id="850.0")
    assert body == {"ok": True, "name": "array", "bdev_pool_id": "850.0", "attached": True}
    blobs = {f"b{i}": os.urandom(9000 + i) for i in range(30)}
    for name, data in blobs.items():
        await core.put("tag", name, data)
    placed = {core.locate("tag", n).target for n in blobs}
    assert placed == {"ram0", "array"}, "blobs spill from the best target to the next"
    targets = await call_route(runtime, "rt_cte_core", "GET", f"{core.info.pool_id}/targets")
    assert next(list(t)[:7] for t in targets["targets"]) == [  # type: ignore[index]
        "name", "score", "remaining_space", "bytes_read", "bytes_written", "ops_read",
        "ops_written",
    ]  # fmt: skip
    stats = core.stats()
    assert (stats["num_targets"], stats["num_tags"], stats["num_blobs"]) == (2, 1, 30)

    body = await call_route(
        runtime, "rt_cte_core", "POST", f"{core.info.pool_id}/unregister_target", {"name": "ram0"}
    )
    assert body == {"ok": True, "name": "ram0"}
    assert runtime.pools.by_name("core_ram0") is None, "the target's own device is gone"
    for name, data in blobs.items():
        assert digest(await core.get("tag", name)) == digest(data)
        assert core.locate("tag", name).target == "array"
    # the array under the blobs loses a member: the blobs still read back
    arr = runtime.pools.by_name("arr")
    await arr.remove_member("800.0", True)  # type: ignore[union-attr]
    for name, data in blobs.items():
        assert await core.get("tag", name) == data


async def test_unregister_refused_when_the_rest_cannot_hold_the_blobs(runtime: Runtime) -> None:
    core = await make_core(runtime)
    await register(runtime, core, name="big", capacity="256K", bdev_type="ram")
    await register(runtime, core, name="small", capacity="16K", bdev_type="file")
    payload = {f"x{i}": os.urandom(20_000) for i in range(8)}
    for name, data in payload.items():
        await core.put("t", name, data)
    assert {core.locate("t", n).target for n in payload} == {"big"}
    pid = core.info.pool_id
    with pytest.raises(Conflict, match="cannot unregister target 'big': its 8 blobs"):
        await call_route(
            runtime, "rt_cte_core", "POST", f"{pid}/unregister_target", {"name": "big"}
        )
    assert "big" in core.targets
    assert not core.targets["big"].draining
    for name, data in payload.items():
        assert await core.get("t", name) == data
    with pytest.raises(BadRequest, match="missing name"):
        await call_route(runtime, "rt_cte_core", "POST", f"{pid}/unregister_target", {"name": ""})
    with pytest.raises(NotFound):
        await call_route(runtime, "rt_cte_core", "POST", f"{pid}/unregister_target", {"name": "zz"})


async def test_register_target_reports_every_bad_field(runtime: Runtime) -> None:
    core = await make_core(runtime)
    await register(runtime, core, name="t", capacity="64K")
    with pytest.raises(ValidationFailed) as info:
        await register(runtime, core, name="t", capacity="0", bdev_type="tape")
    assert info.value.errors == {
        "name": "a target named 't' exists already",
        "bdev_type": "unknown type 'tape' (use one of: ram, file, hbm, pinned, noop)",
        "capacity": "must be > 0",
    }
    with pytest.raises(ValidationFailed) as info:
        await register(runtime, core, name="", attach_pool_id=str(core.info.pool_id))
    assert info.value.errors == {
        "name": "required",
        "attach_pool_id": "a core cannot be its own target",
    }
    with pytest.raises(ValidationFailed) as info:
        await register(runtime, core, name="u", attach_pool_id="900.0")
    assert info.value.errors == {"attach_pool_id": "pool 900.0 is target 't' already"}


async def test_monitor_queries_put_and_get(runtime: Runtime) -> None:
    core = await make_core(runtime)
    await register(runtime, core, name="t", capacity="64K")
    put = await core.monitor("put:photos/cat:5000", {})
    got = await core.monitor("get:photos/cat", {})
    assert put["sha256"] == got["sha256"]
    assert got["size"] == 5000
    assert (await core.monitor("del:photos/cat", {}))["ok"] is True
    with pytest.raises(NotFound):
        await core.monitor("get:photos/cat", {})


async def test_destroy_leaves_periodic_tasks_retrying(runtime: Runtime) -> None:
    for i in range(3):
        await runtime.compose("rt_bdev", f"m{i}", f"80{i}.0", {"capacity": "64K"})
    cfg = {"members": "m0,m1", "max_failures": 1, "recover_period_s": 0.02, "scrub_period_s": 0.02}
    await runtime.compose("rt_safe_bdev", "arr", "850.0", cfg)
    await runtime.compose("rt_cte_core", "core", "700.0", {"rescore_period_s": 0.02})
    bdev = runtime.pools.by_name("m2")
    assert bdev is not None

    def totals() -> tuple[int, int]:
        rows = runtime.workers.snapshot()
        return sum(r["num_periodic_tasks"] for r in rows), sum(r["num_retry_tasks"] for r in rows)

    assert totals() == (3, 0)
    await runtime.destroy("850.0")
    await runtime.destroy("700.0")
    await wait_for_async(
        "the periodic tasks to become retries", totals, until=lambda t: t == (0, 3), timeout=10
    )
    # nothing else broken: other pools still work, ids are free again
    await bdev.write(0, b"still here")  # type: ignore[attr-defined]
    assert await bdev.read(0, 10) == b"still here"  # type: ignore[attr-defined]
    await runtime.compose("rt_safe_bdev", "arr2", "850.0", {"members": "m2", "max_failures": 0})
    assert runtime.admin_monitor("workers", {})["workers"]
