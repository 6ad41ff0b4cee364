"""A device lent to peers (``cluster.modules.remote``): fenced writes, and the operations a
peer's array uses, on an in-process runtime."""

from __future__ import annotations

import pytest

from cluster.ground.errors import BadRequest, Conflict, ValidationFailed
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


async def test_a_device_is_destroyed_only_for_the_array_it_was_made_for_once_free(
    runtime: Runtime,
) -> None:
    """``remote`` rule 6: a peer gives back only a device made for its own array, once nothing
    is allocated on it; every other ``destroy`` is refused and changes nothing."""
    await runtime.compose("rt_bdev", "made", "901.0", {"capacity": "64K", "made_for": "0/950.0/a"})
    plain = await lent(runtime)  # 900.0, made for no array

    async def destroy(pool: str, writer: str) -> object:
        return await runtime.local_block(BlockCall(pool, "destroy", writer=writer))

    def table() -> list[str]:
        return [p["pool_id"] for p in runtime.pools_json()["pools"]]

    before = table()
    for pool, writer in (
        ("901.0", "0/950.0/b"),
        ("901.0", ""),
        ("made", "0/950.0/A"),
        ("900.0", "0/950.0/a"),
        ("900.0", ""),
    ):
        with pytest.raises(Conflict, match="was not made for the array"):
            await destroy(pool, writer)
    region = await runtime.local_block(BlockCall("901.0", "allocate", size=4096, writer="x"))
    with pytest.raises(Conflict, match="holds allocations: it is in use and stays"):
        await destroy("901.0", "0/950.0/a")
    with pytest.raises(BadRequest, match="a writer is at most 128 characters, not 129"):
        await destroy("901.0", "w" * 129)
    assert table() == before
    assert not plain.closed
    await runtime.local_block(BlockCall("901.0", "free", region["offset"], region["size"]))
    assert await destroy("made", "0/950.0/a") == {"ok": True, "pool_id": "901.0"}
    assert table() == ["1.0", "900.0"]


@pytest.mark.parametrize(
    ("value", "why"),
    [
        ("", "1 to 128 characters"),
        ("w" * 129, "1 to 128 characters"),
        (7, "1 to 128 characters"),
        (["0/950.0/a"], "1 to 128 characters"),
        ("a b", "printable ASCII characters only, no space"),
        ("caf\u00e9", "printable ASCII characters only, no space"),
        ("a\x00b", "printable ASCII characters only, no space"),
    ],
)
async def test_made_for_names_a_writer_or_the_device_is_refused(
    runtime: Runtime, value: object, why: str
) -> None:
    with pytest.raises(ValidationFailed) as info:
        await runtime.compose("rt_bdev", "d", "900.0", {"capacity": "64K", "made_for": value})
    assert list(info.value.errors) == ["made_for"]
    assert why in info.value.errors["made_for"]
    assert runtime.pools.by_name("d") is None
    await runtime.compose("rt_bdev", "d", "900.0", {"capacity": "64K", "made_for": "0/9.0/f"})
    made = runtime.pools.by_name("d")
    assert isinstance(made, BdevContainer)
    assert made.made_for == "0/9.0/f"
