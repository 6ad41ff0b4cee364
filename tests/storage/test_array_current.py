"""Which blocks an array reads (``storage.layout`` rule 3) and what a write that only some
members took leaves (``storage.array`` rules 7 and 8).

Found by ``rt_cluster explore --storage`` (``tests/scenarios/found/failure-storage-2.yaml``):
the owner was cut off from all three members at once. They came back ``recovering``, none
``active``, so every recover tick found nothing to rebuild from and every acknowledged record
read back unreadable, though each member still held every block it had not missed."""

from __future__ import annotations

import pytest
import trio
import trio.testing

from cluster.ground.ids import PoolId
from cluster.storage import ArrayMember, DeviceState
from cluster.storage import array as array_module
from cluster.storage.array import Unreadable, Unwritable
from tests.support.memstore import CHUNK, Memory, array_of

STRIPE = 2 * CHUNK


async def test_members_all_back_at_once_serve_what_they_kept_and_recover() -> None:
    stores = [Memory(), Memory(), Memory()]
    array = array_of(stores)
    await array.write(0, b"\x01" * STRIPE)
    array.set_state(2, DeviceState.FAULTY)
    await array.write(STRIPE, b"\x02" * STRIPE)  # slot 1: the parity member misses it
    for p in (0, 1):
        array.set_state(p, DeviceState.FAULTY)
    with pytest.raises(Unwritable, match="nowhere"):
        await array.write(2 * STRIPE, b"\x03" * STRIPE)
    for p in array.positions():  # every member back: none active
        array.set_state(p, DeviceState.RECOVERING)
    assert await array.read(0, 2 * STRIPE) == b"\x01" * STRIPE + b"\x02" * STRIPE
    await array.recover(resync=True)
    assert [array.member(p).state for p in array.positions()] == [DeviceState.ACTIVE] * 3
    assert array.recovery.rebuilt == 1  # slot 1 onto the parity member, and nothing else
    assert await array.read(0, 2 * STRIPE) == b"\x01" * STRIPE + b"\x02" * STRIPE
    assert array.lost == set()


async def test_a_recovering_member_is_not_read_where_it_missed_a_write() -> None:
    stores = [Memory(), Memory(), Memory()]
    array = array_of(stores)
    await array.write(0, b"\x01" * STRIPE)
    array.set_state(0, DeviceState.FAULTY)
    await array.write(0, b"\x02" * STRIPE)  # data member 0 keeps the old chunk
    array.set_state(0, DeviceState.RECOVERING)
    array.set_state(2, DeviceState.FAULTY)  # the parity: only member 1 is current besides
    with pytest.raises(Unreadable):  # never the old chunk of member 0 with the new of 1
        await array.read(0, STRIPE)
    array.set_state(2, DeviceState.ACTIVE)
    assert await array.read(0, STRIPE) == b"\x02" * STRIPE


async def test_a_partial_write_counts_a_stale_recovering_member_as_not_holding_it() -> None:
    """Rule 7: a piece of chunk 0 while data member 1 missed the slot: it takes members 0 and
    2 both, not one (member 1's chunk is not current, so it does not count as kept)."""
    stores = [Memory(), Memory(), Memory()]
    array = array_of(stores)
    await array.write(0, b"\x01" * STRIPE)
    array.set_state(1, DeviceState.FAULTY)
    await array.write(0, b"\x02" * STRIPE)
    array.set_state(1, DeviceState.RECOVERING)  # back, slot 0 not rebuilt yet
    stores[2].broken = True
    with pytest.raises(Unwritable, match="to 1 members only"):
        await array.write(5, b"\x03" * 10)


async def test_a_torn_slot_is_kept_on_the_owner_until_its_members_hold_it_again() -> None:
    """Rule 8, found by the hour's storage search (``failure-storage-3.yaml``): a piece of
    slot 0 failed on both members it went to (the owner paused: its calls timed out). Member
    0 keeps the slot's other record, acknowledged before; no two members hold one version of
    the stripe. The owner keeps the stripe that write meant: the acknowledged record reads
    back, a write while the members are away is refused, and once they are back the recovery
    writes their blocks from the owner's copy and drops it."""
    stores = [Memory(), Memory(), Memory()]
    array = array_of(stores)
    await array.write(0, b"\x01" * STRIPE)
    stores[1].broken = stores[2].broken = True
    with pytest.raises(Unwritable, match="to 0 members only"):
        await array.write(CHUNK, b"\x02" * CHUNK)  # chunk 1 and the parity: both fail
    assert set(array.torn) == {0}
    assert array.holders(0) == 1
    assert await array.read(0, CHUNK) == b"\x01" * CHUNK  # the acknowledged neighbour
    with pytest.raises(Unwritable, match="nowhere"):  # a torn slot is written whole
        await array.write(0, b"\x03" * 10)
    stores[1].broken = stores[2].broken = False
    for p in (1, 2):
        array.set_state(p, DeviceState.RECOVERING)
    await array.recover(resync=True)
    assert [array.member(p).state for p in array.positions()] == [DeviceState.ACTIVE] * 3
    assert array.torn == {}
    assert array.lost == set()
    assert await array.check_slot(0) == (True, True)
    assert await array.read(0, STRIPE) == b"\x01" * CHUNK + b"\x02" * CHUNK
    assert stores[1].data[:CHUNK] == b"\x02" * CHUNK  # from the owner's copy


async def test_a_torn_slot_reads_and_writes_through_the_owners_copy() -> None:
    """Rule 8: reads in whole runs go slot by slot around torn slots; a partial write of one,
    with every member back, writes its whole stripe and makes it whole; a check counts a
    torn slot readable but not consistent; the recovery rebuilds the rest from the copies."""
    stores = [Memory(), Memory(), Memory()]
    array = array_of(stores)
    await array.write(0, b"\x01" * 3 * STRIPE)
    stores[0].broken = stores[2].broken = True
    with pytest.raises(Unwritable):
        await array.write(STRIPE, b"\x04" * 10)  # slot 1: chunk 0 and the parity fail
    stores[0].broken = stores[2].broken = False
    for p in (0, 2):
        array.set_state(p, DeviceState.RECOVERING)  # back, not yet resynchronised
    stores[1].broken = stores[2].broken = True
    with pytest.raises(Unwritable):
        await array.write(2 * STRIPE + CHUNK, b"\x05" * 10)  # slot 2: chunk 1 and the parity
    stores[1].broken = stores[2].broken = False
    for p in (1, 2):
        array.set_state(p, DeviceState.RECOVERING)
    assert set(array.torn) == {1, 2}
    want = bytearray(b"\x01" * 3 * STRIPE)
    want[STRIPE : STRIPE + 10] = b"\x04" * 10
    want[2 * STRIPE + CHUNK : 2 * STRIPE + CHUNK + 10] = b"\x05" * 10
    assert await array.read(0, 3 * STRIPE) == want
    assert await array.check_slot(1) == (True, False)  # its members disagree
    await array.write(STRIPE + 20, b"\x06" * 5)  # every member in service: whole again
    want[STRIPE + 20 : STRIPE + 25] = b"\x06" * 5
    assert set(array.torn) == {2}
    await array.recover(resync=True)
    assert array.torn == {}
    assert array.lost == set()
    assert [await array.check_slot(s) for s in range(3)] == [(True, True)] * 3
    assert await array.read(0, 3 * STRIPE) == want


async def test_a_slot_fewer_than_k_members_hold_is_lost_and_recovery_ends(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Rule 8: a whole-stripe write that failed on two members of three took one; nothing
    holds either version of the slot twice and the owner keeps no torn stripes (its bound is
    reached), so it is lost: recovery ends without it, a read says so, and a write of the
    whole stripe makes it whole again."""
    monkeypatch.setattr(array_module, "TORN_BYTES", 0)
    stores = [Memory(), Memory(), Memory()]
    array = array_of(stores)
    await array.write(0, b"\x01" * 2 * STRIPE)
    stores[1].broken = stores[2].broken = True
    with pytest.raises(Unwritable, match="to 1 members only"):
        await array.write(STRIPE, b"\x04" * STRIPE)
    stores[1].broken = stores[2].broken = False
    for p in (1, 2):
        array.set_state(p, DeviceState.RECOVERING)
    await array.recover(resync=True)
    assert [array.member(p).state for p in array.positions()] == [DeviceState.ACTIVE] * 3
    assert array.lost == {1}
    assert await array.read(0, STRIPE) == b"\x01" * STRIPE  # slot 0 is whole
    with pytest.raises(Unreadable, match="slot 1 of array a is lost"):
        await array.read(STRIPE, STRIPE)
    with pytest.raises(Unreadable, match="is lost"):  # a piece needs the rest of the stripe
        await array.write(STRIPE, b"\x05" * 10)
    assert await array.check_slot(1) == (False, True)
    await array.write(STRIPE, b"\x06" * STRIPE)
    assert array.lost == set()
    assert await array.read(STRIPE, STRIPE) == b"\x06" * STRIPE


async def test_a_fresh_member_is_read_nowhere_until_its_recovery_ends() -> None:
    stores = [Memory(), Memory(), Memory(), Memory()]
    array = array_of(stores, spares=1)
    await array.write(0, b"\x01" * STRIPE)
    array.set_state(0, DeviceState.FAULTY)
    array.join_fresh(0, ArrayMember("m3", PoolId(903, 0), 0))  # holds zeros, not slot 0
    assert not array.current(0, 0)
    assert await array.read(0, STRIPE) == b"\x01" * STRIPE
    await array.recover(resync=True)  # a fresh member takes every slot, resync or not
    assert array.member(0).state == DeviceState.ACTIVE
    assert array.fresh == {}
    assert stores[3].data[:CHUNK] == b"\x01" * CHUNK


async def test_a_failed_first_write_leaves_nothing_missed_and_recovery_ends() -> None:
    """Rule 3: the first write of slot 3 took one member and failed on two; the slot is not
    written, so no member missed it, and the members' return ends in a recovery (it waited
    for that slot's "write under way" forever)."""
    stores = [Memory(), Memory(), Memory()]
    array = array_of(stores)
    await array.write(0, b"\x01" * STRIPE)
    stores[1].broken = stores[2].broken = True
    with pytest.raises(Unwritable, match="to 1 members only"):
        await array.write(3 * STRIPE, b"\x04" * STRIPE)
    assert array.written == {0}
    assert array.missed_by(array.positions()) == set()
    stores[1].broken = stores[2].broken = False
    for p in (1, 2):
        array.set_state(p, DeviceState.RECOVERING)
    with trio.fail_after(5):
        await array.recover(resync=True)
    assert [array.member(p).state for p in array.positions()] == [DeviceState.ACTIVE] * 3
    assert await array.read(3 * STRIPE, STRIPE) == bytes(STRIPE)  # never written: zeros


async def test_a_fresh_member_holds_what_was_written_onto_it_since_it_joined() -> None:
    """Found by ``explore --storage`` (seed 5, run 13): the parity member's node was killed
    and a spare took its place; then data member 0's node paused. A write went to data member
    1 and the spare, acknowledged by two; the spare's recovery then had only member 1 to read,
    and the slot was taken for lost, though the spare held its new parity block."""
    stores = [Memory(), Memory(), Memory(), Memory()]
    array = array_of(stores, spares=1)
    await array.write(0, b"\x01" * STRIPE)
    array.set_state(2, DeviceState.FAULTY)
    array.join_fresh(2, ArrayMember("m3", PoolId(903, 0), 0))
    array.set_state(0, DeviceState.FAULTY)  # paused: two out, one of them recovering
    await array.write(4 * STRIPE, b"\x05" * STRIPE)  # data member 1 and the spare took it
    assert array.current(2, 4)
    assert not array.current(2, 0)
    assert array.holders(4) == 2
    assert await array.read(4 * STRIPE, STRIPE) == b"\x05" * STRIPE
    array.set_state(0, DeviceState.RECOVERING)  # back: it missed slot 4
    await array.recover(resync=True)
    assert array.lost == set()
    assert [array.member(p).state for p in array.positions()] == [DeviceState.ACTIVE] * 3
    assert await array.read(0, STRIPE) == b"\x01" * STRIPE
    assert await array.read(4 * STRIPE, STRIPE) == b"\x05" * STRIPE


async def test_a_first_write_under_way_when_a_spare_joins_is_rebuilt_onto_it() -> None:
    """Found by ``explore --storage`` (seed 1, run 145 of the plants bench): a member's node
    was killed and a spare replaced it while the first write of a slot was under way, having
    skipped the old member; the spare's recovery ended without that slot, and the slot's
    chunk read back as the spare's zeros."""
    stores = [Memory(), Memory(), Memory(), Memory()]
    array = array_of(stores, spares=1)
    await array.write(0, b"\x01" * STRIPE)
    array.set_state(0, DeviceState.FAULTY)
    stores[1].gate = trio.Event()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(array.write, 3 * STRIPE, b"\x03" * STRIPE)
        await stores[1].held.wait()  # the old member 0 skipped; member 1's write held
        array.join_fresh(0, ArrayMember("m3", PoolId(903, 0), 0))
        nursery.start_soon(array.recover, 0.0, True)
        await trio.testing.wait_all_tasks_blocked()
        stores[1].gate.set()
    assert array.member(0).state == DeviceState.ACTIVE
    assert stores[3].data[3 * CHUNK : 4 * CHUNK] == b"\x03" * CHUNK
    assert await array.read(3 * STRIPE, STRIPE) == b"\x03" * STRIPE
