"""``GET /openapi.json`` and ``GET /api/docs``: the document validates as OpenAPI 3.1, lists
exactly the routes of ``/api/routes`` (the modules' included), every route is declared, and
the answers of a running app match the schemas the document gives them.

The app is built in process (QuartTrio test client, no sockets) on a runtime with every
built-in module and a few pools; ``tests/hostile/test_schemathesis.py`` fuzzes the same
document on real processes.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import trio
from openapi_spec_validator import validate
from quart_trio import QuartTrio

from cluster.api.answers import NODE_ANSWERS
from cluster.ground.settings import load_settings
from cluster.runtime import BUILTIN
from cluster.runtime.admin import ADMIN_QUERIES
from cluster.runtime.runtime import Runtime
from cluster.runtime.testing import FakeMembership, FakePeers
from dashboard import create_app
from tests.support.pinned import check_pinned

JSON = dict[str, Any]
REPO = Path(__file__).resolve().parents[2]
POOLS = (
    ("rt_bdev", "d0", "810.0", "{bdev_type: ram, capacity: 256K}"),
    ("rt_bdev", "d1", "811.0", "{bdev_type: ram, capacity: 256K}"),
    ("rt_safe_bdev", "arr", "860.0", "{members: [d0, d1], max_failures: 1}"),
    ("rt_cte_core", "core", "710.0", "{targets: [{name: t0, bdev_type: ram, capacity: 64K}]}"),
)


@pytest.fixture
async def full_app(tmp_path: Path) -> AsyncIterator[QuartTrio]:
    """Node 0 of a 3-node host table (node 2 dead) with every built-in module, the repository's
    pages, and the pools of ``POOLS`` composed through the API."""
    env = {"HOME": str(tmp_path), "RT_VIZ_PATH": str(REPO / "viz")}
    settings = load_settings("embedded", env=env)
    settings = replace(
        settings,
        runtime=replace(settings.runtime, data_dir=str(tmp_path / "data"), modules=tuple(BUILTIN)),
    )
    rt = Runtime(settings, 0, membership=FakeMembership.of(3, dead=(2,)))
    FakePeers(rt)
    async with trio.open_nursery() as nursery:
        await nursery.start(rt.workers.serve)
        rt.install_admin_pool()
        app = create_app(rt, settings.viz)
        client = app.test_client()
        for mod, name, pool_id, config in POOLS:
            form = {"mod_name": mod, "pool_name": name, "pool_id": pool_id, "config": config}
            answer = await client.post("/api/pools/compose", form=form)
            assert answer.status_code == 200, await answer.get_data(as_text=True)
        rt.stats.sample()
        yield app
        nursery.cancel_scope.cancel()


async def get_json(app: QuartTrio, path: str) -> tuple[int, Any]:
    answer = await app.test_client().get(path)
    return answer.status_code, json.loads(await answer.get_data(as_text=True))


def operations(document: JSON) -> set[tuple[str, str]]:
    return {(m.upper(), path) for path, item in document["paths"].items() for m in item}


def undeclared(document: JSON) -> list[str]:
    """Operations the document flags as having no declaration."""
    return sorted(
        f"{m.upper()} {path}"
        for path, item in document["paths"].items()
        for m, op in item.items()
        if op.get("x-rt-undeclared")
    )


def check_declared(document: JSON) -> None:
    """The rule the tests hold: every route carries its declaration."""
    missing = undeclared(document)
    assert not missing, f"routes without a declaration (give them an ApiSpec): {missing}"


def body_schema(document: JSON, path: str, method: str, status: int) -> JSON:
    """The JSON schema of an answer, with the document's components reachable by $ref."""
    response = document["paths"][path][method]["responses"][str(status)]
    if "$ref" in response:
        response = document["components"]["responses"][response["$ref"].rsplit("/", 1)[1]]
    schema = response["content"]["application/json"]["schema"]
    return {**schema, "components": document["components"]}


# ---- the document ------------------------------------------------------------------------------


async def test_document_is_valid_openapi_3_1(full_app: QuartTrio) -> None:
    status, document = await get_json(full_app, "/openapi.json")
    assert status == 200
    assert document["openapi"] == "3.1.0"
    validate(document)  # openapi-spec-validator picks the 3.1 validator from the version


async def test_document_lists_exactly_the_routes_of_api_routes(full_app: QuartTrio) -> None:
    _, document = await get_json(full_app, "/openapi.json")
    _, table = await get_json(full_app, "/api/routes")
    listed = {(r["method"], r["path"]) for r in table["routes"]}
    assert operations(document) == listed
    assert {("GET", "/openapi.json"), ("GET", "/api/docs")} <= listed
    # every module's own routes are there, with the module as their tag
    for mod in BUILTIN:
        assert ("GET", f"/api/mod/{mod}/pools") in listed
    op = document["paths"]["/api/mod/rt_safe_bdev/{pool}/add_member"]["post"]
    assert op["tags"] == ["rt_safe_bdev"]


async def test_the_document_and_the_route_table_are_pinned(full_app: QuartTrio) -> None:
    """A move of code changes neither (tests/support/pinned.py)."""
    _, document = await get_json(full_app, "/openapi.json")
    _, table = await get_json(full_app, "/api/routes")
    check_pinned("openapi", document)
    for mount in table["mounts"]:  # where this checkout is does not matter
        mount["dir"] = str(Path(mount["dir"]).relative_to(REPO))
    check_pinned("routes", table)


async def test_every_route_is_declared(full_app: QuartTrio) -> None:
    _, document = await get_json(full_app, "/openapi.json")
    check_declared(document)


async def test_a_route_without_a_declaration_is_flagged_and_fails(client: Any) -> None:
    """The conftest's module (rt_thing, loaded into the runtime before its app was made) gives
    its action routes no ``ApiSpec``: they are in the document all the same, flagged, and the
    check above fails on them; its conventional routes get what ``Module`` declares."""
    response = await client.get("/openapi.json")
    document = json.loads(await response.get_data(as_text=True))
    validate(document)
    assert ("GET", "/api/mod/rt_thing/{pool}/things") in operations(document)
    assert "GET /api/mod/rt_thing/{pool}/things" in undeclared(document)
    assert "POST /api/mod/rt_thing/create" not in undeclared(document)
    with pytest.raises(AssertionError, match="rt_thing"):
        check_declared(document)
    create = document["paths"]["/api/mod/rt_thing/create"]["post"]
    fields = create["requestBody"]["content"]["application/x-www-form-urlencoded"]["schema"]
    assert {"pool_name", "pool_id", "size", "action"} <= set(fields["properties"])
    assert fields["required"] == ["pool_name"]


async def test_parameters_types_ranges_and_enums(full_app: QuartTrio) -> None:
    _, document = await get_json(full_app, "/openapi.json")
    events = {p["name"]: p for p in document["paths"]["/api/events"]["get"]["parameters"]}
    assert events["limit"]["schema"]["minimum"] == 1
    assert events["limit"]["schema"]["maximum"] == 5000
    node = document["paths"]["/api/nodes/{node}/workers"]["get"]["parameters"][0]
    assert (node["in"], node["required"]) == ("path", True)
    assert node["schema"]["examples"] == ["local", "0", "1", "2"]  # from the host table
    compose = document["paths"]["/api/pools/compose"]["post"]
    form = compose["requestBody"]["content"]["application/x-www-form-urlencoded"]["schema"]
    assert form["properties"]["mod_name"]["enum"] == ["rt_bdev", "rt_safe_bdev", "rt_cte_core"]
    assert form["properties"]["action"]["enum"] == ["", "validate", "create"]
    bdev = document["paths"]["/api/mod/rt_bdev/create"]["post"]
    bdev_form = bdev["requestBody"]["content"]["application/x-www-form-urlencoded"]["schema"]
    bdev_type = bdev_form["properties"]["bdev_type"]  # optional: empty is "left out" (ram)
    assert bdev_type["anyOf"] == [
        {"type": "string", "enum": ["ram", "file", "hbm", "pinned", "noop"]},
        {"const": ""},
    ]
    assert bdev_form["required"] == ["pool_name", "pool_id", "capacity"]
    limit = events["limit"]["schema"]  # an empty limit is a 400, not "left out"
    assert "anyOf" not in limit
    targets = document["paths"]["/api/mod/rt_cte_core/{pool}/targets"]["get"]["parameters"][0]
    assert targets["schema"]["examples"] == ["710.0"]  # this module's pools only
    links = compose["responses"]["200"]["links"]
    assert links["destroy"]["operationId"] == "post_api_pools_pool_destroy"
    assert links["destroy"]["parameters"] == {"pool": "$response.body#/pool_id"}


async def test_every_status_has_a_body_schema(full_app: QuartTrio) -> None:
    _, document = await get_json(full_app, "/openapi.json")
    for path, item in document["paths"].items():
        for method, op in item.items():
            statuses = set(op["responses"])
            assert {"200", "400", "403", "413", "503"} <= statuses, (method, path)
            if "{" in path:
                assert "404" in statuses, (method, path)
            if method == "post":
                assert "requestBody" in op or path.endswith("/destroy"), (method, path)


async def test_live_examples_are_bounded(full_app: QuartTrio) -> None:
    """A node with many pools gives at most 8 of them as examples (the document stays small)."""
    client = full_app.test_client()
    for i in range(10):
        form = {"mod_name": "rt_bdev", "pool_name": f"x{i}", "pool_id": f"{920 + i}.0",
                "config": "{bdev_type: noop, capacity: 4K}"}  # fmt: skip
        assert (await client.post("/api/pools/compose", form=form)).status_code == 200
    _, document = await get_json(full_app, "/openapi.json")
    pool = document["paths"]["/api/pools/{pool}/monitor"]["get"]["parameters"][0]
    assert pool["schema"]["examples"] == ["1.0", "710.0", "810.0", "811.0", "860.0", "900.0",
                                          "901.0", "920.0"]  # fmt: skip


def test_node_answers_cover_every_admin_query() -> None:
    assert set(NODE_ANSWERS) == set(ADMIN_QUERIES)


# ---- the answers match the document ------------------------------------------------------------


def _concrete(document: JSON, path: str, method: str) -> str:
    """``path`` with each segment set to its first example, and required query parameters."""
    query = []
    for p in document["paths"][path][method].get("parameters", []):
        value = p["schema"].get("examples", [""])[0]
        if p["in"] == "path":
            path = path.replace("{" + p["name"] + "}", str(value))
        elif p["required"]:
            query.append(f"{p['name']}={value}")
    return path + ("?" + "&".join(query) if query else "")


async def test_every_json_answer_matches_its_schema(full_app: QuartTrio) -> None:
    """Every GET answering JSON, called with the document's own examples: 200 and a body its
    schema accepts; so is a 400 of a bad parameter, and the validation failure of compose."""
    _, document = await get_json(full_app, "/openapi.json")
    seen = 0
    for path, item in sorted(document["paths"].items()):
        op = item.get("get")
        if op is None or "application/json" not in op["responses"]["200"]["content"]:
            continue
        status, body = await get_json(full_app, _concrete(document, path, "get"))
        assert status == 200, (path, body)
        jsonschema.validate(body, body_schema(document, path, "get", 200))
        seen += 1
    assert seen >= 25
    status, body = await get_json(full_app, "/api/events?limit=0")
    assert status == 400
    jsonschema.validate(body, body_schema(document, "/api/events", "get", 400))
    answer = await full_app.test_client().post("/api/pools/compose", form={"pool_id": "x"})
    body = json.loads(await answer.get_data(as_text=True))
    assert answer.status_code == 400
    jsonschema.validate(body, body_schema(document, "/api/pools/compose", "post", 400))


async def test_a_drifted_schema_is_caught(full_app: QuartTrio) -> None:
    """The check above can fail: a body missing a key its schema requires is refused."""
    _, document = await get_json(full_app, "/openapi.json")
    _, body = await get_json(full_app, "/api/health")
    del body["is_leader"]
    with pytest.raises(jsonschema.ValidationError, match="is_leader"):
        jsonschema.validate(body, body_schema(document, "/api/health", "get", 200))


# ---- the page ----------------------------------------------------------------------------------


async def test_api_docs_page_is_served_from_the_node(full_app: QuartTrio) -> None:
    client = full_app.test_client()
    page = await client.get("/api/docs")
    assert page.status_code == 200
    assert page.headers["Content-Type"].startswith("text/html")
    html = await page.get_data(as_text=True)
    assert '<script type="module" src="/viz/rt_admin/apidocs.js">' in html
    script = await client.get("/viz/rt_admin/apidocs.js")
    assert script.status_code == 200
    js = await script.get_data(as_text=True)
    assert "fetch('/openapi.json'" in js
    for text in (html, js):  # nothing from a CDN or any other origin
        assert "://" not in text.replace("http://www.w3.org/2000/svg", "")


async def test_wrong_method_answers_405_with_allow(full_app: QuartTrio) -> None:
    """Found by schemathesis's unsupported_method check: a 405 had no ``Allow`` header (RFC
    9110 requires one); it lists the route's methods, the JSON error unchanged."""
    client = full_app.test_client()
    for method, path, allowed in (
        ("TRACE", "/api/health", "GET, HEAD, OPTIONS"),
        ("DELETE", "/api/pools/compose", "GET, HEAD, OPTIONS, POST"),
        ("GET", "/api/pools/1.0/destroy", "OPTIONS, POST"),
    ):
        answer = await client.open(path, method=method)
        assert answer.status_code == 405, (method, path)
        assert answer.headers["Allow"] == allowed, (method, path)
        body = json.loads(await answer.get_data(as_text=True))
        assert body["error"].startswith(f"method {method} not allowed for {path}")
