"""Per-pool routes: monitor, destroy, compose (validate, create, every error at once)."""

from __future__ import annotations

from typing import Any

import pytest

from cluster.runtime.runtime import Runtime
from cluster.runtime.testing import FakePeers

from .conftest import call

FORM = {"content_type": "application/x-www-form-urlencoded"}


async def compose(client: Any, **fields: str) -> tuple[int, Any]:
    status, body, _ = await call(client, "POST", "/api/pools/compose", form=fields)
    return status, body


async def test_monitor_stats_local(client: Any) -> None:
    status, body, _ = await call(client, "GET", "/api/pools/1.0/monitor?query=stats")
    assert status == 200
    assert list(body) == ["pool_id", "query", "results"]
    assert body["pool_id"] == "1.0"
    assert body["results"]["0"]["pool_name"] == "rt_admin"


async def test_monitor_requires_query(client: Any) -> None:
    status, body, _ = await call(client, "GET", "/api/pools/1.0/monitor")
    assert (status, body) == (400, {"error": "missing ?query"})


async def test_monitor_bad_and_unknown_pool(client: Any) -> None:
    status, body, _ = await call(client, "GET", "/api/pools/abc/monitor?query=stats")
    assert (status, body) == (400, {"error": "bad pool id 'abc': expected <int>.<int>, e.g. 800.0"})
    status, body, _ = await call(client, "GET", "/api/pools/5.0/monitor?query=stats")
    assert (status, body) == (404, {"error": "no pool with id 5.0"})


async def test_monitor_bad_routing(client: Any) -> None:
    status, body, _ = await call(client, "GET", "/api/pools/1.0/monitor?query=stats&routing=up")
    assert status == 400
    assert body["error"].startswith("bad routing 'up'")


async def test_monitor_broadcast_asks_alive_peers(client: Any, peers: FakePeers) -> None:
    status, body, _ = await call(
        client, "GET", "/api/pools/1.0/monitor?query=stats&routing=broadcast"
    )
    assert status == 200
    assert list(body["results"]) == ["0", "1"]  # node 2 is dead in the host table
    assert peers.calls == [
        (1, {"k": "pool_monitor", "pool_id": "1.0", "query": "stats", "params": {}})
    ]


async def test_monitor_nan_is_null(client: Any) -> None:
    assert (await compose(client, mod_name="rt_thing", pool_name="t", pool_id="600.0"))[0] == 200
    status, body, response = await call(client, "GET", "/api/pools/600.0/monitor?query=nan")
    assert status == 200
    assert body["results"]["0"] == {"x": None}
    assert b"NaN" not in await response.get_data()


async def test_destroy_admin_pool_refused(client: Any) -> None:
    status, body, _ = await call(client, "POST", "/api/pools/1.0/destroy")
    assert status == 403
    assert body == {
        "error": "refusing to destroy the admin pool -- that is the runtime itself; use rt_run stop"
    }


async def test_destroy_errors(client: Any) -> None:
    status, body, _ = await call(client, "POST", "/api/pools/1/destroy")
    assert (status, body) == (400, {"error": "bad pool id '1': expected <int>.<int>, e.g. 800.0"})
    status, body, _ = await call(client, "POST", "/api/pools/7.0/destroy")
    assert (status, body) == (404, {"error": "no pool with id 7.0"})


async def test_compose_then_destroy(client: Any, runtime: Runtime) -> None:
    status, body = await compose(
        client, mod_name="rt_thing", pool_name="things", pool_id="600.1", config="size: 3\n"
    )
    assert (status, body) == (200, {"ok": True, "pool_name": "things", "pool_id": "600.1"})
    _, pools, _ = await call(client, "GET", "/api/pools")
    assert [p["pool_id"] for p in pools["pools"]] == ["1.0", "600.1"]
    _, stats, _ = await call(client, "GET", "/api/pools/600.1/monitor?query=stats")
    assert stats["results"]["0"] == {"pool_name": "things", "size": 3}
    status, body, _ = await call(client, "POST", "/api/pools/600.1/destroy")
    assert (status, body) == (200, {"ok": True, "pool_id": "600.1", "pool_name": "things"})
    assert len(runtime.pools) == 1


async def test_compose_validate_creates_nothing(client: Any, runtime: Runtime) -> None:
    status, body = await compose(
        client, mod_name="rt_thing", pool_name="v", pool_id="601.0", action="validate"
    )
    assert (status, body) == (200, {"ok": True})
    assert len(runtime.pools) == 1


async def test_compose_reports_every_error_at_once(client: Any) -> None:
    status, body = await compose(
        client, mod_name="rt_nope", pool_name="", pool_id="0.0", pool_query="sideways",
        config="- a list", action="validate",
    )  # fmt: skip
    assert status == 400
    assert body["ok"] is False
    assert set(body["errors"]) == {"mod_name", "pool_name", "pool_id", "pool_query", "config"}
    assert body["errors"]["pool_id"] == "0.0 is the null pool id"
    assert body["errors"]["config"] == "must be a YAML mapping of module parameters"
    assert body["errors"]["mod_name"].startswith("module 'rt_nope' is not loaded")


async def test_compose_module_config_error(client: Any) -> None:
    status, body = await compose(
        client, mod_name="rt_thing", pool_name="x", pool_id="602.0", config="size: big"
    )
    errors = {"size": "line 1, column 1: must be an integer"}  # where the key was written
    assert (status, body) == (400, {"ok": False, "errors": errors})


async def test_compose_unknown_action(client: Any, runtime: Runtime) -> None:
    status, body = await compose(
        client, mod_name="rt_thing", pool_name="x", pool_id="603.0", action="explode"
    )
    assert status == 400
    assert body["errors"] == {"action": "unknown action 'explode' (use validate, or leave it out)"}
    assert len(runtime.pools) == 1


async def test_compose_duplicates(client: Any) -> None:
    assert (await compose(client, mod_name="rt_thing", pool_name="a", pool_id="604.0"))[0] == 200
    status, body = await compose(client, mod_name="rt_thing", pool_name="a", pool_id="604.0")
    assert status == 400
    assert set(body["errors"]) == {"pool_name", "pool_id"}


async def test_compose_fields_from_query_string(client: Any) -> None:
    status, body, _ = await call(
        client,
        "POST",
        "/api/pools/compose?mod_name=rt_thing&pool_name=q&pool_id=605.0",
        form={"pool_name": "ignored: the query string wins"},
    )
    assert (status, body) == (200, {"ok": True, "pool_name": "q", "pool_id": "605.0"})


async def test_compose_form_spec_suggests_free_ids(client: Any) -> None:
    status, body, _ = await call(client, "GET", "/api/pools/compose?mod_name=rt_thing")
    assert status == 200
    assert list(body) == ["mod_name", "title", "fields", "note"]
    fields = {f["name"]: f for f in body["fields"]}
    assert list(fields) == ["mod_name", "pool_name", "pool_id", "pool_query", "config"]
    first = fields["pool_id"]["default"]
    assert first == "600.0"
    _, again, _ = await call(client, "GET", "/api/pools/compose?mod_name=rt_thing")
    # a GET reserves nothing (issue 12): the same free id until a pool takes it
    assert {f["name"]: f for f in again["fields"]}["pool_id"]["default"] == "600.0"


@pytest.mark.parametrize("path", ["/api/pools/1.0/destroy", "/api/pools/compose"])
async def test_get_of_post_routes(client: Any, path: str) -> None:
    status, _, _ = await call(client, "GET", path)
    assert status == (200 if path.endswith("compose") else 405)
