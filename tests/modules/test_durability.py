"""The durability check of an array (``rt_safe_bdev.ledger``): acknowledged writes read back,
a corrupted record is named, bad fields are 400s that write nothing."""

from __future__ import annotations

import pytest
from storage_helpers import call_route, make_array

from cluster.ground.errors import BadRequest
from cluster.modules.rt_bdev import BdevContainer
from cluster.runtime import Runtime


async def durability(runtime: Runtime, pool: str, **form: str) -> dict[str, object]:
    return await call_route(runtime, "rt_safe_bdev", "POST", f"{pool}/durability", form)


async def test_acknowledged_writes_read_back_and_a_corrupted_one_is_named(
    runtime: Runtime,
) -> None:
    array = await make_array(runtime, 2, 1)
    pool = str(array.info.pool_id)
    wrote = await durability(runtime, pool, op="write", count="6", size="5000", seed="4")
    assert wrote == {"acknowledged": 6, "failed": 0, "records": 6}
    assert await durability(runtime, pool, op="check") == {
        "checked": 6, "lost": [], "lost_count": 0
    }  # fmt: skip
    # flip one byte of the first record on its data member, behind the array's back
    member = runtime.pools.by_name("arr_d0")
    assert isinstance(member, BdevContainer)
    base = array.require_array().member(0).base
    byte = await member.read(base, 1)
    await member.write(base, bytes([byte[0] ^ 0xFF]))
    check = await durability(runtime, pool, op="check")
    assert check["lost_count"] == 1
    assert check["lost"] == [{"offset": 0, "size": 5000, "why": "reads back different bytes"}]


@pytest.mark.parametrize(
    ("form", "said"),
    [
        ({"op": "erase"}, "op is 'write' or 'check'"),
        ({"op": "write", "count": "0"}, "count: 1 to"),
        ({"op": "write", "count": "10001"}, "count: 1 to"),
        ({"op": "write", "size": "0"}, "size: 1 to"),
        ({"op": "write", "size": "1048577"}, "size: 1 to"),
        ({"op": "write", "size": "1e3"}, "size: expected an integer"),
        ({"op": "write", "seed": "-1"}, "seed: -1 is out of range"),
    ],
)
async def test_bad_durability_fields_are_400s_that_write_nothing(
    runtime: Runtime, form: dict[str, str], said: str
) -> None:
    array = await make_array(runtime, 2, 1)
    with pytest.raises(BadRequest, match=said):
        await durability(runtime, str(array.info.pool_id), **form)
    assert (await durability(runtime, str(array.info.pool_id), op="check"))["checked"] == 0
