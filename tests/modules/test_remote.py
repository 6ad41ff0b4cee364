"""A device lent to peers (``cluster.modules.remote``): fenced writes, and the operations a
peer's array uses, on an in-process runtime."""

from __future__ import annotations

import pytest

from cluster.ground.errors import BadRequest, Conflict
from cluster.modules.rt_bdev import BdevContainer
from cluster.runtime import BlockCall, Runtime


async def lent(runtime: Runtime) -> BdevContainer:
    await runtime.compose("rt_bdev", "lent", "900.0", {"bdev_type": "ram", "capacity": "64K"})
    device = runtime.pools.by_name("lent")
    assert isinstance(device, BdevContainer)
    return device


async def test_a_write_below_its_writers_epoch_is_refused_and_changes_nothing(
    runtime: Runtime,
) -> None:
    await lent(runtime)

    async def call(op: str, **fields: object) -> object:
        return await runtime.local_block(BlockCall("900.0", op, **fields))  # type: ignore[arg-type]

    await call("write", offset=0, data=b"new!", writer="a", epoch=5)
    with pytest.raises(Conflict, match=r"a stale write of a \(epoch 3; it has written at 5"):
        await call("write", offset=0, data=b"old.", writer="a", epoch=3)
    assert await call("read", offset=0, size=4) == b"new!"
    await call("write", offset=0, data=b"bee!", writer="b", epoch=1)  # another writer's own
    # info raises the fence too: what was sent before the member came back is refused
    await call("info", writer="a", epoch=9)
    with pytest.raises(Conflict):
        await call("write", offset=8, data=b"late", writer="a", epoch=5)
    assert await call("read", offset=8, size=4) == bytes(4)
    await call("write", offset=8, data=b"ok..", writer="a", epoch=9)
    assert await call("read", offset=8, size=4) == b"ok.."


async def test_operations_are_found_by_name_and_checked(runtime: Runtime) -> None:
    device = await lent(runtime)
    info = await runtime.local_block(BlockCall("lent", "info"))
    assert info["pool_id"] == "900.0"
    assert info["instance"] == device.instance
    with pytest.raises(BadRequest, match="unknown block operation 'trim'"):
        await runtime.local_block(BlockCall("900.0", "trim"))
    with pytest.raises(BadRequest, match="is not a block device other nodes can use"):
        await runtime.local_block(BlockCall("1.0", "info"))
