"""The parameter map: query string joined with a urlencoded form body, query winning."""

from __future__ import annotations

from typing import Any

import pytest

from cluster.ground.errors import BadRequest
from dashboard.params import parse_pairs

from .conftest import call

FORM = {"Content-Type": "application/x-www-form-urlencoded"}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a=1&b=2", {"a": "1", "b": "2"}),
        ("a+b=c+d", {"a b": "c d"}),
        ("flag", {"flag": ""}),
        ("flag&x=", {"flag": "", "x": ""}),
        ("a=1&a=2", {"a": "1"}),
        ("q=%2B%20%26", {"q": "+ &"}),
        ("", {}),
        ("a=%E2%82%AC", {"a": "€"}),
    ],
)
def test_parse_pairs(text: str, expected: dict[str, str]) -> None:
    assert parse_pairs(text, "t") == expected


def test_parse_pairs_rejects_bad_utf8() -> None:
    with pytest.raises(BadRequest, match="malformed request"):
        parse_pairs("a=%ff", "query string")


async def _echo(client: Any, path: str, **kw: Any) -> tuple[int, Any]:
    await call(
        client, "POST", "/api/mod/rt_thing/create", form={"pool_name": "e", "pool_id": "630.0"}
    )
    status, body, _ = await call(client, "GET", path, **kw)
    return status, body


async def test_query_wins_over_form(client: Any, runtime: Any) -> None:
    await call(
        client, "POST", "/api/mod/rt_thing/create", form={"pool_name": "e", "pool_id": "630.0"}
    )
    # a POST route that echoes: poke echoes `name`
    status, body, _ = await call(
        client, "POST", "/api/mod/rt_thing/630.0/poke?name=from+query",
        data="name=from+form&other=1", headers=FORM,
    )  # fmt: skip
    assert (status, body["name"]) == (200, "from query")
    status, body, _ = await call(
        client, "POST", "/api/mod/rt_thing/630.0/poke", data="name=from+form", headers=FORM
    )
    assert body["name"] == "from form"


async def test_non_form_body_is_not_parsed(client: Any) -> None:
    await call(
        client, "POST", "/api/mod/rt_thing/create", form={"pool_name": "e", "pool_id": "631.0"}
    )
    status, body, _ = await call(
        client, "POST", "/api/mod/rt_thing/631.0/poke", data="name=x",
        headers={"Content-Type": "text/plain"},
    )  # fmt: skip
    assert (status, body) == (400, {"error": "missing name"})


async def test_malformed_bodies_are_400(client: Any) -> None:
    status, body, _ = await call(
        client, "POST", "/api/pools/compose", data=b"a=\xff\xfe", headers=FORM
    )
    assert (status, body) == (400, {"error": "malformed request: form body is not UTF-8"})
    status, body, _ = await call(client, "POST", "/api/pools/compose", data="a=%ff", headers=FORM)
    assert status == 400
    assert body["error"].startswith("malformed request: form body")
    status, body, _ = await call(client, "GET", "/api/pools/1.0/monitor?query=%ff")
    assert status == 400
    assert body["error"].startswith("malformed request: query string")


async def test_form_charset_parameter_accepted(client: Any) -> None:
    status, body, _ = await call(
        client, "POST", "/api/pools/compose",
        data="mod_name=rt_thing&pool_name=cs&pool_id=632.0&action=validate",
        headers={"Content-Type": "application/x-www-form-urlencoded; charset=UTF-8"},
    )  # fmt: skip
    assert (status, body) == (200, {"ok": True})
