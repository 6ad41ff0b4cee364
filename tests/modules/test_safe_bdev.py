"""rt_safe_bdev: data survives a faulty member, replacement and recovery; verify; the form."""

from __future__ import annotations

import os

import pytest
from storage_helpers import call_route, digest, make_array, member_ids

from cluster.ground.errors import Conflict, ValidationFailed
from cluster.runtime import Runtime
from tests.support import wait_for_async


@pytest.mark.parametrize(("data", "parity"), [(3, 1), (3, 2), (2, 1), (4, 3)])
async def test_data_survives_faulty_members_replace_and_recovery(
    runtime: Runtime, data: int, parity: int
) -> None:
    array = await make_array(runtime, data, parity)
    stats = array.stats()
    assert (stats["data_count"], stats["parity_level"]) == (data, parity)
    payload = os.urandom(200_000)
    await array.write(1000, payload)
    before = digest(await array.read(1000, len(payload)))
    assert before == digest(payload)

    failed = member_ids(array, "data")[:parity]
    for pool_id in failed:
        body = await call_route(
            runtime, "rt_safe_bdev", "POST", f"{array.info.pool_id}/remove_member",
            {"member_pool_id": pool_id, "was_faulty": "1"},
        )  # fmt: skip
        assert body == {"ok": True, "member_pool_id": pool_id}
    assert array.stats()["faulty_members"] == parity
    assert digest(await array.read(1000, len(payload))) == before, "reconstructed around faults"
    with pytest.raises(Conflict, match="tolerates"):
        await array.remove_member(member_ids(array, "parity")[0], True)

    for i, pool_id in enumerate(failed):
        body = await call_route(
            runtime, "rt_safe_bdev", "POST", f"{array.info.pool_id}/replace_member",
            {"failed_pool_id": pool_id, "member_name": f"fresh{i}", "capacity": "256K",
             "bdev_type": "ram"},
        )  # fmt: skip
        assert list(body) == ["ok", "failed_pool_id", "member_name", "member_pool_id"]
    await wait_for_async(
        "every member active",
        lambda: [m["state"] for m in array.stats()["members"]],
        until=lambda states: set(states) == {"active"},
        timeout=10,
    )
    stats = array.stats()
    assert stats["recovery_ops_total"] == stats["total_slots"] > stats["written_slots"] > 0
    assert stats["recovery_ops_completed"] == stats["recovery_ops_total"]
    assert stats["recovery_ops_remaining"] == 0
    assert stats["recovery_ops_in_flight"] == 0
    assert stats["dirty_slots"] == 0
    assert await array.verify() == {
        "slots_checked": stats["total_slots"], "unreadable_slots": 0, "parity_mismatches": 0,
    }  # fmt: skip
    # the rebuilt members alone hold the data now: fail every original parity member too
    for pool_id in member_ids(array, "parity"):
        await array.remove_member(pool_id, True)
    assert digest(await array.read(1000, len(payload))) == before


async def test_verify_finds_a_planted_corruption(runtime: Runtime) -> None:
    array = await make_array(runtime, 3, 1)
    await array.write(0, os.urandom(50_000))
    assert (await array.verify())["parity_mismatches"] == 0
    member = array.array.member(1) if array.array else None
    assert member is not None
    device = runtime.pools.get(member.pool_id)
    await device.write(member.base + 2 * array.chunk, b"\xff" * 16)  # type: ignore[attr-defined]
    result = await array.verify()
    assert result == {
        "slots_checked": array.stats()["total_slots"],
        "unreadable_slots": 0,
        "parity_mismatches": 1,
    }
    assert array.stats()["dirty_slots"] == 1


async def test_add_parity_member_raises_level_and_recovers(runtime: Runtime) -> None:
    array = await make_array(runtime, 2, 1)
    payload = os.urandom(30_000)
    await array.write(0, payload)
    body = await call_route(
        runtime, "rt_safe_bdev", "POST", f"{array.info.pool_id}/add_member",
        {"member_name": "extra", "capacity": "256K", "bdev_type": "ram", "as_parity": "1"},
    )  # fmt: skip
    assert list(body) == ["ok", "member_name", "member_pool_id", "as_parity"]
    assert body["as_parity"] is True
    await wait_for_async(
        "every member active",
        lambda: [m["state"] for m in array.stats()["members"]],
        until=lambda states: set(states) == {"active"},
        timeout=10,
    )
    assert array.stats()["parity_level"] == 2
    for pool_id in member_ids(array, "data"):
        await array.remove_member(pool_id, True)
    assert await array.read(0, len(payload)) == payload


async def test_member_route_errors(runtime: Runtime) -> None:
    array = await make_array(runtime, 2, 1)
    pid = array.info.pool_id
    with pytest.raises(ValidationFailed) as info:
        await call_route(
            runtime, "rt_safe_bdev", "POST", f"{pid}/add_member",
            {"member_name": "nope", "capacity": "7Q", "bdev_type": "tape", "node_id": "x5"},
        )  # fmt: skip
    assert info.value.errors == {
        "node_id": "not a node id: 'x5'",
        "bdev_type": "member bdevs here are 'file' or 'ram'",
        "capacity": "unparseable size '7Q'",
    }
    with pytest.raises(ValidationFailed) as info:
        await call_route(
            runtime, "rt_safe_bdev", "POST", f"{pid}/add_member",
            {"member_name": "m", "node_id": "5"},
        )  # fmt: skip
    assert info.value.errors == {"node_id": "node 5 is not in the host table"}
    with pytest.raises(ValidationFailed) as info:
        await call_route(
            runtime, "rt_safe_bdev", "POST", f"{pid}/add_member", {"member_name": "nope"}
        )
    assert info.value.errors == {
        "member_name": "no pool named 'nope' exists; give a capacity to create it here"
    }
    with pytest.raises(ValidationFailed) as info:
        await call_route(
            runtime, "rt_safe_bdev", "POST", f"{pid}/add_member", {"member_name": "arr_d0"}
        )
    assert info.value.errors == {"member_name": "'arr_d0' is a member of array 'arr' already"}
    with pytest.raises(ValidationFailed) as info:
        await call_route(
            runtime, "rt_safe_bdev", "POST", f"{pid}/replace_member", {"failed_pool_id": "9.9"}
        )
    assert info.value.errors == {"failed_pool_id": "no member with pool id 9.9 in array arr"}
    with pytest.raises(Exception, match="bad member_pool_id 'x'"):
        await call_route(
            runtime, "rt_safe_bdev", "POST", f"{pid}/remove_member", {"member_pool_id": "x"}
        )


async def test_create_form_reports_every_bad_field(runtime: Runtime) -> None:
    spec = await call_route(runtime, "rt_safe_bdev", "GET", "create")
    fields = {f["name"]: f for f in spec["fields"]}  # type: ignore[index, union-attr]
    assert list(fields) == ["pool_name", "pool_id", "max_failures", "members"]
    assert fields["pool_id"]["default"] == "850.0"
    assert fields["max_failures"]["default"] == "1"
    await runtime.compose("rt_cte_core", "core", "700.0", {})
    await runtime.compose("rt_bdev", "b0", "800.0", {"capacity": "64K"})
    bad = {"pool_name": "", "pool_id": "nope", "max_failures": "x", "members": "ghost, core"}
    with pytest.raises(ValidationFailed) as info:
        await call_route(runtime, "rt_safe_bdev", "POST", "create", bad)
    assert info.value.errors == {
        "pool_name": "required",
        "pool_id": "bad pool id 'nope': expected <int>.<int>, e.g. 800.0",
        "max_failures": "must be a whole number from 0 to 64",
        "members": "no pool named 'ghost' exists; 'core' exists but is not a rt_bdev pool",
    }
    with pytest.raises(ValidationFailed) as info:
        await call_route(
            runtime, "rt_safe_bdev", "POST", "create", {"pool_name": "a", "pool_id": "851.0"}
        )
    assert info.value.errors == {"members": "at least one existing bdev pool name is required"}
    params = {"pool_name": "a", "pool_id": "851.0", "members": "b0", "max_failures": "1"}
    with pytest.raises(ValidationFailed) as info:
        await call_route(runtime, "rt_safe_bdev", "POST", "create", params)
    assert info.value.errors == {"max_failures": "needs more data members than tolerated failures"}
    params = {
        "pool_name": "a",
        "pool_id": "851.0",
        "members": "b0",
        "max_failures": "0",
        "action": "validate",
    }
    assert await call_route(runtime, "rt_safe_bdev", "POST", "create", params) == {"ok": True}
