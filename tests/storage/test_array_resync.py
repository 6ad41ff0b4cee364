"""A member back from being away gets every slot it missed (``storage.array`` rule 5), also a
slot whose write was already under way, skipping it, when it came back.

Found by ``rt_cluster scenario member_node_paused.yaml --runs 7``: one record of 204 read back
different. The write of its slot had skipped the away member; it ended after the member came
back ``recovering``, so the array no longer looked degraded, the slot was not marked, the
resync did not rebuild it, and the member served stale bytes for it."""

from __future__ import annotations

import pytest
import trio

from cluster.storage import DeviceState
from cluster.storage.array import Unreadable, Unwritable
from tests.support.memstore import CHUNK, Memory, array_of


async def test_a_write_under_way_when_the_member_comes_back_is_rebuilt_onto_it() -> None:
    stores = [Memory(), Memory(), Memory()]
    array = array_of(stores)
    stripe = 2 * CHUNK
    await array.write(0, b"\x01" * stripe)
    array.set_state(1, DeviceState.FAULTY)  # away
    await array.write(stripe, b"\x02" * stripe)  # slot 1: missed by member 1
    stores[2].gate = trio.Event()  # the parity write of the next one is held
    payload = b"\x03" * stripe
    async with trio.open_nursery() as nursery:
        nursery.start_soon(array.write, 5 * stripe, payload)  # slot 5: skips member 1
        await stores[2].held.wait()  # member 1 already skipped; the write is under way
        array.set_state(1, DeviceState.RECOVERING)  # back
        array.recovery.generation += 1
        nursery.start_soon(array.recover, 0.0, True)
        await trio.sleep(0.05)
        stores[2].gate.set()
    assert array.member(1).state == DeviceState.ACTIVE
    assert array.missed == {}
    # member 1 holds the second half of each stripe: read it directly
    assert stores[1].data[1 * CHUNK : 2 * CHUNK] == b"\x02" * CHUNK
    assert stores[1].data[5 * CHUNK : 6 * CHUNK] == b"\x03" * CHUNK
    assert await array.read(5 * stripe, stripe) == payload
    assert array.recovery.rebuilt == 1  # the resync itself rebuilt slot 1 only; 5 caught up


async def test_a_write_that_reaches_fewer_members_than_data_fails_and_is_not_acknowledged() -> None:
    """Rule 7. Found by ``array_partition --runs 7``: at the heal, the owner briefly held two
    member nodes dead (gossip from the cut-off side) while the third member was out; four
    writes in that instant were acknowledged with no member holding them."""
    stores = [Memory(), Memory(), Memory()]
    array = array_of(stores)
    stripe = 2 * CHUNK
    await array.write(0, b"\x01" * stripe)
    array.set_state(2, DeviceState.FAULTY)
    await array.write(stripe, b"\x02" * stripe)  # one out: within the parity level
    array.set_state(1, DeviceState.FAULTY)
    for offset, size in ((2 * stripe, stripe), (3 * stripe + 7, 10)):  # a stripe, a piece
        with pytest.raises(Unwritable, match="nowhere: 1 of its members in service; it takes 2"):
            await array.write(offset, b"\x03" * size)
    assert b"\x03" not in stores[0].data  # refused before it wrote: no slot of two versions
    assert array.written == {0, 1}  # neither refused write counts as written
    with pytest.raises(Unreadable):  # a piece of a written slot needs its stripe: unreadable
        await array.write(CHUNK // 2, b"\x04" * 10)
