"""An array whose members' disks fail, fill or slow down (``rt_safe_bdev.devices`` rule 3,
``diskfaults``), on runtimes of four nodes linked in one loop: ``arr`` on node 0 over ``m1``
on node 1 and ``m2`` on node 2 (data) and ``m3`` on node 3 (parity). A member whose device
fails is treated as one whose node is away: faulty, the array degraded, every acknowledged
write readable; once the device answers again it is resynchronised (only what it missed)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing
from storage_helpers import make_array as make_local_array

from cluster.modules.rt_bdev import BdevContainer
from cluster.modules.rt_safe_bdev import SafeBdevContainer
from cluster.runtime import NO_DISK_FAULT, DiskFault, Runtime
from tests.support import wait_for_async
from tests.support.linked import Linked, linked_runtimes

RECORD = 8192  # one stripe: 2 data members of 4 KiB chunks


async def make_array(nodes: Linked, **more: Any) -> SafeBdevContainer:
    for node_id in (1, 2, 3):
        await nodes[node_id].compose(
            "rt_bdev", f"m{node_id}", f"90{node_id}.0", {"bdev_type": "ram", "capacity": "256K"}
        )
    config = {"members": "m1@1,m2@2", "parity_members": "m3@3", "max_failures": 1}
    await nodes[0].compose("rt_safe_bdev", "arr", "950.0", {**config, "recover_pace_s": 0, **more})
    array = nodes[0].pools.by_name("arr")
    assert isinstance(array, SafeBdevContainer)
    return array


def disk(nodes: Linked, node_id: int) -> BdevContainer:
    found = nodes[node_id].pools.by_name(f"m{node_id}")
    assert isinstance(found, BdevContainer)
    return found


class Ledger:
    """The records the array acknowledged, by slot."""

    def __init__(self, array: SafeBdevContainer) -> None:
        self.array = array
        self.acked: dict[int, bytes] = {}

    async def write(self, slots: range) -> None:
        for slot in slots:
            data = os.urandom(RECORD)
            await self.array.write(slot * RECORD, data)  # raises when not acknowledged
            self.acked[slot] = data

    async def check(self) -> None:
        for slot, data in sorted(self.acked.items()):
            assert await self.array.read(slot * RECORD, RECORD) == data, f"slot {slot} lost"


def states(array: SafeBdevContainer) -> list[str]:
    return [m["state"] for m in array.stats()["members"]]


async def healthy(array: SafeBdevContainer) -> dict[str, Any]:
    stats: dict[str, Any] = await wait_for_async(
        "every member active and the recovery complete",
        array.stats,
        until=lambda s: s["active_members"] == 3 and s["recovery_state"] == "complete",
        timeout=60,
    )
    assert stats["dirty_slots"] == 0
    assert (await array.verify())["parity_mismatches"] == 0
    return stats


async def test_a_member_whose_disk_fails_is_faulty_then_resynchronised(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    async with linked_runtimes(tmp_path, 4) as nodes:
        array = await make_array(nodes)
        ledger = Ledger(array)
        await ledger.write(range(0, 10))
        disk(nodes, 2).set_disk_fault(DiskFault(errors=100))
        await ledger.write(range(10, 20))  # every one acknowledged: 2 of 3 members took it
        assert states(array) == ["active", "faulty", "active"]
        await trio.sleep(5)  # recover ticks try it again: it fails its probe, stays away
        stats = array.stats()
        assert (stats["recovery_state"], stats["faulty_members"]) == ("degraded", 1)
        await ledger.check()

        disk(nodes, 2).set_disk_fault(NO_DISK_FAULT)  # heal
        back = await healthy(array)
        assert [m["pool_name"] for m in back["members"]] == ["m1", "m2", "m3"]  # not replaced
        assert 0 < back["recovery_written_slots"] <= 10 < back["written_slots"]
        await ledger.check()
        await ledger.write(range(20, 24))
        assert states(array) == ["active", "active", "active"]


async def test_a_full_member_takes_rewrites_and_fails_on_new_blocks(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    async with linked_runtimes(tmp_path, 4) as nodes:
        array = await make_array(nodes)
        ledger = Ledger(array)
        await ledger.write(range(0, 8))
        disk(nodes, 1).set_disk_fault(DiskFault(full=True))
        await ledger.write(range(0, 2))  # rewrites of slots it holds: it takes them
        assert states(array) == ["active", "active", "active"]
        await ledger.write(range(8, 16))  # new slots need new blocks: it fails on them
        assert states(array)[0] == "faulty"
        await ledger.check()
        disk(nodes, 1).set_disk_fault(NO_DISK_FAULT)
        await healthy(array)
        await ledger.check()


async def test_a_member_slower_than_the_forward_bound_is_faulty_and_nothing_hangs(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    """A member slower than the bound is treated as one cut off: its I/O times out at the
    bound, the member turns faulty, the writes after it skip it; a member slow within the
    bound stays active."""
    async with linked_runtimes(tmp_path, 4) as nodes:
        bound = nodes.peers[0].timeout
        array = await make_array(nodes)
        ledger = Ledger(array)
        await ledger.write(range(0, 4))
        disk(nodes, 3).set_disk_fault(DiskFault(latency_ms=1000 * bound / 5))
        start = trio.current_time()
        await ledger.write(range(4, 6))
        assert trio.current_time() - start == pytest.approx(2 * bound / 5)
        assert states(array) == ["active", "active", "active"]

        disk(nodes, 3).set_disk_fault(DiskFault(latency_ms=1000 * (bound + 3)))
        start = trio.current_time()
        await ledger.write(range(6, 7))
        assert trio.current_time() - start == pytest.approx(bound)  # not the disk's 8 s
        assert states(array)[2] == "faulty"
        start = trio.current_time()
        await ledger.write(range(7, 12))
        assert trio.current_time() - start < 0.1  # the rest skip it
        await ledger.check()
        disk(nodes, 3).set_disk_fault(NO_DISK_FAULT)
        await healthy(array)
        await ledger.check()


async def test_a_disk_that_keeps_failing_is_replaced_onto_a_spare(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    """Tried again each second, it fails each time; it went away when it first failed, so
    ``auto_replace_after_s`` replaces it onto a spare on a live node."""
    async with linked_runtimes(tmp_path, 5) as nodes:
        array = await make_array(nodes, auto_replace_after_s=3)
        ledger = Ledger(array)
        await ledger.write(range(0, 6))
        disk(nodes, 2).set_disk_fault(DiskFault(errors=100))
        await ledger.write(range(6, 10))
        done = await healthy(array)
        assert [m["node_id"] for m in done["members"]] == [1, 4, 3]  # node 4 held none
        await ledger.check()


async def test_a_member_on_the_owner_whose_disk_fails_comes_back_after_the_heal(
    runtime: Runtime, autojump_clock: trio.testing.MockClock
) -> None:
    """The same for the owner's own devices: faulty while its disk fails, resynchronised once
    it reads again (a member on the owner is never away for want of a node)."""
    array = await make_local_array(runtime, 2, 1)
    ledger = Ledger(array)
    await ledger.write(range(0, 6))
    device = runtime.pools.by_name("arr_d0")
    assert isinstance(device, BdevContainer)
    device.set_disk_fault(DiskFault(errors=100))
    await ledger.write(range(6, 12))
    await trio.sleep(3)
    assert states(array)[0] == "faulty"
    await ledger.check()
    device.set_disk_fault(NO_DISK_FAULT)
    back = await healthy(array)
    assert 0 < back["recovery_written_slots"] <= 6 < back["written_slots"]
    await ledger.check()
