"""Hostile HTTP input (issue 12): every path, query, header and body of hostile shape is a 4xx
with an ``{"error": ...}`` body (never a 500), and a refused request changes nothing.

The route table comes from the app itself (``/api/routes``, plus the asset mounts); requests
are ASGI calls on ``create_app`` over the runtime fakes, so any path, query bytes and header
bytes can be sent. Two apps: the test module ``rt_thing``, and every built-in module with a
few pools composed, so routes with ``{pool}`` reach their handlers."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any
from urllib.parse import quote

import trio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from quart_trio import QuartTrio

from cluster.ground.settings import load_settings
from cluster.runtime import BUILTIN
from cluster.runtime.runtime import Runtime
from cluster.runtime.testing import FakeMembership, FakePeers
from dashboard import create_app

from .conftest import make_runtime

Header = tuple[bytes, bytes]
HOST: Header = (b"host", b"127.0.0.1")
FORM: Header = (b"content-type", b"application/x-www-form-urlencoded")

HOSTILE = [
    "", " ", "a" * 5000, "9" * 5000, "\u00e9t\u00e9", "\U0001f4a5", "\x00", "\x7f", "\t",
    "..", "../..", ".", "-1", "-5", "-0", "1.5", "1e400", "nan", "inf", " 1 ", "1 ", "0x10",
    "1_000", "\u0661", "\uff11", "1.0.0", "1.-1", "18446744073709551616.0",
    "9223372036854775808.0", "4294967296.0", "local", "self", "0", "1", "2", "9", "a/b", "%",
    "%zz", "%00", "1.0", "<b>", "'", '"', "\\", ":", "a:b", "~", "*", "1.0%00",
]  # fmt: skip
RAW_QUERIES = [
    b"%ff", b"routing=%ff", b"query=%c3%28", b"%", b"=", b"&&&", b";;", b"a=1&a=2",
    b"query=workers&routing=broadcast&routing=local", b"min_event_id=" + b"9" * 5000,
    b"min_event_id=-1", b"min_event_id=1.5", b"min_event_id=nan", b"min_event_id=%00",
    b"%00=%00", b"query=" + b"%ff" * 10, b"query=x&routing=range:0:-1",
    b"query=x&routing=direct_hash:-1", b"query=x&routing=range:99999999999999999999:1",
    b"query=x&routing=direct_id:%ef%bc%91", b"query=x&routing=physical:1e3",
    b"capacity=1e400", b"capacity=-1", b"capacity=1P", b"capacity=nan", b"max_failures=-1",
    b"name=%00", b"pool_id=-1.0", b"pool_id=1.0", b"config=%ff", b"config=a:+%26x+[*x]",
    b"member_pool_id=-1.0", b"member_pool_id=" + b"9" * 3000, b"failed_pool_id=nan",
    b"mod_name=rt_thing&pool_name=%00&pool_id=1.0", b"action=%ff", b"x=" + b"a" * 7000,
    b"&".join(b"k%d=v" % i for i in range(1200)),
]  # fmt: skip
STRANGE_HEADERS: list[list[Header]] = [
    [(b"host", b"evil.example")], [(b"host", b"127.0.0.1:99999")], [(b"host", b"[::1")],
    [(b"host", "127.0.0.1:\u0663".encode())], [(b"host", b"a" * 5000)], [(b"host", b"")],
    [HOST, (b"origin", b"null")], [HOST, (b"sec-fetch-site", b"cross-site")],
    [HOST, (b"content-type", b"application/x-www-form-urlencoded; charset=latin-1")],
    [HOST, (b"content-type", b"\xff\xfe")], [HOST, (b"content-length", b"0")],
    [HOST, (b"x-" + b"a" * 100, b"\x00\xff" * 100)], [HOST, HOST],
]  # fmt: skip
EXTRA_METHODS = ("HEAD", "OPTIONS", "PUT", "DELETE", "PATCH", "BREW")
ALWAYS_FAILS = {"/api/mod/rt_thing/boom"}  # the test module's deliberately failing route
ASSET_ROUTE = {"method": "GET", "path": "/viz/{mod}/{rest}"}


@dataclass(frozen=True, slots=True)
class Answer:
    status: int
    headers: dict[bytes, bytes]
    body: bytes


async def asgi(
    app: QuartTrio,
    method: str,
    path: str,
    query: bytes = b"",
    headers: Sequence[Header] = (HOST,),
    body: bytes = b"",
) -> Answer:
    """One request as hypercorn would hand it to the app (``path`` percent-decoded)."""
    scope: Any = {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": method,
        "scheme": "http", "path": path, "raw_path": quote(path, safe="/").encode(),
        "query_string": query, "root_path": "", "headers": list(headers),
        "client": ("127.0.0.1", 50000), "server": ("127.0.0.1", 8080), "extensions": {},
    }  # fmt: skip
    sent = [{"type": "http.request", "body": body, "more_body": False}]
    out: list[dict[str, Any]] = []

    async def receive() -> Any:
        if sent:
            return sent.pop()
        await trio.sleep_forever()

    async def send(message: Any) -> None:
        out.append(message)

    with trio.fail_after(30):
        await app(scope, receive, send)
    start = next(m for m in out if m["type"] == "http.response.start")
    data = b"".join(m.get("body", b"") for m in out if m["type"] == "http.response.body")
    return Answer(start["status"], dict(start["headers"]), data)


def state(runtime: Runtime, peers: FakePeers) -> Any:
    """What no refused request may change: the pool table, each pool's own view (but the
    admin pool's, which counts the monitor tasks run), the peers asked."""
    pools = json.dumps(runtime.pools_json(), sort_keys=True, default=str)
    own = [c.stats() for c in runtime.containers() if c.info.mod_name != "rt_admin"]
    stats = json.dumps(own, sort_keys=True, default=str)
    return pools, stats, len(peers.calls)


def check(answer: Answer, method: str, before: Any, after: Any, what: str) -> None:
    assert answer.status != 500, (what, answer.body[:300])
    assert answer.status < 500, (what, answer.status, answer.body[:300])
    if answer.status >= 400:
        assert after == before, what
        if method != "HEAD":
            assert answer.headers[b"content-type"] == b"application/json", what
            body = json.loads(answer.body)
            assert set(body) in ({"error"}, {"ok", "errors"}), (what, body)


def fill(pattern: str, values: dict[str, str]) -> str:
    return re.sub(r"\{(\w+)\}", lambda m: values[m.group(1)], pattern)


async def route_table(app: QuartTrio) -> list[dict[str, str]]:
    answer = await asgi(app, "GET", "/api/routes")
    routes = json.loads(answer.body)["routes"]
    return [r for r in routes if r["path"] not in ALWAYS_FAILS] + [ASSET_ROUTE]


@asynccontextmanager
async def open_app(runtime: Runtime) -> AsyncIterator[tuple[QuartTrio, FakePeers]]:
    peers = FakePeers(runtime)
    async with trio.open_nursery() as nursery:
        await nursery.start(runtime.workers.serve)
        runtime.install_admin_pool()
        yield create_app(runtime, runtime.settings.viz), peers
        nursery.cancel_scope.cancel()


def builtin_runtime(tmp_path: Path) -> Runtime:
    settings = load_settings("embedded", env={"HOME": str(tmp_path)})
    runtime_settings = replace(
        settings.runtime, data_dir=str(tmp_path / "data"), modules=tuple(BUILTIN)
    )
    settings = replace(settings, runtime=runtime_settings)
    return Runtime(settings, 0, membership=FakeMembership.of(3, dead=(2,)))


async def compose(app: QuartTrio, query: str) -> None:
    answer = await asgi(app, "POST", "/api/pools/compose", query.encode())
    assert answer.status == 200, answer.body


async def compose_builtin_pools(app: QuartTrio) -> list[str]:
    for i in range(4):
        await compose(app, f"mod_name=rt_bdev&pool_name=b{i}&pool_id=80{i}.0"
                      "&config=bdev_type:+ram%0Acapacity:+1M")  # fmt: skip
    await compose(app, "mod_name=rt_safe_bdev&pool_name=arr&pool_id=900.0"
                  "&config=members:+b0,+b1%0Amax_failures:+1")  # fmt: skip
    await compose(app, "mod_name=rt_cte_core&pool_name=cte&pool_id=950.0")
    return ["800.0", "801.0", "900.0", "950.0", "1.0"]


async def sweep(app: QuartTrio, runtime: Runtime, peers: FakePeers, pools: list[str]) -> int:
    """Every route x every hostile value of each path parameter, then every hostile query
    and header set on each route; returns the number of requests sent."""
    sent = 0
    defaults = {"node": "local", "pool": pools[0], "mod": "rt_admin", "rest": "index.html"}
    for route in await route_table(app):
        names = re.findall(r"\{(\w+)\}", route["path"])
        cases: list[tuple[dict[str, str], bytes, Sequence[Header]]] = []
        for name in names:
            for value in [*HOSTILE, *pools]:
                cases.append(({**defaults, name: value}, b"", (HOST, FORM)))
        for query in RAW_QUERIES:
            cases.append((defaults, query, (HOST, FORM)))
        for strange in STRANGE_HEADERS:
            cases.append((defaults, b"", strange))
        for values, query, headers in cases:
            path = fill(route["path"], values)
            before = state(runtime, peers)
            answer = await asgi(app, route["method"], path, query, headers)
            check(answer, route["method"], before, state(runtime, peers),
                  f"{route['method']} {path[:200]}?{query[:200]!r} {headers!r:.200}")  # fmt: skip
            sent += 1
    return sent


async def test_sweep_fake_module_routes(tmp_path: Path, viz_root: Path) -> None:
    """Issue 12: ``/viz/<mod>/<5,000 characters>`` answered 500 (ENAMETOOLONG). Now every
    hostile value of every path parameter, query and header set is a JSON 4xx or a 200."""
    runtime = make_runtime(tmp_path, viz_root)
    async with open_app(runtime) as (app, peers):
        answer = await asgi(app, "GET", "/viz/rt_thing/" + "a" * 5000)
        assert answer.status == 404
        assert json.loads(answer.body)["error"].startswith("no route or asset for /viz/rt_thing/")
        sent = await sweep(app, runtime, peers, ["1.0", "600.0"])
    assert sent > 1000


async def test_sweep_builtin_module_routes(tmp_path: Path) -> None:
    runtime = builtin_runtime(tmp_path)
    async with open_app(runtime) as (app, peers):
        pools = await compose_builtin_pools(app)
        sent = await sweep(app, runtime, peers, pools)
    assert sent > 1000


async def test_other_methods_are_json_405_or_answered(tmp_path: Path, viz_root: Path) -> None:
    runtime = make_runtime(tmp_path, viz_root)
    async with open_app(runtime) as (app, peers):
        for route in await route_table(app):
            path = fill(route["path"], {"node": "local", "pool": "1.0", "mod": "rt_admin",
                                        "rest": "index.html"})  # fmt: skip
            for method in EXTRA_METHODS:
                before = state(runtime, peers)
                answer = await asgi(app, method, path)
                check(answer, method, before, state(runtime, peers), f"{method} {path}")
                if method not in ("HEAD", "OPTIONS"):
                    assert answer.status in (404, 405), (method, path)


# -- generated input --------------------------------------------------------------------------

KEYS = st.sampled_from(
    ["routing", "query", "min_event_id", "mod_name", "pool_name", "pool_id", "pool_query",
     "config", "action", "name", "size", "bdev_type", "capacity", "members", "max_failures",
     "member_pool_id", "failed_pool_id", "as_parity", "node_id"]
) | st.text(max_size=8)  # fmt: skip
VALUES = st.sampled_from(HOSTILE) | st.text(max_size=40)
RAW_BITS = st.sampled_from([b"%ff", b"%", b"%zz", b"%00", b"%c3%28", b"=", b"&", b"+", b";"])


@st.composite
def queries(draw: st.DrawFn) -> bytes:
    parts = []
    for _ in range(draw(st.integers(0, 5))):
        key, value = draw(KEYS), draw(VALUES)
        part = f"{quote(key, safe='')}={quote(value, safe='')}".encode()
        if draw(st.booleans()):
            part += draw(RAW_BITS)
        parts.append(part)
    return b"&".join(parts)


@st.composite
def requests(draw: st.DrawFn, routes: list[dict[str, str]]) -> tuple[str, str, bytes, Any]:
    route = draw(st.sampled_from(routes))
    values = {n: draw(VALUES) for n in re.findall(r"\{(\w+)\}", route["path"])}
    method = draw(st.sampled_from([route["method"], route["method"], "HEAD", "POST"]))
    headers = [HOST, *draw(st.lists(st.tuples(st.sampled_from([b"content-type", b"origin",
               b"x-any", b"content-length"]), st.binary(max_size=30)), max_size=2))]  # fmt: skip
    body = draw(st.one_of(st.binary(max_size=200), queries()))
    return method, fill(route["path"], values), draw(queries()), (headers, body)


ROUTES = [
    {"method": "GET", "path": "/api/nodes/{node}/workers"},
    {"method": "GET", "path": "/api/nodes/{node}/system_stats"},
    {"method": "GET", "path": "/api/pools/{pool}/monitor"},
    {"method": "POST", "path": "/api/pools/{pool}/destroy"},
    {"method": "GET", "path": "/api/pools/compose"},
    {"method": "POST", "path": "/api/pools/compose"},
    {"method": "GET", "path": "/api/mod/rt_thing/{pool}/things"},
    {"method": "POST", "path": "/api/mod/rt_thing/{pool}/poke"},
    {"method": "POST", "path": "/api/mod/rt_thing/create"},
    {"method": "GET", "path": "/api/mod/{mod}/pools"},
    {"method": "GET", "path": "/viz/{mod}/{rest}"},
    {"method": "GET", "path": "/{rest}"},
]


@given(request=requests(ROUTES))
@settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
async def test_generated_requests_never_500(
    tmp_path: Path, viz_root: Path, request: tuple[str, str, bytes, Any]
) -> None:
    method, path, query, (headers, body) = request
    runtime = make_runtime(tmp_path, viz_root)
    async with open_app(runtime) as (app, peers):
        routes = {r["path"] for r in await route_table(app)}
        assert {r["path"] for r in ROUTES[:-3]} <= routes  # the generated table is the app's
        before = state(runtime, peers)
        answer = await asgi(app, method, path, query, headers, body)
        check(answer, method, before, state(runtime, peers), f"{method} {path}?{query!r}")
