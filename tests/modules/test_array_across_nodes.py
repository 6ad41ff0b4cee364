"""An array on node 0 whose members live on nodes 1 to 3, on real processes: a member node's
death makes it degraded within SWIM's dead bound, every acknowledged write reads back while
degraded, and a replacement on another node recovers it (``rt_safe_bdev.devices``). A member
whose disk fails or fills is treated the same way, and resynchronised after the heal."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from scenarios import open_cluster
from tests.support import wait_for

pytestmark = pytest.mark.slow


def post(base: str, path: str, **form: str) -> Any:
    r = httpx.post(base + path, data=form, timeout=30)
    assert r.status_code == 200, r.text
    return r.json()


def get(base: str, path: str) -> Any:
    r = httpx.get(base + path, timeout=30)
    assert r.status_code == 200, r.text
    return r.json()


def monitor(base: str, pool: str, query: str) -> Any:
    """The local answer of ``pool``'s monitor (the route keys its results by node)."""
    r = httpx.get(f"{base}/api/pools/{pool}/monitor", params={"query": query}, timeout=30)
    assert r.status_code == 200, r.text
    (answer,) = r.json()["results"].values()
    return answer


def stats(base: str, pool: str) -> Any:
    return monitor(base, pool, "stats")


def make_array(urls: list[str], more: str = "") -> str:
    """rt_bdev pools m1..m3 on nodes 1..3 and a spare on node 1; array ``arr`` on node 0 over
    m1@1, m2@2 (data) and m3@3 (parity), recovering at full speed. Its pool id."""
    for j, (i, name) in enumerate(((1, "m1"), (2, "m2"), (3, "m3"), (1, "spare"))):
        post(urls[i], "/api/mod/rt_bdev/create", pool_name=name, pool_id=f"90{j}.0",
             bdev_type="ram", capacity="4M")  # fmt: skip
    config = "members: m1@1,m2@2\nparity_members: m3@3\nmax_failures: 1\nrecover_pace_s: 0\n"
    config += more
    made = post(urls[0], "/api/pools/compose", mod_name="rt_safe_bdev", pool_name="arr",
                pool_id="950.0", config=config)  # fmt: skip
    return str(made["pool_id"])


def durability(url: str, arr: str, **form: str) -> Any:
    return post(url, f"/api/mod/rt_safe_bdev/{arr}/durability", **form)


def recovered(url: str, arr: str, what: str) -> Any:
    """Stats once every member is active again and the last recovery is complete."""
    return wait_for(
        what,
        lambda: stats(url, arr),
        until=lambda s: s["active_members"] == 3 and s["recovery_state"] == "complete",
        timeout=60,
    )


def assert_intact(url: str, arr: str, records: int) -> None:
    """Every acknowledged record reads back, and every written slot is consistent."""
    check = durability(url, arr, op="check")
    assert (check["checked"], check["lost"]) == (records, [])
    verify = monitor(url, arr, "verify")
    assert (verify["unreadable_slots"], verify["parity_mismatches"]) == (0, 0)


def degraded(url: str, arr: str) -> Any:
    return wait_for(
        "the array degraded",
        lambda: stats(url, arr),
        until=lambda s: s["recovery_state"] == "degraded" and s["faulty_members"] == 1,
        timeout=10,
    )


async def test_a_member_node_dies_the_array_degrades_keeps_its_data_and_recovers() -> None:
    async with open_cluster(4, mode="real", name="array") as c:
        await c.wait_converged()
        urls = [c.dashboard_url(i) or "" for i in range(4)]
        arr = make_array(urls)
        members = stats(urls[0], arr)["members"]
        assert [(m["pool_name"], m["node_id"]) for m in members] == [
            ("m1", 1),
            ("m2", 2),
            ("m3", 3),
        ]
        wrote = durability(urls[0], arr, op="write", count="40", size="10000", seed="7")
        assert wrote["acknowledged"] == 40

        await c.kill(2)
        await c.wait_dead(2)
        degraded(urls[0], arr)
        check = durability(urls[0], arr, op="check")
        assert (check["checked"], check["lost"]) == (40, [])
        more = durability(urls[0], arr, op="write", count="10", size="10000", seed="8")
        assert more["acknowledged"] == 10  # writes go on within max_failures

        failed = next(m["pool_id"] for m in stats(urls[0], arr)["members"] if m["node_id"] == 2)
        post(urls[0], f"/api/mod/rt_safe_bdev/{arr}/replace_member", failed_pool_id=failed,
             member_name="spare", node_id="1")  # fmt: skip
        done = recovered(urls[0], arr, "the array recovered onto node 1's spare")
        assert ("spare", 1) in [(m["pool_name"], m["node_id"]) for m in done["members"]]
        assert_intact(urls[0], arr, 50)


async def test_a_paused_member_node_comes_back_and_only_what_it_missed_is_rebuilt() -> None:
    async with open_cluster(4, mode="real", name="paused") as c:
        await c.wait_converged()
        urls = [c.dashboard_url(i) or "" for i in range(4)]
        arr = make_array(urls)
        assert (
            durability(urls[0], arr, op="write", count="40", size="10000", seed="1")["acknowledged"]
            == 40
        )
        await c.pause(2)
        await c.wait_dead(2)
        degraded(urls[0], arr)
        assert (
            durability(urls[0], arr, op="write", count="5", size="10000", seed="2")["acknowledged"]
            == 5
        )
        missed = stats(urls[0], arr)["dirty_slots"]
        await c.resume(2)
        back = recovered(urls[0], arr, "node 2's member resynchronised")
        assert [m["pool_name"] for m in back["members"]] == ["m1", "m2", "m3"]  # not replaced
        assert 0 < back["recovery_written_slots"] == missed < back["written_slots"]
        assert back["dirty_slots"] == 0
        assert_intact(urls[0], arr, 45)


async def test_a_member_whose_node_stays_dead_is_replaced_on_a_live_peer() -> None:
    async with open_cluster(5, mode="real", name="auto") as c:
        await c.wait_converged()
        urls = [c.dashboard_url(i) or "" for i in range(5)]
        arr = make_array(urls, "auto_replace_after_s: 2\n")
        assert (
            durability(urls[0], arr, op="write", count="30", size="10000", seed="3")["acknowledged"]
            == 30
        )
        await c.kill(3)
        await c.wait_dead(3)
        done = recovered(urls[0], arr, "the parity member replaced on node 4 and rebuilt")
        assert [m["node_id"] for m in done["members"]] == [1, 2, 4]  # the peer with none
        pools = get(urls[4], "/api/pools")["pools"]
        assert [p["pool_name"] for p in pools if p["mod_name"] == "rt_bdev"] == [
            done["members"][2]["pool_name"]
        ]
        assert_intact(urls[0], arr, 30)


async def test_a_parity_member_made_on_the_owner_takes_a_pool_id_no_member_has() -> None:
    async with open_cluster(3, mode="real", name="ids") as c:
        await c.wait_converged()
        urls = [c.dashboard_url(i) or "" for i in range(3)]
        for i in (1, 2):  # 900.0 and 901.0: the ids the owner would suggest first
            post(urls[i], "/api/mod/rt_bdev/create", pool_name=f"m{i}", pool_id=f"90{i - 1}.0",
                 bdev_type="ram", capacity="1M")  # fmt: skip
        post(urls[0], "/api/pools/compose", mod_name="rt_safe_bdev", pool_name="arr",
             pool_id="950.0", config="members: m1@1,m2@2\nmax_failures: 1\n")  # fmt: skip
        members = stats(urls[0], "950.0")["members"]
        assert [(m["node_id"], m["role"]) for m in members] == [(1, "data"), (2, "data"),
                                                               (0, "parity")]  # fmt: skip
        assert members[2]["pool_id"] not in ("900.0", "901.0")


async def test_a_member_cut_off_for_a_moment_comes_back_though_its_node_never_died() -> None:
    """A member whose I/O timed out (a peer cut off for a moment, never declared dead: the
    suspicion here outlasts the test) is reattached and resynchronised once it answers."""
    async with open_cluster(4, mode="real", name="blip", swim={"suspicion_mult": 40}) as c:
        await c.wait_converged()
        urls = [c.dashboard_url(i) or "" for i in range(4)]
        arr = make_array(urls)
        assert (
            durability(urls[0], arr, op="write", count="20", size="10000", seed="5")["acknowledged"]
            == 20
        )
        await c.partition([2])
        wrote = durability(urls[0], arr, op="write", count="4", size="10000", seed="6")
        assert wrote["acknowledged"] == 4  # the first waited out node 2, the rest skip it
        cut = stats(urls[0], arr)
        assert [m["state"] for m in cut["members"]] == ["active", "faulty", "active"]
        await c.heal()
        back = recovered(urls[0], arr, "node 2's member reattached")
        assert [m["pool_name"] for m in back["members"]] == ["m1", "m2", "m3"]
        assert 0 < back["recovery_written_slots"] < back["written_slots"]
        assert_intact(urls[0], arr, 24)
        assert all(v.get(2) == "alive" for o, v in (await c.views()).items() if o != 2)


async def test_a_member_whose_disk_fails_or_fills_is_faulty_and_resynchronised_after_heal() -> None:
    async with open_cluster(4, mode="real", name="disk") as c:
        await c.wait_converged()
        urls = [c.dashboard_url(i) or "" for i in range(4)]
        arr = make_array(urls)
        wrote = durability(urls[0], arr, op="write", count="20", size="10000", seed="11")
        assert wrote["acknowledged"] == 20

        await c.disk(2, "m2", errors=100)
        faults = get(urls[2], "/api/faults")
        assert faults["disk"] == {"m2": {"latency_ms": 0.0, "errors": 100.0, "full": False}}
        more = durability(urls[0], arr, op="write", count="10", size="10000", seed="12")
        assert more["acknowledged"] == 10  # 2 of 3 members take each one
        failed = degraded(urls[0], arr)
        assert [m["state"] for m in failed["members"]] == ["active", "faulty", "active"]
        check = durability(urls[0], arr, op="check")
        assert (check["checked"], check["lost"]) == (30, [])

        await c.heal()  # clears the disk fault: the member reads again, and is resynchronised
        assert get(urls[2], "/api/faults")["disk"] == {}
        back = recovered(urls[0], arr, "node 2's member resynchronised after its disk healed")
        assert [m["pool_name"] for m in back["members"]] == ["m1", "m2", "m3"]
        assert 0 < back["recovery_written_slots"] < back["written_slots"]
        assert_intact(urls[0], arr, 30)

        await c.disk(3, "m3", full=True)  # the parity member holds no room for new slots
        more = durability(urls[0], arr, op="write", count="10", size="10000", seed="13")
        assert more["acknowledged"] == 10
        assert [m["state"] for m in degraded(urls[0], arr)["members"]][2] == "faulty"
        await c.heal()
        recovered(urls[0], arr, "node 3's member resynchronised once it had room again")
        assert_intact(urls[0], arr, 40)
