"""Disk faults on an rt_bdev device (``cluster.modules.diskfaults``), in process: each
operation waits the latency on the trio clock, a share of reads and writes fail as a failed
I/O does (drawn from the device's own seeded generator), a full device refuses allocations
and writes past its present use, and clearing the fault restores it."""

from __future__ import annotations

import pytest
import trio
import trio.testing

from cluster.ground.errors import BadRequest, Conflict
from cluster.ground.parse import ParseError
from cluster.modules.rt_bdev import BdevContainer
from cluster.runtime import NO_DISK_FAULT, BlockCall, DiskFault, Runtime
from cluster.storage import NoSpace

EIO = "Input/output error"


async def device(runtime: Runtime, name: str = "d", pool_id: str = "900.0") -> BdevContainer:
    await runtime.compose("rt_bdev", name, pool_id, {"bdev_type": "ram", "capacity": "256K"})
    found = runtime.pools.by_name(name)
    assert isinstance(found, BdevContainer)
    return found


def test_a_fault_is_checked_when_it_is_made() -> None:
    assert not NO_DISK_FAULT.active
    fault = DiskFault(200, 10, full=True)
    assert fault.active
    assert fault.as_dict() == {"latency_ms": 200.0, "errors": 10.0, "full": True}
    for bad, message in (
        ({"latency_ms": -1}, r"latency_ms: -1 is out of range"),
        ({"latency_ms": 600_001}, r"latency_ms: 600001 is out of range"),
        ({"latency_ms": float("nan")}, r"latency_ms"),
        ({"errors": 100.5}, r"errors percent: 100\.5 is out of range"),
        ({"errors": True}, r"errors percent: expected a number"),
        ({"full": 1}, r"full: expected true or false"),
    ):
        with pytest.raises(ParseError, match=message):
            DiskFault(**bad)  # type: ignore[arg-type]


async def test_every_operation_waits_the_latency_on_the_trio_clock(
    runtime: Runtime, autojump_clock: trio.testing.MockClock
) -> None:
    dev = await device(runtime)
    dev.set_disk_fault(DiskFault(latency_ms=250))
    for op in ("allocate", "write", "read", "free"):
        start = trio.current_time()
        if op == "allocate":
            extent = await dev.allocate(8192)
        elif op == "write":
            await dev.write(extent.offset, b"x" * 8192)
        elif op == "read":
            assert await dev.read(extent.offset, 8192) == b"x" * 8192
        else:
            await dev.free(extent)
        assert trio.current_time() - start == pytest.approx(0.25), op
    dev.set_disk_fault(NO_DISK_FAULT)
    start = trio.current_time()
    await dev.write(0, b"y")
    assert trio.current_time() == start


async def test_errors_fail_that_share_of_reads_and_writes_as_a_failed_io(
    runtime: Runtime,
) -> None:
    dev = await device(runtime)
    await dev.write(0, b"kept")
    dev.set_disk_fault(DiskFault(errors=100))
    with pytest.raises(Conflict, match=rf"^write of block device 900\.0 failed: {EIO}$"):
        await dev.write(0, b"lost")
    with pytest.raises(Conflict, match=rf"^read of block device 900\.0 failed: {EIO}$"):
        await dev.read(0, 4)
    extent = await dev.allocate(4096)  # allocations do not fail: only reads and writes
    await dev.free(extent)
    dev.set_disk_fault(NO_DISK_FAULT)
    assert await dev.read(0, 4) == b"kept", "a refused write moved no byte"

    dev.set_disk_fault(DiskFault(errors=30))
    failed = 0
    for i in range(400):
        try:
            await dev.read(i * 64, 64)
        except Conflict:
            failed += 1
    assert 80 <= failed <= 160


async def test_the_draws_repeat_for_the_same_device(runtime: Runtime) -> None:
    """Seeded from the pool id: the same device fails the same operations."""

    async def pattern(dev: BdevContainer) -> list[bool]:
        dev.set_disk_fault(DiskFault(errors=50))
        out = []
        for _ in range(64):
            try:
                await dev.read(0, 16)
                out.append(True)
            except Conflict:
                out.append(False)
        return out

    first = await pattern(await device(runtime, "a", "900.0"))
    await runtime.destroy("900.0")
    again = await pattern(await device(runtime, "b", "900.0"))
    other = await pattern(await device(runtime, "c", "901.0"))
    assert first == again
    assert first != other
    assert 10 < first.count(False) < 54


async def test_a_full_device_refuses_allocations_and_writes_past_its_present_use(
    runtime: Runtime,
) -> None:
    dev = await device(runtime)
    held = await dev.allocate(64 * 1024)
    await dev.write(held.offset, b"a" * 10_000)  # blocks 0..2 written
    dev.set_disk_fault(DiskFault(full=True))
    with pytest.raises(NoSpace, match=r"block device 900\.0 is full") as info:
        await dev.allocate(4096)
    assert info.value.status == 409
    await dev.write(held.offset + 100, b"b" * 8000)  # a rewrite of blocks it holds goes on
    with pytest.raises(NoSpace, match=r"full \(4096 of 4096 bytes at 12288 past its present"):
        await dev.write(held.offset + 12288, b"c" * 4096)  # allocated, never written
    assert await dev.read(held.offset + 12288, 4) == bytes(4)
    dev.set_disk_fault(NO_DISK_FAULT)
    await dev.write(held.offset + 12288, b"c" * 4096)
    await dev.free(await dev.allocate(4096))


async def test_a_moved_device_holds_its_imported_bytes_as_its_present_use(
    runtime: Runtime,
) -> None:
    dev = await device(runtime)
    held = await dev.allocate(64 * 1024)
    await dev.write(held.offset, b"a" * 10_000)  # blocks 0..2
    spare = await dev.allocate(64 * 1024)  # allocated, never written: not in the state
    moved = await device(runtime, "moved", "901.0")
    await moved.import_state(dev.export_state())  # as a migration adopts it
    moved.set_disk_fault(DiskFault(full=True))
    await moved.write(held.offset + 100, b"b" * 8000)  # its imported blocks: a rewrite
    assert await moved.read(held.offset, 4) == b"aaaa"
    with pytest.raises(NoSpace, match=r"past its present"):
        await moved.write(spare.offset, b"c" * 4096)


async def test_a_peers_write_is_judged_against_its_fence_after_the_delay(
    runtime: Runtime, autojump_clock: trio.testing.MockClock
) -> None:
    """``remote`` rule 2 with a slow disk: a write that waited out its owner's bound, while
    the owner came back at a new epoch and wrote there, lands over nothing newer."""
    dev = await device(runtime)
    dev.set_disk_fault(DiskFault(latency_ms=6000))
    refused: list[BaseException] = []

    async def stale() -> None:
        call = BlockCall("900.0", "write", offset=0, data=b"old!", writer="w", epoch=1)
        try:
            await runtime.local_block(call)
        except Conflict as exc:
            refused.append(exc)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(stale)
        await trio.sleep(5)  # the owner gave up at its bound, came back at epoch 2
        dev.set_disk_fault(NO_DISK_FAULT)
        await runtime.local_block(BlockCall("900.0", "info", writer="w", epoch=2))
        await runtime.local_block(
            BlockCall("900.0", "write", offset=0, data=b"new!", writer="w", epoch=2)
        )
    assert [str(e) for e in refused] == [
        "a stale write of w (epoch 1; it has written at 2 since): refused"
    ]
    assert await dev.read(0, 4) == b"new!"


async def test_only_rt_bdev_devices_take_a_disk_fault(runtime: Runtime) -> None:
    admin = runtime.pools.by_name("rt_admin")
    assert admin is not None
    with pytest.raises(BadRequest, match=r"'rt_admin' \(rt_admin\) is not an rt_bdev device"):
        admin.set_disk_fault(DiskFault(errors=1))
    assert not admin.disk_fault.active
