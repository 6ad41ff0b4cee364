"""cluster/api: the HTTP description of the runtime's answers and of the modules' forms and
routes, as data (forms, routes, module, apidoc, answers). tests/dashboard/test_openapi.py holds
the whole document these pieces make; here each piece is held on its own."""

from __future__ import annotations

import re
from typing import Any

import pytest
import trio
from hypothesis import given
from hypothesis import strategies as st

from cluster.api import FormField, FormSpec, ModuleRoute, RouteCall, routes_of
from cluster.api.answers import NODE_ANSWERS, node_answer
from cluster.api.apidoc import POOL_ID, SIZE, STRING, ApiParam, ApiSpec, form_params, obj
from cluster.api.forms import pool_id_field, pool_name_field
from cluster.api.routes import answering_pool_gone, unknown_node
from cluster.ground.errors import BadRequest, Conflict, PoolGone
from cluster.ground.ids import PoolId
from cluster.ground.parse import ParseError, parse_size
from cluster.runtime import Module

JSON = dict[str, Any]


def call(**params: str) -> RouteCall:
    return RouteCall(runtime=None, params=params, path_args={})  # type: ignore[arg-type]


# ---- forms -------------------------------------------------------------------------------------


def test_a_form_is_data_a_page_renders() -> None:
    spec = FormSpec("rt_x", "A pool", (pool_name_field(), pool_id_field("812.0")), note="n")
    assert spec.to_json() == {
        "mod_name": "rt_x",
        "title": "A pool",
        "note": "n",
        "fields": [
            {
                "name": "pool_name",
                "label": "Pool name",
                "type": "text",
                "required": True,
                "default": "",
                "options": [],
                "placeholder": "",
                "help": "",
            },
            {
                "name": "pool_id",
                "label": "Pool ID",
                "type": "text",
                "required": True,
                "default": "812.0",
                "options": [],
                "placeholder": "800.0",
                "help": "<major>.<minor>; a free id is suggested",
            },
        ],
    }


# ---- routes ------------------------------------------------------------------------------------


def test_a_required_parameter_left_out_or_empty_is_a_bad_request() -> None:
    assert call(name="x").require("name") == "x"
    for c in (call(), call(name="")):
        with pytest.raises(BadRequest, match=r"^missing name$"):
            c.require("name")


def test_a_flag_is_a_bool_word_or_its_default_and_nothing_else() -> None:
    assert call().flag("force") is False
    assert call(force="").flag("force", default=True) is True
    assert call(force="true").flag("force") is True
    assert call(force="0").flag("force", default=True) is False
    for bad in ("maybe", "2", " 1", "yes please"):
        with pytest.raises(BadRequest, match="force"):
            call(force=bad).flag("force")


async def test_a_pool_destroyed_under_a_route_is_a_conflict_that_names_it() -> None:
    async def handler(c: RouteCall) -> JSON:
        await trio.lowlevel.checkpoint()
        raise PoolGone("812.0")

    route = answering_pool_gone(ModuleRoute("POST", "{pool}/x", handler, "doc"))
    assert (route.method, route.path, route.doc) == ("POST", "{pool}/x", "doc")
    with pytest.raises(Conflict, match=r"^pool 812\.0 was destroyed while the request ran$"):
        await route.handler(call())


def test_an_unknown_node_is_told_where_ids_are_listed() -> None:
    assert unknown_node("9x") == (
        "unknown or malformed node id: 9x (use a node id from /api/topology, or 'local')"
    )


def test_a_module_without_an_http_half_has_get_pools_alone() -> None:
    class Bare(Module):
        mod_name = "rt_bare"

    routes = routes_of(Bare(None))  # type: ignore[arg-type]
    assert [(r.method, r.path) for r in routes] == [("GET", "pools")]
    assert routes[0].api is not None
    assert routes[0].api.body is not None


# ---- the API document's vocabulary -------------------------------------------------------------


def test_form_fields_become_parameters_with_their_schemas() -> None:
    fields = [
        pool_name_field(),
        pool_id_field("800.0"),
        FormField("kind", "Kind", type="select", options=("ram", "file")),
        FormField("label", "Label", required=True, help="what to call it"),
        FormField("capacity", "Capacity", default="1M"),
    ]
    size = ApiParam("capacity", SIZE, "bytes", False)
    extra = ApiParam("action", STRING)
    params = {p.name: p for p in form_params(fields, [extra], overrides={"capacity": size})}
    assert list(params) == ["pool_name", "pool_id", "kind", "label", "capacity", "action"]
    assert params["pool_id"].schema == POOL_ID
    assert params["pool_id"].examples == ("800.0",)
    assert params["kind"].schema == {"type": "string", "enum": ["ram", "file"]}
    assert params["label"].schema == {**STRING, "minLength": 1}  # empty is missing
    assert (params["label"].doc, params["label"].required) == ("what to call it", True)
    assert params["capacity"] is size


@given(st.text(alphabet="0123456789.", min_size=1, max_size=12))
def test_the_pool_id_schema_accepts_what_pool_id_parse_accepts(text: str) -> None:
    """The pattern is the parser's grammar; only the range (each part at most 2^32-1) is the
    parser's alone, answered 400 (the schema's comment says so)."""
    try:
        PoolId.parse(text)
        parsed = True
    except Exception:
        parsed = False
    matched = bool(re.fullmatch(POOL_ID["pattern"], text))
    if matched and not parsed:
        assert max(int(part) for part in text.split(".")) > 2**32 - 1, text
    else:
        assert matched == parsed, text


@given(st.text(alphabet="0123456789.KMGTPkmgtpiIbB", min_size=1, max_size=10))
def test_the_size_schema_accepts_only_what_the_size_parser_reads(text: str) -> None:
    if re.fullmatch(SIZE["pattern"], text):
        try:
            parse_size(text, high=1 << 80)
        except ParseError as exc:  # pragma: no cover - the failure this test looks for
            pytest.fail(f"{text!r} matches the schema but does not parse: {exc}")


def test_an_object_schema_requires_its_required_keys_and_allows_more() -> None:
    schema = obj({"a": STRING}, {"b": STRING})
    assert schema["required"] == ["a"]
    assert set(schema["properties"]) == {"a", "b"}
    assert "additionalProperties" not in schema  # a field added later is no violation


def test_every_per_node_answer_starts_with_the_node_id() -> None:
    assert NODE_ANSWERS
    for query, schema in NODE_ANSWERS.items():
        assert schema == node_answer(query)
        assert next(iter(schema["properties"])) == "node_id"
        assert "node_id" in schema["required"]


def test_a_spec_without_a_body_takes_any_json() -> None:
    assert ApiSpec().body is None
    assert ApiSpec().media == "application/json"
