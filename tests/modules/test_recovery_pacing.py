"""rt_safe_bdev recovery can be watched: it walks every slot of the array, paced slot by slot
(``recover_pace_s``), its figures in ``stats`` consistent at every moment (completed + in
flight + queued == total), one ``recovery_state``, a rate; pace 0 for tests and benchmarks."""

from __future__ import annotations

import os
from typing import Any

import pytest
from storage_helpers import call_route, make_array, member_ids

from cluster.ground.errors import ValidationFailed
from cluster.modules.members import MemberRequest
from cluster.modules.rt_safe_bdev import SafeBdevContainer
from cluster.modules.rt_safe_bdev.knobs import DEFAULT_PACE_S
from cluster.runtime import Runtime
from tests.support import wait_for_async

PACE_S = 0.02  # seconds per slot: the 64 slots of a test array take 1.3 s at least


def counts_add_up(s: dict[str, Any]) -> bool:
    parts = s["recovery_ops_completed"] + s["recovery_ops_in_flight"] + s["recovery_ops_queued"]
    return parts == s["recovery_ops_total"] and s["recovery_ops_remaining"] == (
        s["recovery_ops_total"] - s["recovery_ops_completed"]
    )


async def recovery_samples(array: SafeBdevContainer, interval: float) -> list[dict[str, Any]]:
    """``array.stats()`` every ``interval`` seconds until its recovery is complete (30 s at
    most), each sample's counts checked as it is taken; every sample, the complete one last."""
    seen: list[dict[str, Any]] = []

    def look() -> dict[str, Any]:
        s = array.stats()
        seen.append(s)
        assert counts_add_up(s), s  # not a "not yet": ends the wait at once
        return s

    await wait_for_async(
        f"the recovery of {array.info.pool_name} to complete",
        look,
        until=lambda s: s["recovery_state"] == "complete",
        timeout=30,
        interval=interval,
        retry_on=(),
    )
    return seen


async def degraded_array(runtime: Runtime, pace_s: float) -> tuple[SafeBdevContainer, str]:
    """A 3+1 array with data written over many slots and one data member failed."""
    array = await make_array(runtime, 3, 1)
    array.pace_s = pace_s
    await array.write(0, os.urandom(3 * 4096 * 20))  # 20 full stripes
    failed = member_ids(array, "data")[0]
    await call_route(
        runtime, "rt_safe_bdev", "POST", f"{array.info.pool_id}/remove_member",
        {"member_pool_id": failed, "was_faulty": "1"},
    )  # fmt: skip
    return array, failed


async def test_a_paced_recovery_is_seen_in_steps_with_consistent_figures(
    runtime: Runtime,
) -> None:
    array, failed = await degraded_array(runtime, PACE_S)
    s = array.stats()
    assert (s["recovery_state"], s["faulty_members"], s["active_members"]) == ("degraded", 1, 3)
    assert s["recovery_ops_total"] == 0
    assert counts_add_up(s)
    await call_route(
        runtime, "rt_safe_bdev", "POST", f"{array.info.pool_id}/replace_member",
        {"failed_pool_id": failed, "member_name": "fresh", "capacity": "256K", "bdev_type": "ram"},
    )  # fmt: skip
    assert array.stats()["recovery_state"] in ("starting", "recovering")
    seen = await recovery_samples(array, interval=0.01)
    s = seen[-1]
    running = [x for x in seen if x["recovery_state"] == "recovering"]
    partial = {x["recovery_ops_completed"] for x in running} - {0, s["recovery_ops_total"]}
    assert len(partial) >= 2, "progress was seen in steps, not all at once"
    assert all(x["recovery_ops_in_flight"] <= 1 for x in running), "paced: one slot at a time"
    assert any(x["recovery_eta_s"] is not None for x in running)
    # every slot is walked (the 20 written ones rebuilt), one pace each at least
    assert s["recovery_ops_completed"] == s["recovery_ops_total"] == s["total_slots"] == 64
    assert s["written_slots"] == 20
    assert s["recovery_rate_slots_per_s"] > 0
    assert s["recovery_elapsed_s"] >= 64 * PACE_S  # the pace is a floor, never a promise
    assert (s["recovery_eta_s"], s["active_members"], s["dirty_slots"]) == (None, 4, 0)


async def test_pace_zero_recovers_at_once_and_is_the_tests_setting(runtime: Runtime) -> None:
    array, failed = await degraded_array(runtime, 0.0)
    assert array.stats()["recovery_pace_s"] == 0.0
    await array.replace_member(failed, _request("fresh"))
    await wait_for_async(
        "recovery complete",
        lambda: array.stats()["recovery_state"],
        until=lambda state: state == "complete",
        timeout=10,
    )


def _request(name: str, capacity: str = "256K") -> MemberRequest:
    params = {"member_name": name, "capacity": capacity, "bdev_type": "ram"}
    return MemberRequest.from_params(params)


async def test_an_untouched_array_is_idle(runtime: Runtime) -> None:
    array = await make_array(runtime, 2, 1)
    s = array.stats()
    assert (s["recovery_state"], s["recovery_ops_total"], s["recovery_eta_s"]) == ("idle", 0, None)
    assert counts_add_up(s)


@pytest.mark.parametrize(
    ("value", "ok"),
    [(0, True), ("0", True), (0.5, True), ("1", True), (-1, False), (1.5, False),
     ("fast", False), (True, False), (None, False)],
)  # fmt: skip
async def test_recover_pace_is_checked(runtime: Runtime, value: Any, ok: bool) -> None:
    for i in range(3):
        await runtime.compose("rt_bdev", f"m{i}", f"80{i}.0", {"capacity": "64K"})
    config = {"members": "m0,m1", "parity_members": "m2", "recover_pace_s": value}
    if ok:
        await runtime.compose("rt_safe_bdev", "arr", "850.0", config)
        array = runtime.pools.by_name("arr")
        assert isinstance(array, SafeBdevContainer)
        assert array.pace_s == float(value)
        return
    with pytest.raises(ValidationFailed) as info:
        await runtime.compose("rt_safe_bdev", "arr", "850.0", config)
    assert list(info.value.errors) == ["recover_pace_s"]


async def test_the_create_form_leaves_the_default_pace(runtime: Runtime) -> None:
    for i in range(2):
        await runtime.compose("rt_bdev", f"m{i}", f"80{i}.0", {"capacity": "64K"})
    params = {"pool_name": "arr", "pool_id": "850.0", "members": "m0,m1"}
    await call_route(runtime, "rt_safe_bdev", "POST", "create", params)
    array = runtime.pools.by_name("arr")
    assert isinstance(array, SafeBdevContainer)
    assert array.pace_s == DEFAULT_PACE_S > 0


async def test_a_large_array_is_walked_in_at_most_100_steps(runtime: Runtime) -> None:
    for i in range(3):
        await runtime.compose("rt_bdev", f"m{i}", f"80{i}.0", {"capacity": "1M"})
    config = {"members": "m0,m1", "parity_members": "m2", "recover_pace_s": 0.01}
    await runtime.compose("rt_safe_bdev", "big", "850.0", config)
    array = runtime.pools.by_name("big")
    assert isinstance(array, SafeBdevContainer)
    payload = os.urandom(8192 * 10)
    await array.write(0, payload)
    total = array.stats()["total_slots"]
    assert total == 256  # 1M / 4K: steps of 3 slots, 86 steps
    failed = member_ids(array, "data")[1]
    await array.remove_member(failed, True)
    await array.replace_member(failed, _request("fresh", "1M"))
    *running, s = await recovery_samples(array, interval=0.005)
    seen = {x["recovery_ops_completed"] for x in running}
    assert all(c % 3 == 0 for c in seen), "whole steps of ceil(256 / 100) slots"
    assert len(seen) > 2
    assert s["recovery_elapsed_s"] >= 86 * 0.01
    await array.remove_member(member_ids(array, "data")[0], True)  # only the rebuilt one left
    assert await array.read(0, len(payload)) == payload
    assert (await array.verify())["parity_mismatches"] == 0
