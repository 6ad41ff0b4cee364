"""A member's node killed while the array is written, on whole simulated nodes: degraded,
restarted, replaced onto a spare (``make_array(auto_replace_after_s=...)``), recovered, nothing
lost; the same seed gives the same history and the same array."""

from __future__ import annotations

from typing import Any

import pytest
import trio

from cluster.sim import VirtualClock
from scenarios import Cluster, open_cluster
from scenarios.play.arrays import Array
from scenarios.pytest_plugin import OpenCluster

WRITE_EVERY = 0.5  # virtual seconds between two write requests
RECORDS = 4  # records a request writes


async def _write_until(arr: Array, stop: trio.Event, acknowledged: list[int]) -> None:
    while not stop.is_set():
        acknowledged.append(await arr.write(records=RECORDS))
        await trio.sleep(WRITE_EVERY)


async def _kill_while_writing(c: Cluster) -> dict[str, Any]:
    """Node 2 (a data member's) killed mid-writes, seen dead, restarted; what the array said
    at each stage and what the owner acknowledged."""
    arr = await c.make_array(owner=0, members=[1, 2], parity=[3], auto_replace_after_s=2)
    acknowledged: list[int] = []
    stop = trio.Event()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(_write_until, arr, stop, acknowledged)
        await c.sleep(3)
        written_before = sum(acknowledged)
        await c.kill(2)
        degraded = await arr.wait_degraded(timeout=30)
        await c.wait_dead(2)
        await c.restart(2)
        await c.wait_converged()
        recovered = await arr.wait_recovered(timeout=60)
        await c.sleep(2)  # written to after the recovery too
        stop.set()
    return {
        "written_before": written_before,
        "degraded": degraded,
        "recovered": recovered,
        "acknowledged": sum(acknowledged),
        "durability": await arr.check(),
        "end": trio.current_time(),
    }


async def test_a_members_node_killed_while_writing_is_replaced_and_nothing_is_lost(
    sim_clock: VirtualClock, rt_cluster: OpenCluster
) -> None:
    c = await rt_cluster(4, whole=True, seed=7)
    got = await _kill_while_writing(c)
    assert got["written_before"] > 0
    faulty = [m["node_id"] for m in got["degraded"]["members"] if m["state"] == "faulty"]
    assert faulty == [2]
    recovered = got["recovered"]
    assert recovered["active_members"] == 3
    assert recovered["recovery_state"] != "degraded"
    durability = got["durability"]
    assert durability.ok, durability.verdict().line()
    assert durability.checked == got["acknowledged"]  # every acknowledged record read back
    assert got["acknowledged"] > got["written_before"]  # writes went on through it all
    assert (await c.check()).ok  # membership: node 2's death seen, nobody else's


def test_the_same_seed_gives_the_same_kill_and_replacement() -> None:
    async def once() -> tuple[Any, ...]:
        async with open_cluster(4, "sim", whole=True, seed=19) as c:
            got = await _kill_while_writing(c)
            history = await c.history()
            events = [
                (e["mono"], e["observer"], e["subject"], e["new"]) for e in history.trace.events
            ]
            members = [(m["node_id"], m["state"]) for m in got["recovered"]["members"]]
            return events, members, got["acknowledged"], got["end"]

    first = trio.run(once, clock=VirtualClock())
    assert first == trio.run(once, clock=VirtualClock())
    events = first[0]
    assert any(subject == 2 and new == "dead" for _, _, subject, new in events)


async def test_a_bad_auto_replace_is_refused_by_the_array(
    sim_clock: VirtualClock, rt_cluster: OpenCluster
) -> None:
    c = await rt_cluster(4, whole=True, seed=1)
    with pytest.raises(RuntimeError, match="auto_replace_after_s"):
        await c.make_array(auto_replace_after_s=0.5)  # under a second


async def test_a_member_replaced_after_its_node_came_back_lands_on_that_node(
    sim_clock: VirtualClock, rt_cluster: OpenCluster
) -> None:
    """``rt_safe_bdev`` devices rule 4: node 2 restarted holds nothing of the array (its RAM
    device died with it), so the spare goes there, not to the owner."""
    c = await rt_cluster(4, whole=True, seed=7)
    arr = await c.make_array(owner=0, members=[1, 2], parity=[3], auto_replace_after_s=15)
    assert await arr.write(records=8) == 8
    await c.kill(2)
    await c.wait_dead(2)
    await c.restart(2)
    await c.wait_converged()
    recovered = await arr.wait_recovered(timeout=60)
    assert [m["node_id"] for m in recovered["members"]] == [1, 2, 3]
    assert recovered["members"][1]["pool_name"] != "rt_m2"  # a spare, not the old member
    assert (await arr.check()).ok
