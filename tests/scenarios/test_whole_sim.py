"""Whole nodes behind the chaos API (``open_cluster(..., mode="sim", whole=True)``): arrays,
forwards and the same seed's same history, in virtual time."""

from __future__ import annotations

from typing import Any

import pytest
import trio

from cluster.local import ClusterError
from cluster.sim import VirtualClock
from scenarios import open_cluster
from scenarios.play.wholesim import WholeSimBackend
from scenarios.pytest_plugin import OpenCluster


async def test_an_array_loses_no_write_while_a_members_node_is_away_and_comes_back(
    sim_clock: VirtualClock, rt_cluster: OpenCluster
) -> None:
    """Node 2 paused past its death, written meanwhile, resumed: its member is resynchronised
    (a killed node's RAM device would be gone: only a spare brings such an array back)."""
    c = await rt_cluster(4, whole=True, seed=3)
    arr = await c.make_array(owner=0, members=[1, 2], parity=[3])
    assert await arr.write(records=20) == 20
    await c.pause(2)
    stats = await arr.wait_degraded(timeout=30)
    assert stats["faulty_members"] == 1
    assert await arr.write(records=10) == 10  # degraded, still written
    await c.wait_dead(2)
    await c.resume(2)
    stats = await arr.wait_recovered(timeout=60)
    assert stats["active_members"] == 3
    durability = await arr.check()
    assert durability.ok, durability
    assert durability.checked == 30
    assert trio.current_time() < 120  # virtual: a minute's work in a fraction of a second


def test_the_same_seed_gives_the_same_history() -> None:
    async def once() -> list[tuple[Any, ...]]:
        async with open_cluster(4, "sim", whole=True, seed=11) as c:
            arr = await c.make_array(owner=1, members=[0, 2], parity=[3])
            await arr.write(records=5)
            await c.pause(2)
            await c.sleep(8)
            await c.resume(2)
            await arr.write(records=5)
            await c.sleep(5)
            events = (await c.history()).trace.events
            return [(e["mono"], e["observer"], e["subject"], e["new"]) for e in events]

    first = trio.run(once, clock=VirtualClock())
    assert first == trio.run(once, clock=VirtualClock())
    assert any(new in ("suspected", "dead") for *_, new in first)  # the pause was seen


async def test_a_forward_to_a_paused_node_answers_503_within_the_bound(
    sim_clock: VirtualClock, rt_cluster: OpenCluster
) -> None:
    c = await rt_cluster(3, whole=True, seed=5)
    await c.pause(2)
    got = await c.http(0, "/api/nodes/2/workers")
    assert got is not None
    assert got.status == 503
    assert 5.0 <= got.elapsed <= 5.1
    await c.resume(2)
    got = await c.http(0, "/api/nodes/2/workers")
    assert got is not None
    assert got.status == 200


async def test_whole_nodes_need_the_virtual_clock_and_arrays_need_whole_nodes() -> None:
    with pytest.raises(ClusterError, match="VirtualClock"):
        async with open_cluster(3, "sim", whole=True):
            pass
    async with open_cluster(4, "sim") as c:
        with pytest.raises(RuntimeError, match="whole=True"):
            await c.make_array()


async def test_a_clock_fault_is_refused_on_whole_nodes(
    sim_clock: VirtualClock, rt_cluster: OpenCluster
) -> None:
    c = await rt_cluster(2, whole=True)
    with pytest.raises(ClusterError, match="one clock"):
        await c.clock(1, offset=60)


async def test_a_heal_reaches_a_paused_node_when_it_is_resumed(
    sim_clock: VirtualClock, rt_cluster: OpenCluster
) -> None:
    """``wholesim`` rule 7: node 1's disk fault outlasts a heal made while it was paused (the
    heal's frame waits in its socket, as a stopped process's would) and ends at its resume."""
    c = await rt_cluster(4, whole=True, seed=3)
    await c.make_array(owner=0, members=[1, 2], parity=[3])
    await c.disk(1, "rt_m1", latency_ms=50)
    assert isinstance(c.backend, WholeSimBackend)
    runtime = c.backend.cluster.node(1).runtime

    def faulty() -> bool:
        pool = runtime.pools.by_name("rt_m1")
        assert pool is not None
        return bool(pool.disk_fault.active)

    assert faulty()
    await c.pause(1)
    await c.heal()
    assert faulty()  # paused: the heal has not reached it
    await c.resume(1)
    assert not faulty()
