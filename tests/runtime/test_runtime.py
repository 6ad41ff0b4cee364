"""The runtime facade: identity, pools, compose validation, destroy, node ids and routing."""

from __future__ import annotations

import sys
from collections.abc import Callable
from types import FrameType
from typing import Any

import pytest

from cluster.ground.errors import BadRequest, Forbidden, NotFound, PeerUnavailable, ValidationFailed
from cluster.ground.ids import PoolId
from cluster.runtime import PoolInfo
from cluster.runtime.runtime import Runtime


async def test_health_and_topology_of_a_lone_node(runtime: Runtime) -> None:
    assert list(runtime.health()) == ["ok", "node_id", "hostname", "ip_address", "is_leader"]
    topo = runtime.topology()
    assert topo["self_node_id"] == 0
    assert topo["leader_node_id"] == 0
    assert topo["nodes"] == [
        {
            "node_id": 0,
            "ip_address": "127.0.0.1",
            "state": "alive",
            "alive": True,
            "is_leader": True,
            "is_self": True,
            "incarnation": 0,
            "since": None,  # a lone node has no history
            "view": "alive",
        }
    ]


async def test_the_admin_pool_is_always_there(runtime: Runtime) -> None:
    pools = runtime.pools_json()["pools"]
    assert pools[0] == {
        "pool_id": "1.0",
        "pool_name": "rt_admin",
        "mod_name": "rt_admin",
        "container_id": 0,
    }


async def test_destroying_the_admin_pool_is_refused(runtime: Runtime) -> None:
    with pytest.raises(Forbidden, match="refusing to destroy the admin pool"):
        await runtime.destroy("1.0")
    with pytest.raises(BadRequest, match=r"bad pool id 'x\.y'"):
        await runtime.destroy("x.y")
    with pytest.raises(NotFound, match=r"no pool with id 5\.5"):
        await runtime.destroy("5.5")


async def test_compose_reports_every_failing_field_at_once(runtime: Runtime) -> None:
    with pytest.raises(ValidationFailed) as info:
        await runtime.compose("rt_nope", " ", "0.0", "- a list", pool_query="sideways")
    assert set(info.value.errors) == {"mod_name", "pool_name", "pool_id", "pool_query", "config"}
    assert info.value.body()["ok"] is False
    with pytest.raises(ValidationFailed) as info:
        await runtime.compose("rt_admin", "x", "1.0", "a: [")
    assert "the runtime itself" in info.value.errors["mod_name"]
    assert "admin pool" in info.value.errors["pool_id"]
    assert "not valid YAML" in info.value.errors["config"]


async def test_validate_only_creates_nothing_then_compose_and_destroy(runtime: Runtime) -> None:
    bdev = "bdev_type: ram\ncapacity: 64K\n"
    assert await runtime.compose("rt_bdev", "extra", "800.0", bdev, validate_only=True) == {
        "ok": True
    }
    assert PoolId(800, 0) not in runtime.pools
    body = await runtime.compose("rt_bdev", "extra", "800.0", bdev)
    assert body == {"ok": True, "pool_name": "extra", "pool_id": "800.0"}
    with pytest.raises(ValidationFailed) as info:
        await runtime.compose("rt_bdev", "extra", "800.0", bdev)
    assert "exists already" in info.value.errors["pool_name"]
    assert "taken" in info.value.errors["pool_id"]
    assert await runtime.destroy("800.0") == {"ok": True, "pool_id": "800.0", "pool_name": "extra"}
    assert PoolId(800, 0) not in runtime.pools


def _fill(runtime: Runtime, majors: range) -> None:
    """Put light pools with ids ``<major>.0`` in the table (no compose: only the table counts)."""
    admin = runtime.modules["rt_admin"]
    for major in majors:
        info = PoolInfo(PoolId(major, 0), f"p{major}", "rt_admin", "local", 0)
        runtime.pools.add(admin.make_container(info, {}))


def _lines_run(fn: Callable[[], object]) -> int:
    """How many Python lines ``fn()`` executes: a count of operations, not of time."""
    count = 0

    def tracer(frame: FrameType, event: str, arg: object) -> Any:
        nonlocal count
        count += event == "line"
        return tracer

    previous = sys.gettrace()
    sys.settrace(tracer)
    try:
        fn()
    finally:
        sys.settrace(previous)
    return count


async def test_suggestions_are_free_and_reserve_nothing(runtime: Runtime) -> None:
    assert runtime.suggest_pool_id("rt_admin") == "800.0"
    for _ in range(50):  # every GET of a create form asks for one
        assert runtime.suggest_pool_id("rt_admin") == "800.0"
        await runtime.modules["rt_bdev"]._create_spec(None)  # type: ignore[arg-type]
    _fill(runtime, range(800, 803))
    _fill(runtime, range(804, 806))
    assert runtime.suggest_pool_id("rt_bdev") == "803.0"
    await runtime.compose("rt_bdev", "hole", "803.0", {"capacity": "64K"})
    assert runtime.suggest_pool_id("rt_bdev") == "806.0"
    await runtime.destroy("801.0")
    assert runtime.suggest_pool_id("rt_bdev") == "801.0", "a freed id is suggested again"
    assert runtime.pools.suggest(802) == PoolId(806, 0)
    assert runtime.pools.suggest(10) == PoolId(10, 0)


async def test_suggesting_takes_as_many_steps_with_5000_pools_as_with_5(runtime: Runtime) -> None:
    _fill(runtime, range(800, 805))
    few = _lines_run(lambda: runtime.suggest_pool_id("rt_bdev"))
    _fill(runtime, range(805, 5800))
    many = _lines_run(lambda: runtime.suggest_pool_id("rt_bdev"))
    assert runtime.suggest_pool_id("rt_bdev") == "5800.0"
    assert many <= few + 5, (few, many)


async def test_node_ids_resolve_or_fail_with_the_reference_message(runtime: Runtime) -> None:
    assert runtime.resolve_node("local") == 0
    assert runtime.resolve_node("self") == 0
    assert runtime.resolve_node("0") == 0
    for bad in ("7", "-1", "abc", "1.5", ""):
        with pytest.raises(BadRequest, match="unknown or malformed node id"):
            runtime.resolve_node(bad)


async def test_admin_monitor_queries(runtime: Runtime) -> None:
    runtime.stats.sample()
    runtime.stats.sample()
    body = runtime.admin_monitor("system_stats", {"min_event_id": "1"})
    assert list(body) == ["node_id", "entries"]
    assert [e["event_id"] for e in body["entries"]] == [1]
    with pytest.raises(BadRequest, match="min_event_id"):
        runtime.admin_monitor("system_stats", {"min_event_id": "soon"})
    assert runtime.admin_monitor("containers", {})["containers"][0]["learning_rate"] == 0.2
    assert runtime.admin_monitor("bdevs", {})["devices"] == []
    with pytest.raises(BadRequest):
        runtime.admin_monitor("everything", {})


async def test_pool_monitor_routing(runtime: Runtime) -> None:
    body = await runtime.pool_monitor("1.0", "stats", "local")
    assert list(body) == ["pool_id", "query", "results"]
    assert body["results"]["0"]["pool_name"] == "rt_admin"
    body = await runtime.pool_monitor("1.0", "stats", "broadcast")
    assert list(body["results"]) == ["0"]
    with pytest.raises(BadRequest, match="missing"):
        await runtime.pool_monitor("1.0", "", "local")
    with pytest.raises(BadRequest, match="bad routing"):
        await runtime.pool_monitor("1.0", "stats", "sideways")
    with pytest.raises(NotFound):
        await runtime.pool_monitor("9.9", "stats", "local")


async def test_forward_without_rpc_is_unavailable(runtime: Runtime) -> None:
    with pytest.raises(PeerUnavailable, match="this runtime has no RPC"):
        runtime.reach(0)
