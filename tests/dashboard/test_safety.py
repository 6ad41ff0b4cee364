"""Safe by default: Host check (DNS rebinding), cross-site state changes (CSRF), body cap, no
CORS, security headers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cluster.runtime.runtime import Runtime
from dashboard import create_app
from dashboard.safety import SitePolicy, split_host

from .conftest import call, viz_settings


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("localhost", ("localhost", None)),
        ("LocalHost:8080", ("localhost", 8080)),
        ("[::1]:8080", ("::1", 8080)),
        ("[::1]", ("::1", None)),
        ("example.org.", ("example.org", None)),
        ("::1", ("::1", None)),
    ],
)
def test_split_host(value: str, expected: tuple[str, int | None]) -> None:
    assert split_host(value) == expected


@pytest.mark.parametrize("value", ["a:b", "[::1", "[::1]x", "h:8080x"])
def test_split_host_rejects(value: str) -> None:
    with pytest.raises(ValueError):
        split_host(value)


def test_policy_loopback() -> None:
    p = SitePolicy.for_bind("127.0.0.1", 8080)
    for ok in ("127.0.0.1:8080", "localhost:8080", "[::1]:8080", "localhost", "127.0.0.1"):
        assert p.host_ok(ok), ok
    for bad in ("evil.example:8080", "127.0.0.1:8081", "10.0.0.1:8080", "localhost.evil:8080",
                "127.0.0.2:8080", ""):  # fmt: skip
        assert not p.host_ok(bad), bad


def test_policy_specific_address() -> None:
    p = SitePolicy.for_bind("10.1.2.3", 9000)
    assert p.host_ok("10.1.2.3:9000")
    assert not p.host_ok("localhost:9000")
    assert not p.host_ok("10.1.2.4:9000")


def test_policy_wildcard() -> None:
    p = SitePolicy.for_bind("0.0.0.0", 9000)
    for ok in ("10.9.9.9:9000", "[fe80::1]:9000", "localhost:9000", "127.0.0.1:9000"):
        assert p.host_ok(ok), ok
    assert not p.host_ok("evil.example:9000")
    assert not p.host_ok("10.9.9.9:9001")


def test_policy_allowed_hosts() -> None:
    p = SitePolicy.for_bind("127.0.0.1", 8080, ("dash.internal", "proxy:443"))
    assert p.host_ok("dash.internal")
    assert p.host_ok("dash.internal:1234")
    assert p.host_ok("proxy:443")
    assert not p.host_ok("proxy:444")
    assert SitePolicy.for_bind("127.0.0.1", 8080, ("*",)).check_host is False


@pytest.mark.parametrize("host", ["evil.example", "evil.example:8080", "127.0.0.1:9999", "x:y"])
async def test_foreign_host_refused(client: Any, host: str) -> None:
    for path in ("/api/health", "/", "/viz/rt_admin/", "/nope"):
        status, body, _ = await call(client, "GET", path, headers={"Host": host})
        assert status == 403, path
        assert body["error"].startswith(f"refusing request for host '{host}'")


async def test_own_hosts_accepted(client: Any) -> None:
    for host in ("127.0.0.1:8080", "localhost:8080", "localhost", "[::1]:8080"):
        status, _, _ = await call(client, "GET", "/api/health", headers={"Host": host})
        assert status == 200, host


async def test_allowed_hosts_setting(runtime: Runtime) -> None:
    app = create_app(runtime, viz_settings(allowed_hosts=("dash.example",)))
    client = app.test_client()
    status, _, _ = await call(client, "GET", "/api/health", headers={"Host": "dash.example"})
    assert status == 200


@pytest.mark.parametrize("site", ["cross-site", "same-site"])
async def test_cross_site_post_refused(client: Any, runtime: Runtime, site: str) -> None:
    status, body, _ = await call(
        client, "POST", "/api/pools/compose", form={"mod_name": "rt_thing", "pool_name": "x",
        "pool_id": "620.0"}, headers={"Sec-Fetch-Site": site},
    )  # fmt: skip
    assert status == 403
    assert body["error"].startswith(f"refusing {site} POST")
    assert len(runtime.pools) == 1


@pytest.mark.parametrize(
    "origin", ["http://evil.example", "null", "http://localhost:9999", "https://localhost:8080"]
)
async def test_foreign_origin_post_refused(client: Any, origin: str) -> None:
    status, body, _ = await call(
        client, "POST", "/api/pools/7.0/destroy",
        headers={"Origin": origin, "Host": "localhost:8080"},
    )  # fmt: skip
    assert status == 403
    assert body["error"] == f"refusing POST from origin '{origin}': not this dashboard's origin"


async def test_same_origin_post_allowed(client: Any) -> None:
    status, body, _ = await call(
        client, "POST", "/api/pools/7.0/destroy",
        headers={"Origin": "http://localhost:8080", "Host": "localhost:8080",
                 "Sec-Fetch-Site": "same-origin"},
    )  # fmt: skip
    assert (status, body) == (404, {"error": "no pool with id 7.0"})  # reached the handler


async def test_cross_site_get_is_read_only_and_allowed(client: Any) -> None:
    status, _, response = await call(
        client, "GET", "/api/health", headers={"Sec-Fetch-Site": "cross-site",
                                               "Origin": "http://evil.example"},
    )  # fmt: skip
    assert status == 200
    assert not any(h.lower().startswith("access-control-") for h, _ in response.headers.items())


async def test_no_cors_even_on_preflight(client: Any) -> None:
    response = await client.options(
        "/api/pools/compose",
        headers={"Origin": "http://evil.example", "Access-Control-Request-Method": "POST"},
    )
    assert not any(h.lower().startswith("access-control-") for h, _ in response.headers.items())


async def test_security_headers(client: Any) -> None:
    for path in ("/api/health", "/", "/nope"):
        response = await client.get(path)
        assert response.headers["X-Content-Type-Options"] == "nosniff"
        assert response.headers["X-Frame-Options"] == "DENY"


async def test_body_over_1mib_is_413(client: Any, runtime: Runtime) -> None:
    big = "pool_name=" + "x" * (1024 * 1024)
    status, body, _ = await call(
        client, "POST", "/api/pools/compose", data=big,
        headers={"Content-Type": "application/x-www-form-urlencoded"},
    )  # fmt: skip
    assert (status, body) == (413, {"error": "request body larger than 1048576 bytes"})
    status, _, _ = await call(
        client, "POST", "/api/pools/7.0/destroy", data=b"z" * (1024 * 1024 + 1),
        headers={"Content-Type": "application/octet-stream"},
    )  # fmt: skip
    assert status == 413


async def test_body_of_exactly_1mib_is_parsed(client: Any) -> None:
    prefix = "mod_name=rt_thing&pool_id=621.0&action=validate&pool_name=n&pad="
    data = prefix + "n" * (1024 * 1024 - len(prefix))
    status, body, _ = await call(
        client, "POST", "/api/pools/compose", data=data,
        headers={"Content-Type": "application/x-www-form-urlencoded"},
    )  # fmt: skip
    assert (status, body) == (200, {"ok": True})


def test_policy_for_ipv6_loopback(tmp_path: Path) -> None:
    p = SitePolicy.for_bind("::1", 8080)
    assert p.host_ok("[::1]:8080")
    assert p.host_ok("localhost:8080")
