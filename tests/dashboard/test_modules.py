"""Module blueprints: conventional pools/create routes, a module's own routes with {name}
segments, parameters from query and form, failing handlers, non-finite floats."""

from __future__ import annotations

from typing import Any

from quart_trio import QuartTrio

from cluster.runtime.runtime import Runtime

from .conftest import call


async def test_one_blueprint_per_module(app: QuartTrio) -> None:
    assert {"rt_admin", "rt_thing"} <= set(app.blueprints)
    thing_rules = [r for r in app.url_map.iter_rules() if r.endpoint.startswith("rt_thing.")]
    assert all(r.rule.startswith("/api/mod/rt_thing/") for r in thing_rules)


async def create(client: Any, name: str, pool_id: str) -> None:
    form = {"pool_name": name, "pool_id": pool_id}
    status, _, _ = await call(client, "POST", "/api/mod/rt_thing/create", form=form)
    assert status == 200


async def test_module_pools(client: Any) -> None:
    _, body, _ = await call(client, "GET", "/api/mod/rt_thing/pools")
    assert body == {"pools": []}
    await call(
        client, "POST", "/api/mod/rt_thing/create", form={"pool_name": "p", "pool_id": "610.0"}
    )
    _, body, _ = await call(client, "GET", "/api/mod/rt_thing/pools")
    assert body == {"pools": [{"pool_id": "610.0", "pool_name": "p"}]}
    _, body, _ = await call(client, "GET", "/api/mod/rt_admin/pools")
    assert body == {"pools": [{"pool_id": "1.0", "pool_name": "rt_admin"}]}


async def test_create_form_spec(client: Any) -> None:
    status, body, _ = await call(client, "GET", "/api/mod/rt_thing/create")
    assert status == 200
    assert list(body) == ["mod_name", "title", "fields", "note"]
    assert list(body["fields"][0]) == [
        "name", "label", "type", "required", "default", "options", "placeholder", "help",
    ]  # fmt: skip


async def test_no_create_route_without_a_form(client: Any) -> None:
    status, body, _ = await call(client, "GET", "/api/mod/rt_admin/create")
    assert (status, body) == (404, {"error": "no route or asset for /api/mod/rt_admin/create"})


async def test_create_validate_and_create(client: Any, runtime: Runtime) -> None:
    form = {"pool_name": "c", "pool_id": "611.0", "size": "4", "action": "validate"}
    status, body, _ = await call(client, "POST", "/api/mod/rt_thing/create", form=form)
    assert (status, body) == (200, {"ok": True})
    assert len(runtime.pools) == 1
    form.pop("action")
    status, body, _ = await call(client, "POST", "/api/mod/rt_thing/create", form=form)
    assert (status, body) == (200, {"ok": True, "pool_name": "c", "pool_id": "611.0"})
    assert runtime.pools.by_name("c") is not None


async def test_create_errors_all_at_once(client: Any) -> None:
    form = {"pool_name": "", "pool_id": "x.y", "size": "many", "action": "validate"}
    status, body, _ = await call(client, "POST", "/api/mod/rt_thing/create", form=form)
    assert status == 400
    assert body["ok"] is False
    assert set(body["errors"]) == {"pool_name", "pool_id", "size"}
    assert body["errors"]["size"] == "not a number: 'many'"


async def test_own_route_with_path_segment(client: Any) -> None:
    await call(
        client, "POST", "/api/mod/rt_thing/create", form={"pool_name": "s", "pool_id": "612.0"}
    )
    status, body, _ = await call(client, "GET", "/api/mod/rt_thing/612.0/things?a=1&b+c=x+y&flag")
    assert status == 200
    assert body == {"pool_id": "612.0", "params": {"a": "1", "b c": "x y", "flag": ""}}
    status, body, _ = await call(client, "GET", "/api/mod/rt_thing/1.0/things")
    assert (status, body) == (404, {"error": "no rt_thing pool with id 1.0"})
    status, body, _ = await call(client, "GET", "/api/mod/rt_thing/zz/things")
    assert status == 400


async def test_own_post_route_params(client: Any) -> None:
    await call(
        client, "POST", "/api/mod/rt_thing/create", form={"pool_name": "o", "pool_id": "613.0"}
    )
    status, body, _ = await call(
        client, "POST", "/api/mod/rt_thing/613.0/poke", form={"name": "n1"}
    )
    assert (status, body) == (200, {"ok": True, "pool_id": "613.0", "name": "n1"})
    status, body, _ = await call(client, "POST", "/api/mod/rt_thing/613.0/poke")
    assert (status, body) == (400, {"error": "missing name"})
    # a {name} segment matches exactly one path segment
    status, _, _ = await call(client, "POST", "/api/mod/rt_thing/613.0/x/poke")
    assert status == 404


async def test_failing_module_handler_is_500(client: Any) -> None:
    status, body, _ = await call(client, "GET", "/api/mod/rt_thing/boom")
    assert (status, body) == (500, {"error": "handler failed: RuntimeError: kaboom"})


async def test_non_finite_floats_are_null(client: Any) -> None:
    status, body, response = await call(client, "GET", "/api/mod/rt_thing/floats")
    assert status == 200
    assert body == {"nan": None, "inf": [None, None, 1.5], "ok": 2.0}
    raw = await response.get_data(as_text=True)
    assert "NaN" not in raw
    assert "Infinity" not in raw
