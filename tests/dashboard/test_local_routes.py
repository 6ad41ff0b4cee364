"""Node-local routes: bodies, key order, JSON everywhere, trailing slashes, HEAD."""

from __future__ import annotations

from typing import Any

import pytest

from cluster.runtime.runtime import Runtime

from .conftest import call


async def test_health(client: Any, runtime: Runtime) -> None:
    status, body, _ = await call(client, "GET", "/api/health")
    assert status == 200
    assert list(body) == ["ok", "node_id", "hostname", "ip_address", "is_leader"]
    assert body["ok"] is True
    assert body["node_id"] == 0
    assert body["is_leader"] is True


async def test_topology_from_host_table(client: Any) -> None:
    status, body, _ = await call(client, "GET", "/api/topology")
    assert status == 200
    assert list(body) == ["self_node_id", "leader_node_id", "hostname", "nodes"]
    assert body["self_node_id"] == 0
    assert body["leader_node_id"] == 0
    assert [n["node_id"] for n in body["nodes"]] == [0, 1, 2]
    assert list(body["nodes"][0]) == [
        "node_id", "ip_address", "state", "alive", "is_leader", "is_self", "incarnation",
        "since", "view",
    ]  # fmt: skip
    assert [n["state"] for n in body["nodes"]] == ["alive", "alive", "dead"]
    assert [n["view"] for n in body["nodes"]] == ["alive", "alive", "dead"]
    assert [n["is_self"] for n in body["nodes"]] == [True, False, False]


async def test_pools_lists_admin_pool(client: Any) -> None:
    status, body, _ = await call(client, "GET", "/api/pools")
    assert status == 200
    assert body == {
        "pools": [{"pool_id": "1.0", "pool_name": "rt_admin", "mod_name": "rt_admin",
                   "container_id": 0}]
    }  # fmt: skip


async def test_config(client: Any) -> None:
    status, body, _ = await call(client, "GET", "/api/config")
    assert status == 200
    assert list(body) == [
        "port", "server_addr", "num_threads", "worker_count", "hostfile", "conf_dir",
        "learning_rate", "swim_enabled", "viz_port", "viz_bind", "modules", "sources", "paths",
    ]  # fmt: skip
    assert body["modules"] == ["rt_admin", "rt_thing"]


async def test_chimods(client: Any) -> None:
    status, body, _ = await call(client, "GET", "/api/chimods")
    assert status == 200
    assert body == {
        "chimods": [
            {"name": "rt_admin", "has_create": False, "has_pages": True},
            {"name": "rt_thing", "has_create": True, "has_pages": True},
        ]
    }


async def test_routes_from_url_map(client: Any, viz_root: Any) -> None:
    status, body, _ = await call(client, "GET", "/api/routes")
    assert status == 200
    assert list(body) == ["routes", "mounts"]
    rows = {(r["method"], r["path"]): r for r in body["routes"]}
    assert list(body["routes"][0]) == ["method", "path", "mod_name", "doc"]
    expected_admin = [
        ("GET", "/api/health"), ("GET", "/api/topology"), ("GET", "/api/pools"),
        ("GET", "/api/config"), ("GET", "/api/routes"), ("GET", "/api/chimods"),
        ("GET", "/api/nodes/{node}/workers"), ("GET", "/api/nodes/{node}/system_stats"),
        ("GET", "/api/nodes/{node}/containers"), ("GET", "/api/nodes/{node}/bdevs"),
        ("GET", "/api/pools/{pool}/monitor"), ("POST", "/api/pools/{pool}/destroy"),
        ("POST", "/api/pools/compose"), ("GET", "/api/mod/rt_admin/pools"), ("GET", "/"),
        ("GET", "/metrics"),
    ]  # fmt: skip
    for key in expected_admin:
        assert rows[key]["mod_name"] == "rt_admin", key
    for key in [
        ("GET", "/api/mod/rt_thing/pools"), ("GET", "/api/mod/rt_thing/create"),
        ("POST", "/api/mod/rt_thing/create"), ("GET", "/api/mod/rt_thing/{pool}/things"),
        ("POST", "/api/mod/rt_thing/{pool}/poke"),
    ]:  # fmt: skip
        assert rows[key]["mod_name"] == "rt_thing", key
    assert rows[("POST", "/api/mod/rt_thing/{pool}/poke")]["doc"] == "poke a pool"
    assert rows[("GET", "/api/health")]["doc"]
    # no HEAD/OPTIONS rows, no retired stubs, no asset routes (those are mounts)
    assert not any(r["method"] in ("HEAD", "OPTIONS") for r in body["routes"])
    assert not any(r["path"].startswith(("/api/node/", "/viz/")) for r in body["routes"])
    mounts = {m["mod_name"]: m for m in body["mounts"]}
    assert set(mounts) == {"rt_admin", "rt_thing", "common"}
    assert mounts["rt_thing"] == {
        "mod_name": "rt_thing",
        "url_prefix": "/viz/rt_thing",
        "dir": str(viz_root / "rt_thing"),
    }


@pytest.mark.parametrize(
    "path", ["/api/health/", "/api/topology/", "/api/nodes/local/workers/", "/api/pools/"]
)
async def test_trailing_slash_ignored(client: Any, path: str) -> None:
    status, _, _ = await call(client, "GET", path)
    assert status == 200


async def test_head_of_a_json_route(client: Any) -> None:
    response = await client.head("/api/health")
    assert response.status_code == 200  # hypercorn drops the body of a HEAD answer
    assert response.headers["Content-Type"] == "application/json"


async def test_unknown_route_is_json_404(client: Any) -> None:
    for path in ("/api/nope", "/nope/deeper", "/api/nodes/local/nope", "/api"):
        status, body, _ = await call(client, "GET", path)
        assert (status, body) == (404, {"error": f"no route or asset for {path}"})


async def test_wrong_method_is_json_405(client: Any) -> None:
    status, body, _ = await call(client, "POST", "/api/health")
    assert status == 405
    assert body == {"error": "method POST not allowed for /api/health (use GET, HEAD)"}
    status, body, _ = await call(client, "GET", "/api/pools/1.0/destroy")
    assert status == 405
    assert body["error"].startswith("method GET not allowed for /api/pools/1.0/destroy")


async def test_runtime_failure_is_500_handler_failed(client: Any, runtime: Runtime) -> None:
    def broken() -> Any:
        raise KeyError("topology table")

    runtime.topology = broken  # type: ignore[method-assign]
    status, body, _ = await call(client, "GET", "/api/topology")
    assert (status, body) == (500, {"error": "handler failed: KeyError: 'topology table'"})
    status, _, _ = await call(client, "GET", "/api/health")  # the app runs on
    assert status == 200
