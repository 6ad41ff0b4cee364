"""rt_safe_bdev member operations sent together: one at a time per array, never below parity."""

from __future__ import annotations

import os
from typing import Any

import trio
from storage_helpers import call_route, digest, make_array, member_ids

from cluster.ground.errors import ApiError, Conflict
from cluster.modules.rt_safe_bdev import SafeBdevContainer
from cluster.runtime import Runtime
from tests.support import wait_for_async


async def together(
    runtime: Runtime, array: SafeBdevContainer, calls: list[tuple[str, dict[str, str]]]
) -> list[Any]:
    """Send every ``(route, params)`` of ``calls`` at once; each outcome is a body or an error."""
    outcomes: list[Any] = [None] * len(calls)

    async def one(i: int, route: str, params: dict[str, str]) -> None:
        try:
            outcomes[i] = await call_route(
                runtime, "rt_safe_bdev", "POST", f"{array.info.pool_id}/{route}", params
            )
        except ApiError as exc:
            outcomes[i] = exc

    async with trio.open_nursery() as nursery:
        for i, (route, params) in enumerate(calls):
            nursery.start_soon(one, i, route, params)
    return outcomes


async def wait_all_active(array: SafeBdevContainer) -> None:
    await wait_for_async(
        "every member active",
        lambda: [m["state"] for m in array.stats()["members"]],
        until=lambda states: set(states) == {"active"},
        timeout=30,
    )


async def test_two_replacements_sent_together_keep_every_block(runtime: Runtime) -> None:
    array = await make_array(runtime, 3, 1)
    payload = os.urandom(150_000)
    await array.write(0, payload)
    pools_before = len(runtime.pools)
    first, second = member_ids(array, "data")[:2]
    replace = [
        ("replace_member", {"failed_pool_id": first, "member_name": "new_a", "capacity": "256K"}),
        ("replace_member", {"failed_pool_id": second, "member_name": "new_b", "capacity": "256K"}),
    ]
    outcomes = await together(runtime, array, replace)
    ok = [o for o in outcomes if isinstance(o, dict)]
    refused = [o for o in outcomes if isinstance(o, Conflict)]
    assert (len(ok), len(refused)) == (1, 1), outcomes
    assert refused[0].status == 409
    assert "in progress" in refused[0].message
    assert len(runtime.pools) == pools_before + 1, "the refused request created no device"
    await wait_all_active(array)
    assert digest(await array.read(0, len(payload))) == digest(payload)
    assert (await array.verify())["unreadable_slots"] == 0
    # the other member can be replaced now, one after the other
    await call_route(runtime, "rt_safe_bdev", "POST", f"{array.info.pool_id}/replace_member",
                     replace[outcomes.index(refused[0])][1])  # fmt: skip
    await wait_all_active(array)
    assert digest(await array.read(0, len(payload))) == digest(payload)


async def test_every_member_change_is_refused_while_one_is_in_progress(runtime: Runtime) -> None:
    array = await make_array(runtime, 3, 1)
    payload = os.urandom(60_000)
    await array.write(0, payload)
    data = member_ids(array, "data")
    claim, release = array.claim, trio.Event()

    async def held_claim(bdev: Any, slots: int) -> Any:  # the replacement waits here
        await release.wait()
        return await claim(bdev, slots)

    array.claim = held_claim  # type: ignore[method-assign]
    route = f"{array.info.pool_id}/replace_member"
    replacement = {"failed_pool_id": data[0], "member_name": "n0", "capacity": "256K"}
    async with trio.open_nursery() as nursery:
        nursery.start_soon(call_route, runtime, "rt_safe_bdev", "POST", route, replacement)
        await wait_for_async("the replacement to start", lambda: runtime.pools.by_name("n0"))
        outcomes = await together(runtime, array, [
            ("remove_member", {"member_pool_id": data[1], "was_faulty": "1"}),
            ("add_member", {"member_name": "n1", "capacity": "256K", "as_parity": "1"}),
            ("replace_member", {**replacement, "member_name": "n2"}),
            ("replace_member", {"failed_pool_id": data[2], "member_name": "n3",
                                "capacity": "256K"}),
        ])  # fmt: skip
        for outcome in outcomes:
            assert isinstance(outcome, Conflict), outcomes
            assert "replace_member of " + data[0] + " is in progress" in outcome.message
        assert [runtime.pools.by_name(n) for n in ("n1", "n2", "n3")] == [None] * 3
        release.set()
    await wait_all_active(array)
    assert digest(await array.read(0, len(payload))) == digest(payload)
    assert array.stats()["faulty_members"] == 0


async def test_a_replacement_never_drops_below_parity(runtime: Runtime) -> None:
    """A member that fails while a replacement is being prepared makes the replacement refuse
    (and undo what it made) instead of leaving two positions out of a 1-parity array."""
    array = await make_array(runtime, 3, 1)
    payload = os.urandom(60_000)
    await array.write(0, payload)
    data = member_ids(array, "data")
    stripe = array.array
    assert stripe is not None
    claim = array.claim

    async def claim_then_fail(bdev: Any, slots: int) -> Any:
        member = await claim(bdev, slots)
        position = stripe.position_of(runtime.pools.by_name("arr_d1").info.pool_id)  # type: ignore[union-attr]
        assert position is not None
        stripe._fail(position, OSError("disk gone while preparing"))
        return member

    array.claim = claim_then_fail  # type: ignore[method-assign]
    pools_before = len(runtime.pools)
    outcomes = await together(
        runtime,
        array,
        [("replace_member", {"failed_pool_id": data[0], "member_name": "n0", "capacity": "256K"})],
    )
    assert isinstance(outcomes[0], Conflict), outcomes
    assert "tolerates 1" in outcomes[0].message
    assert len(runtime.pools) == pools_before, "the device made for it is gone again"
    assert stripe.out_of_service() == 1
    assert digest(await array.read(0, len(payload))) == digest(payload)
