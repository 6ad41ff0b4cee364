"""rt_bdev: real bytes, measured stats, the create form, migration state."""

from __future__ import annotations

import errno
import os
import shutil

import pytest
from storage_helpers import call_route

from cluster.ground.errors import ApiError, BadRequest, Conflict, NotFound, ValidationFailed
from cluster.modules.rt_bdev import BdevContainer
from cluster.runtime import Runtime
from cluster.storage import NoSpace

STATS_KEYS = [
    "pool_name", "bdev_type", "total_capacity", "remaining_capacity", "read_bandwidth_mbps",
    "write_bandwidth_mbps", "read_latency_us", "write_latency_us", "iops", "total_reads",
    "total_writes", "total_bytes_read", "total_bytes_written",
]  # fmt: skip


async def make(runtime: Runtime, name: str, bdev_type: str, capacity: str) -> BdevContainer:
    body = await runtime.compose(
        "rt_bdev",
        name,
        runtime.suggest_pool_id("rt_bdev"),
        {"bdev_type": bdev_type, "capacity": capacity},
    )
    container = runtime.pools.by_name(body["pool_name"])
    assert isinstance(container, BdevContainer)
    return container


@pytest.mark.parametrize("bdev_type", ["ram", "file", "hbm", "pinned"])
async def test_bytes_written_read_back(runtime: Runtime, bdev_type: str) -> None:
    dev = await make(runtime, "d", bdev_type, "1M")
    data = os.urandom(10000)
    extent = await dev.allocate(len(data))
    await dev.write(extent.offset, data)
    assert await dev.read(extent.offset, len(data)) == data
    stats = dev.stats()
    assert list(stats) == STATS_KEYS
    assert stats["total_capacity"] == 1 << 20
    assert stats["remaining_capacity"] == (1 << 20) - 12288
    assert stats["total_writes"] == 1
    assert stats["total_bytes_read"] == 10000
    assert stats["read_bandwidth_mbps"] > 0
    assert stats["write_latency_us"] > 0
    assert stats["iops"] > 0
    trained = {m["name"]: m for m in dev.cost.to_json()}
    assert trained["write"]["mape"] > 0, "the write went through the workers' cost model"
    if bdev_type == "file":
        assert (
            runtime.settings.data_dir / f"bdev-{dev.info.pool_id}.img"
        ).stat().st_size == 1 << 20
    await dev.free(extent)
    assert dev.stats()["remaining_capacity"] == 1 << 20


async def test_noop_discards_and_bounds_are_checked(runtime: Runtime) -> None:
    dev = await make(runtime, "n", "noop", "64K")
    await dev.write(0, b"x" * 100)
    assert await dev.read(0, 100) == bytes(100)
    with pytest.raises(BadRequest, match="outside"):
        await dev.read(65536 - 10, 100)
    with pytest.raises(NoSpace):
        await dev.allocate(1 << 20)


async def test_listed_as_block_device(runtime: Runtime) -> None:
    dev = await make(runtime, "b", "ram", "64K")
    devices = runtime.admin_monitor("bdevs", {})["devices"]
    assert devices == [{"pool_id": str(dev.info.pool_id), "stats": dev.stats()}]


async def test_create_form_reports_every_bad_field(runtime: Runtime) -> None:
    spec = await call_route(runtime, "rt_bdev", "GET", "create")
    assert [f["name"] for f in spec["fields"]] == ["pool_name", "pool_id", "bdev_type", "capacity"]  # type: ignore[index]
    bad = {"pool_name": "", "pool_id": "x", "bdev_type": "tape", "capacity": "12X"}
    with pytest.raises(ValidationFailed) as info:
        await call_route(runtime, "rt_bdev", "POST", "create", bad)
    assert info.value.errors == {
        "pool_name": "required",
        "pool_id": "bad pool id 'x': expected <int>.<int>, e.g. 800.0",
        "bdev_type": "unknown type 'tape' (use one of: ram, file, hbm, pinned, noop)",
        "capacity": "unparseable size '12X'",
    }
    with pytest.raises(ValidationFailed) as info:
        await call_route(
            runtime,
            "rt_bdev",
            "POST",
            "create",
            {"pool_name": "z", "pool_id": "0.0", "capacity": "0"},
        )
    assert info.value.errors == {"pool_id": "0.0 is the null pool id", "capacity": "must be > 0"}
    with pytest.raises(ValidationFailed) as info:
        await call_route(
            runtime, "rt_bdev", "POST", "create", {"pool_name": "z", "pool_id": "810.0"}
        )
    assert info.value.errors == {"capacity": "required (a size such as 16M, 512MB or 1GiB)"}


async def test_create_validate_then_create_and_list(runtime: Runtime) -> None:
    params = {
        "pool_name": "fast",
        "pool_id": "811.0",
        "bdev_type": "ram",
        "capacity": "1GiB",
        "action": "validate",
    }
    assert await call_route(runtime, "rt_bdev", "POST", "create", params) == {"ok": True}
    assert runtime.pools.by_name("fast") is None
    params.update(action="", capacity="512K")
    body = await call_route(runtime, "rt_bdev", "POST", "create", params)
    assert body == {"ok": True, "pool_name": "fast", "pool_id": "811.0"}
    assert await call_route(runtime, "rt_bdev", "GET", "pools") == {
        "pools": [{"pool_id": "811.0", "pool_name": "fast"}]
    }


async def test_export_import_carries_ram_data(runtime: Runtime) -> None:
    dev = await make(runtime, "src", "ram", "256K")
    extent = await dev.allocate(5000)
    data = os.urandom(5000)
    await dev.write(extent.offset, data)
    state = dev.export_state()
    await runtime.destroy(str(dev.info.pool_id))
    copy = await make(runtime, "dst", "ram", "256K")
    await copy.import_state(state)
    assert await copy.read(extent.offset, 5000) == data
    assert copy.stats()["remaining_capacity"] == dev.allocator.remaining


async def test_destroyed_device_refuses_io(runtime: Runtime) -> None:
    from cluster.ground.errors import PoolGone

    dev = await make(runtime, "gone", "ram", "64K")
    await runtime.destroy(str(dev.info.pool_id))
    with pytest.raises(PoolGone):
        await dev.write(0, b"x")
    with pytest.raises(NotFound, match=r"no rt_cte_core pool with id 800\.0"):
        await call_route(runtime, "rt_cte_core", "GET", "800.0/targets")
    with pytest.raises(BadRequest, match="bad pool id"):
        await call_route(runtime, "rt_cte_core", "GET", "8x/targets")


async def test_a_file_device_larger_than_the_free_space_is_refused(runtime: Runtime) -> None:
    free = shutil.disk_usage(runtime.settings.data_dir.parent).free
    for capacity in ("1P", "1000000000000000", str(free + (1 << 30))):
        with pytest.raises(ValidationFailed) as info:
            await runtime.compose(
                "rt_bdev", "huge", "810.0", {"bdev_type": "file", "capacity": capacity}
            )
        assert info.value.status == 400
        assert list(info.value.errors) == ["capacity"]
        assert "free space" in info.value.errors["capacity"]
    with pytest.raises(ValidationFailed, match="at most 1P"):
        await runtime.compose("rt_bdev", "huge", "810.0", {"bdev_type": "noop", "capacity": "2P"})
    assert runtime.pools.by_name("huge") is None
    assert not (runtime.settings.data_dir / "bdev-810.0.img").exists()


@pytest.mark.parametrize(
    ("error", "status", "field"),
    [(OSError(errno.EFBIG, "File too large"), 400, "capacity"),
     (OSError(errno.EACCES, "Permission denied"), 400, None),
     (OverflowError("cannot fit 'int' into an index-sized integer"), 400, "capacity")],
)  # fmt: skip
async def test_a_store_that_cannot_be_made_is_a_clear_refusal(
    runtime: Runtime,
    monkeypatch: pytest.MonkeyPatch,
    error: Exception,
    status: int,
    field: str | None,
) -> None:
    def fail(*args: object) -> None:
        raise error

    monkeypatch.setattr("cluster.modules.rt_bdev.open_store", fail)
    with pytest.raises(ApiError) as info:
        await runtime.compose("rt_bdev", "d", "810.0", {"bdev_type": "file", "capacity": "1M"})
    assert info.value.status == status
    if field is not None:
        assert isinstance(info.value, ValidationFailed)
        assert list(info.value.errors) == [field]
    assert runtime.pools.by_name("d") is None


async def test_a_failing_device_io_is_a_conflict_not_a_crash(runtime: Runtime) -> None:
    dev = await make(runtime, "f", "file", "64K")

    class Broken:
        capacity = 65536

        def read(self, offset: int, size: int) -> bytes:
            raise OSError(errno.EIO, "Input/output error")

        def write(self, offset: int, data: bytes) -> None:
            raise OSError(errno.ENOSPC, "No space left on device")

        def close(self) -> None:
            pass

    dev.store = Broken()
    with pytest.raises(Conflict, match="No space left on device"):
        await dev.write(0, b"x")
    with pytest.raises(Conflict, match="Input/output error"):
        await dev.read(0, 1)
