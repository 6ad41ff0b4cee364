"""The planted storage bugs of ``bench.explore.storageplants``: each replays, in one process,
the situation its fix was for; an acknowledged write is lost (or a stale write lands) under
the plant, and the same code without it keeps every acknowledged write. After the ``with``,
the product is as it was."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing

from bench.explore import storageplants
from bench.explore.storageplants import (
    STORAGE_PLANTS,
    ack_without_member,
    stale_after_resync,
    write_races_return,
)
from cluster.ground.errors import Conflict
from cluster.modules import remote
from cluster.modules.rt_safe_bdev import SafeBdevContainer
from cluster.runtime.testing import FakeMembership
from cluster.storage import DeviceState
from cluster.storage.array import StripeArray, Unreadable, Unwritable
from cluster.storage.recovery import Recovery
from scenarios.format.spec import load_scenario
from scenarios.judge import properties
from scenarios.judge.properties import STORAGE_PROPERTIES
from scenarios.play.sim import run_sim
from tests.support import wait_for_async
from tests.support.linked import Linked, linked_runtimes
from tests.support.memstore import CHUNK, Memory, array_of

STRIPE = 2 * CHUNK  # the in-memory array's stripe: two data members
RECORD = 8192  # the linked array's stripe: two data members of 4 KiB chunks
PATCHED = (StripeArray, Recovery, remote)  # everything a storage plant may change


def maybe(plant: Callable[[], AbstractContextManager[None]], planted: bool) -> Any:
    return plant() if planted else nullcontext()


FIXED_AND_PLANTED = pytest.mark.parametrize("planted", [False, True], ids=["fixed", "planted"])


# -- write_races_return -----------------------------------------------------------------------


@FIXED_AND_PLANTED
async def test_a_write_under_way_when_its_member_comes_back_is_lost_only_under_the_plant(
    planted: bool, autojump_clock: trio.testing.MockClock
) -> None:
    """Member 1 is away while slot 1 is written; the write of slot 5 skips it and is held at
    the parity member while member 1 comes back and its resync runs. Fixed, the resync
    catches slot 5 up once the write ends; planted, member 1 is marked active with zeros
    where slot 5's second chunk belongs, and the array reads those back."""
    walked = trio.Event()

    async def run_op(method: str, _kib: float, fn: Any) -> Any:
        got = await fn()
        if method == "recover":
            walked.set()
        return got

    with maybe(write_races_return, planted):
        stores = [Memory(), Memory(), Memory()]
        array = array_of(stores, run_op)
        await array.write(0, b"\x01" * STRIPE)
        array.set_state(1, DeviceState.FAULTY)  # away
        await array.write(STRIPE, b"\x02" * STRIPE)  # slot 1: member 1 misses it
        stores[2].gate = trio.Event()  # the parity write of the next one is held
        payload = b"\x03" * STRIPE
        async with trio.open_nursery() as nursery:
            nursery.start_soon(array.write, 5 * STRIPE, payload)  # slot 5: skips member 1
            await stores[2].held.wait()
            array.set_state(1, DeviceState.RECOVERING)  # back, while the write is under way
            array.recovery.generation += 1
            nursery.start_soon(array.recover, 0.0, True)
            await walked.wait()  # the resync rebuilt slot 1
            stores[2].gate.set()  # the write of slot 5 ends: acknowledged
        assert array.member(1).state == DeviceState.ACTIVE
        assert stores[1].data[CHUNK : 2 * CHUNK] == b"\x02" * CHUNK  # slot 1 either way
        held = bytes(stores[1].data[5 * CHUNK : 6 * CHUNK])
        got = await array.read(5 * STRIPE, STRIPE)
    if planted:
        assert held == bytes(CHUNK)
        assert got == b"\x03" * CHUNK + bytes(CHUNK)  # the acknowledged write is lost
    else:
        assert held == b"\x03" * CHUNK
        assert got == payload
        assert array.missed == {}


# -- ack_without_member -----------------------------------------------------------------------


@FIXED_AND_PLANTED
async def test_a_write_no_member_took_is_acknowledged_only_under_the_plant(planted: bool) -> None:
    """The instant at a heal: every member's node held down. Fixed, the write is refused
    (``Unwritable``) and not counted written; planted, it is acknowledged, no device holds a
    byte of it, and it reads back as nothing."""
    with maybe(ack_without_member, planted):
        stores = [Memory(), Memory(), Memory()]
        array = array_of(stores)
        await array.write(0, b"\x01" * STRIPE)
        for position in array.positions():
            array.set_state(position, DeviceState.FAULTY)
        payload = b"\x07" * STRIPE
        if not planted:
            with pytest.raises(
                Unwritable, match="nowhere: 0 of its members in service; it takes 2"
            ):
                await array.write(STRIPE, payload)
            assert array.written == {0}
            return
        await array.write(STRIPE, payload)  # acknowledged
        assert array.written == {0, 1}
        assert all(b"\x07" not in store.data for store in stores)  # held by no member
        with pytest.raises(Unreadable):
            await array.read(STRIPE, STRIPE)


# -- stale_after_resync -----------------------------------------------------------------------


async def linked_array(nodes: Linked) -> SafeBdevContainer:
    """``arr`` on node 0 over ``m1@1`` and ``m2@2`` (data) and ``m3@3`` (parity)."""
    for node_id in (1, 2, 3):
        await nodes[node_id].compose(
            "rt_bdev", f"m{node_id}", f"90{node_id}.0", {"bdev_type": "ram", "capacity": "256K"}
        )
    config = {"members": "m1@1,m2@2", "parity_members": "m3@3", "max_failures": 1}
    await nodes[0].compose("rt_safe_bdev", "arr", "950.0", {**config, "recover_pace_s": 0})
    array = nodes[0].pools.by_name("arr")
    assert isinstance(array, SafeBdevContainer)
    return array


class Socket:
    """Node 0's next write to node ``node_id`` lies in the node's socket: node 0 hears nothing
    (its call ends at the forward bound), and the write reaches the node only when
    ``deliver`` is awaited."""

    def __init__(self, nodes: Linked, node_id: int) -> None:
        self.node_id = node_id
        self.answer = nodes.peers[0].answer
        self.parked: dict[str, Any] | None = None
        nodes.peers[0].answer = self._answer

    def _answer(self, node_id: int, request: dict[str, Any]) -> Any:
        if node_id == self.node_id and request.get("op") == "write" and self.parked is None:
            self.parked = request
            return self._silence()
        return self.answer(node_id, request)

    @staticmethod
    async def _silence() -> None:
        await trio.sleep_forever()

    async def deliver(self) -> Any:
        assert self.parked is not None
        return await self.answer(self.node_id, self.parked)


async def healthy(array: SafeBdevContainer) -> dict[str, Any]:
    stats: dict[str, Any] = await wait_for_async(
        "every member active and the recovery complete",
        array.stats,
        until=lambda s: s["active_members"] == 3 and s["recovery_state"] == "complete",
        timeout=60,
    )
    return stats


@FIXED_AND_PLANTED
async def test_a_write_that_lay_in_a_paused_nodes_socket_lands_over_the_resync_only_planted(
    planted: bool, tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    """Slot 4 is written (``old``) while node 2 is paused: its chunk lies in node 2's socket,
    node 0's call times out, member m2 turns faulty. Slot 4 is written again (``new``) while
    m2 is away; node 2 comes back, the resync rebuilds ``new`` onto m2; then the old chunk
    reaches node 2. Fixed, the device refuses it (the reattach raised the array's epoch);
    planted, it lands and the array reads ``old``'s chunk in ``new``'s place."""
    with maybe(stale_after_resync, planted):
        async with linked_runtimes(tmp_path, 4) as nodes:
            array = await linked_array(nodes)
            acked: dict[int, bytes] = {}
            for slot in range(8):
                acked[slot] = os.urandom(RECORD)
                await array.write(slot * RECORD, acked[slot])
            membership = nodes[0].membership
            assert isinstance(membership, FakeMembership)
            socket = Socket(nodes, 2)
            old, new = os.urandom(RECORD), os.urandom(RECORD)
            await array.write(4 * RECORD, old)  # m2's call ends at the bound: m2 faulty
            membership.change(2, "dead")  # the paused node is declared dead
            assert [m["state"] for m in array.stats()["members"]][1] == "faulty"
            await array.write(4 * RECORD, new)  # acknowledged by m1 and m3; m2 misses it
            acked[4] = new
            membership.change(2, "alive")  # resumed: m2 comes back, resynchronised
            back = await healthy(array)
            assert back["recovery_written_slots"] >= 1
            assert await array.read(4 * RECORD, RECORD) == new

            if planted:
                assert await socket.deliver() == {"ok": True}  # the stale write lands
            else:
                with pytest.raises(Conflict, match="a stale write of"):
                    await socket.deliver()
            got = {slot: await array.read(slot * RECORD, RECORD) for slot in acked}
    lost = sorted(slot for slot, data in acked.items() if got[slot] != data)
    if planted:
        assert lost == [4]
        assert got[4] == new[: RECORD // 2] + old[RECORD // 2 :]  # m2's chunk is old's
    else:
        assert lost == []


STALE_RUN = """
name: a write held in a cut-off parity member's stream
nodes: 4
seed: 5
workload: 'off'
storage:
  array: 0
  members: [1, 2]
  parity: [3]
  capacity: 16M
  writes: {every: 0.2, records: 4, size: 4096}
steps:
- {at: 1.0, delay: {node: 0, ms: 50}}
- {at: 5.02, partition: [[0, 1, 2], [3]]}
- {at: 15.0, heal: true, name: final}
duration: 55.0
property: no_lost_writes
"""


@FIXED_AND_PLANTED
def test_a_parity_write_held_by_a_partition_lands_after_the_resync_in_whole_sim(
    planted: bool, tmp_path: Path
) -> None:
    """On whole simulated nodes: the owner's parity write lies in node 3's stream when the
    partition starts; node 3's member is resynchronised soon after the heal, and the held
    bytes land at the owner's next retransmission (``simsocket`` rule 3), later still.
    Planted, the device takes them: the parity no longer agrees with the data, which only the
    owner's ``verify`` shows (``array_recovers``); fixed, the fence refuses them."""
    path = tmp_path / "stale.yaml"
    path.write_text(STALE_RUN)
    sc = load_scenario(path, sim=True)
    with maybe(stale_after_resync, planted):
        trace = run_sim(sc)
    assert trace.storage is not None
    assert trace.storage["lost_count"] == 0  # every record reads back while all members serve
    failed = properties.check(properties.Run(sc, trace), list(STORAGE_PROPERTIES))
    if planted:
        assert failed is not None
        assert failed[0] == "array_recovers"
        assert "1 parity mismatches" in failed[1]
    else:
        assert failed is None


# -- the table, and the product after the block ------------------------------------------------


def snapshot() -> list[dict[str, Any]]:
    return [dict(vars(owner)) for owner in PATCHED]


def same(before: list[dict[str, Any]], after: list[dict[str, Any]]) -> bool:
    return all(
        b.keys() == a.keys() and all(b[k] is a[k] for k in b)
        for b, a in zip(before, after, strict=True)
    )


def test_the_table_names_the_three_plants_and_the_docstring_describes_each() -> None:
    assert list(STORAGE_PLANTS) == [
        "write_races_return",
        "ack_without_member",
        "stale_after_resync",
    ]
    doc = storageplants.__doc__ or ""
    for name in STORAGE_PLANTS:
        assert f"``{name}``:" in doc
    assert "no_lost_writes" in doc


@pytest.mark.parametrize("name", list(STORAGE_PLANTS))
def test_a_plant_changes_the_product_only_inside_its_block(name: str) -> None:
    before = snapshot()
    with STORAGE_PLANTS[name]():
        assert not same(before, snapshot())
    assert same(before, snapshot())

    def raising() -> Iterator[None]:
        with STORAGE_PLANTS[name]():
            yield
            raise RuntimeError("the block failed")

    blocks = raising()
    next(blocks)
    with pytest.raises(RuntimeError, match="the block failed"):
        next(blocks)
    assert same(before, snapshot())
