"""Members made on peers from a capacity, and given back with the array (``rt_safe_bdev.devices``
rules 1, 4 and 5, ``remote`` rule 6), on runtimes of four nodes linked in one loop: the array
``arr`` lives on node 0 over ``m1`` on node 1 and ``m2`` on node 2, its parity made on node 0;
node 3 holds none of it."""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing
from storage_helpers import call_route, digest

from cluster.ground.errors import Conflict, ValidationFailed
from cluster.modules.rt_bdev import BdevContainer
from cluster.modules.rt_safe_bdev import SafeBdevContainer
from cluster.runtime import Runtime
from tests.support import wait_for_async
from tests.support.linked import Linked, linked_runtimes

ARRAY = "950.0"
CAPACITY = "256K"  # each member's device; the array needs 256 KiB on each


async def make_array(nodes: Linked, **more: Any) -> SafeBdevContainer:
    """m1 (900.0) on node 1, m2 (901.0) on node 2, the array on node 0 with one parity member
    it makes there (902.0: no member has it)."""
    for node_id, name in ((1, "m1"), (2, "m2")):
        await nodes[node_id].compose(
            "rt_bdev", name, f"90{node_id - 1}.0", {"bdev_type": "ram", "capacity": CAPACITY}
        )
    config = {"members": "m1@1,m2@2", "max_failures": 1, "recover_pace_s": 0, **more}
    await nodes[0].compose("rt_safe_bdev", "arr", ARRAY, config)
    array = nodes[0].pools.by_name("arr")
    assert isinstance(array, SafeBdevContainer)
    return array


async def route(nodes: Linked, name: str, **params: str) -> dict[str, Any]:
    return await call_route(nodes[0], "rt_safe_bdev", "POST", f"{ARRAY}/{name}", params)


def members(array: SafeBdevContainer) -> list[tuple[str, int, str]]:
    return [(m["pool_name"], m["node_id"], m["state"]) for m in array.stats()["members"]]


async def wait_complete(array: SafeBdevContainer) -> None:
    await wait_for_async(
        "every member active and the recovery complete",
        array.stats,
        until=lambda s: (
            s["active_members"] == len(s["members"]) and s["recovery_state"] in ("complete", "idle")
        ),
        timeout=30,
    )


def made_on(node: Runtime, writer: str) -> list[str]:
    """Names of the rt_bdev pools on ``node`` made for the array ``writer`` names."""
    return [
        c.info.pool_name
        for c in node.pools.of_module("rt_bdev")
        if isinstance(c, BdevContainer) and c.made_for == writer
    ]


def asked(nodes: Linked, node_id: int, op: str | None = None) -> list[dict[str, Any]]:
    """What node 0 asked of node ``node_id`` (block calls of ``op`` only, when given)."""
    return [
        r
        for n, r in nodes.peers[0].calls
        if n == node_id and (op is None or (r.get("k") == "block" and r.get("op") == op))
    ]


async def test_a_replacement_on_a_peer_with_a_capacity_is_made_there_and_recovers(
    tmp_path: Path,
) -> None:
    async with linked_runtimes(tmp_path, 4) as nodes:
        await nodes[3].compose("rt_bdev", "other", "900.0", {"capacity": "64K"})
        array = await make_array(nodes)
        payload = os.urandom(100_000)
        await array.write(0, payload)
        await route(nodes, "remove_member", member_pool_id="901.0", was_faulty="1")

        body = await route(
            nodes,
            "replace_member",
            failed_pool_id="901.0",
            member_name="sb_r2",
            capacity=CAPACITY,
            node_id="3",
        )
        made = nodes[3].pools.by_name("sb_r2")
        assert isinstance(made, BdevContainer)
        assert (made.made_for, made.bdev_type) == (array.devices.writer, "file")
        # 900.0 is node 3's own, 900.0 to 902.0 are members: the first id neither has
        assert body["member_pool_id"] == str(made.info.pool_id) == "903.0"
        await wait_complete(array)
        assert members(array) == [
            ("m1", 1, "active"),
            ("sb_r2", 3, "active"),
            ("arr_p0", 0, "active"),
        ]
        assert digest(await array.read(0, len(payload))) == digest(payload)
        assert (await array.verify())["parity_mismatches"] == 0
        assert not made.unused  # the array's region

        await nodes[0].destroy(ARRAY)
        assert [p["pool_name"] for p in nodes[3].pools_json()["pools"]] == ["rt_admin", "other"]
        for node_id, name in ((1, "m1"), (2, "m2")):  # found by name: they stay, freed
            found = nodes[node_id].pools.by_name(name)
            assert isinstance(found, BdevContainer)
            assert found.unused
            assert not found.closed


async def test_a_parity_member_added_on_a_peer_is_made_there_and_given_back(
    tmp_path: Path,
) -> None:
    async with linked_runtimes(tmp_path, 4) as nodes:
        array = await make_array(nodes)
        payload = os.urandom(60_000)
        await array.write(0, payload)
        body = await route(
            nodes,
            "add_member",
            member_name="sb_p1",
            capacity=CAPACITY,
            bdev_type="ram",
            node_id="3",
            as_parity="1",
        )
        assert body["member_name"] == "sb_p1"
        assert made_on(nodes[3], array.devices.writer) == ["sb_p1"]
        await wait_complete(array)
        assert array.stats()["parity_level"] == 2
        assert members(array)[-1] == ("sb_p1", 3, "active")
        assert (await array.verify())["unreadable_slots"] == 0

        await nodes[0].destroy(ARRAY)
        assert nodes[3].pools.by_name("sb_p1") is None
        assert asked(nodes, 3, "destroy")[0]["writer"] == array.devices.writer
        assert nodes[0].pools.by_name("arr_p0") is None  # made here: gone as before


async def test_a_member_on_a_peer_that_has_its_name_is_found_there_and_stays(
    tmp_path: Path,
) -> None:
    async with linked_runtimes(tmp_path, 4) as nodes:
        await make_array(nodes)
        await nodes[3].compose("rt_bdev", "sb_p1", "910.0", {"capacity": CAPACITY})
        await route(
            nodes, "add_member", member_name="sb_p1", capacity="999G", node_id="3", as_parity="1"
        )
        assert asked(nodes, 3, "info")[0]["pool"] == "sb_p1"  # found by name, none composed
        assert not [r for _, r in nodes.peers[0].calls if r.get("op") == "compose"]
        await nodes[0].destroy(ARRAY)
        found = nodes[3].pools.by_name("sb_p1")
        assert isinstance(found, BdevContainer)
        assert found.unused
        assert not asked(nodes, 3, "destroy")


async def test_a_refused_change_gives_back_the_device_it_made_on_the_peer(tmp_path: Path) -> None:
    async with linked_runtimes(tmp_path, 4) as nodes:
        array = await make_array(nodes)
        stripe = array.array
        assert stripe is not None
        claim = array.claim

        async def claim_then_fail(bdev: Any, slots: int) -> Any:  # a member fails meanwhile
            member = await claim(bdev, slots)
            stripe._fail(0, OSError("disk gone while preparing"))
            return member

        array.claim = claim_then_fail  # type: ignore[method-assign]
        with pytest.raises(Conflict, match="tolerates 1"):
            await route(
                nodes,
                "replace_member",
                failed_pool_id="901.0",
                member_name="n0",
                capacity=CAPACITY,
                node_id="3",
            )
        assert nodes[3].pools.by_name("n0") is None, "the device made for it is gone again"
        assert asked(nodes, 3, "destroy")[0]["writer"] == array.devices.writer
        assert [m[0] for m in members(array)] == ["m1", "m2", "arr_p0"]
        assert array.devices.made == {}


@pytest.mark.parametrize(
    ("params", "fields"),
    [
        ({"capacity": "lots", "bdev_type": "noop"}, {"capacity", "bdev_type"}),
        ({"capacity": "4K"}, {"capacity"}),  # smaller than the array needs
        ({"capacity": " 256K"}, {"capacity"}),
        ({"capacity": "0", "bdev_type": "hbm"}, {"capacity", "bdev_type"}),
        ({"capacity": "256K", "member_name": "a,b"}, {"member_name"}),
        ({"capacity": "lots", "member_name": " n"}, {"member_name", "capacity"}),
        ({"capacity": "256K", "node_id": "7"}, {"node_id"}),  # not in the host table
    ],
)
async def test_bad_fields_of_a_member_made_on_a_peer_are_refused_together_before_it_is_asked(
    tmp_path: Path, params: dict[str, str], fields: set[str]
) -> None:
    async with linked_runtimes(tmp_path, 4) as nodes:
        await make_array(nodes)
        before = nodes[3].pools_json()
        with pytest.raises(ValidationFailed) as info:
            await route(
                nodes,
                "add_member",
                **{"member_name": "n", "node_id": "3", "as_parity": "1", **params},
            )
        assert info.value.status == 400
        assert set(info.value.errors) == fields, info.value.errors
        assert asked(nodes, 3) == []
        assert asked(nodes, 7) == []
        assert nodes[3].pools_json() == before


async def test_without_a_capacity_a_name_the_peer_lacks_is_refused(tmp_path: Path) -> None:
    async with linked_runtimes(tmp_path, 4) as nodes:
        await make_array(nodes)
        with pytest.raises(ValidationFailed) as info:
            await route(nodes, "add_member", member_name="sb_r2", node_id="3", as_parity="1")
        assert info.value.errors == {
            "member_name": "no pool named 'sb_r2' exists on node 3; give a capacity to create "
            "it there"
        }
        assert nodes[3].pools.by_name("sb_r2") is None


async def test_a_spare_made_on_a_peer_by_auto_replace_is_destroyed_with_the_array(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    async with linked_runtimes(tmp_path, 4) as nodes:
        array = await make_array(nodes, auto_replace_after_s=1)
        payload = os.urandom(60_000)
        await array.write(0, payload)
        nodes[0].membership.change(2, "dead")  # type: ignore[attr-defined]
        nodes.peers[0].refuse(2)
        await wait_for_async(
            "m2 replaced on node 3 and rebuilt",
            lambda: members(array),
            until=lambda ms: (
                [(m[1], m[2]) for m in ms] == [(1, "active"), (3, "active"), (0, "active")]
            ),
            timeout=60,
        )
        spares = [c.info.pool_name for c in nodes[3].pools.of_module("rt_bdev")]
        assert spares == ["arr_r1_1"]
        assert digest(await array.read(0, len(payload))) == digest(payload)

        await nodes[0].destroy(ARRAY)
        assert nodes[3].pools.of_module("rt_bdev") == []
        assert nodes[1].pools.by_name("m1").unused  # type: ignore[union-attr]


async def test_a_silent_peer_keeps_the_device_and_the_array_is_destroyed_within_the_bound(
    tmp_path: Path, autojump_clock: trio.testing.MockClock, caplog: pytest.LogCaptureFixture
) -> None:
    async with linked_runtimes(tmp_path, 4) as nodes:
        array = await make_array(nodes)
        await route(
            nodes, "add_member", member_name="sb_p1", capacity=CAPACITY, node_id="3", as_parity="1"
        )
        await wait_complete(array)
        nodes.peers[0].hang(3)
        caplog.set_level(logging.WARNING)
        started = trio.current_time()
        await nodes[0].destroy(ARRAY)
        # one bound for the free of its region; no destroy asked of a device still in use
        assert trio.current_time() - started == pytest.approx(nodes.peers[0].timeout)
        assert not asked(nodes, 3, "destroy")
        assert nodes[0].pools.by_name("arr") is None
        assert nodes[3].pools.by_name("sb_p1") is not None
        assert (
            "array arr: device 903.0 stays on node 3: a region of the array there could not be "
            "freed" in caplog.text
        )


async def test_a_dead_peer_keeps_the_device_and_is_not_asked(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    async with linked_runtimes(tmp_path, 4) as nodes:
        array = await make_array(nodes)
        await route(
            nodes, "add_member", member_name="sb_p1", capacity=CAPACITY, node_id="3", as_parity="1"
        )
        await wait_complete(array)
        nodes[0].membership.change(3, "dead")  # type: ignore[attr-defined]
        caplog.set_level(logging.WARNING)
        calls = len(asked(nodes, 3))
        await nodes[0].destroy(ARRAY)
        assert len(asked(nodes, 3)) == calls + 1  # the free of its region, no destroy
        assert "array arr: device 903.0 stays on node 3: node 3 is dead" in caplog.text
        assert nodes[3].pools.by_name("sb_p1") is not None
