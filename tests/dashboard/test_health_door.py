"""``GET /api/health`` at the ASGI door (``dashboard.door``): the same answer as the app's,
byte for byte and header for header, counted the same; anything but the plain request goes on
to the app, a refused Host included."""

from __future__ import annotations

from typing import Any

import pytest
import trio
from quart_trio import QuartTrio

from dashboard import dashboard_state

Answer = tuple[int, list[tuple[bytes, bytes]], bytes]


async def asgi(
    app: QuartTrio, method: str, path: str, query: bytes = b"", host: str = "127.0.0.1"
) -> Answer:
    """One request through the app's whole ASGI stack: (status, headers, body)."""
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": query,
        "root_path": "",
        "headers": [(b"host", host.encode())],
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 8080),
        "extensions": {},
    }
    sent: list[dict[str, Any]] = []
    asked = 0

    async def receive() -> dict[str, Any]:
        nonlocal asked
        asked += 1
        if asked == 1:
            return {"type": "http.request", "body": b"", "more_body": False}
        await trio.sleep_forever()
        raise AssertionError("unreachable")

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    with trio.fail_after(5):
        await app.asgi_app(scope, receive, send)
    start = next(m for m in sent if m["type"] == "http.response.start")
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return start["status"], list(start["headers"]), body


def _norm(headers: list[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
    return sorted((k.lower(), v) for k, v in headers)


async def test_the_door_answers_as_the_app_does(app: QuartTrio) -> None:
    door = await asgi(app, "GET", "/api/health")
    by_app = await asgi(app, "GET", "/api/health/")  # a trailing slash: past the door
    assert door[0] == by_app[0] == 200
    assert door[2] == by_app[2]
    assert b'"ok":true' in door[2]
    assert _norm(door[1]) == _norm(by_app[1])
    head = await asgi(app, "HEAD", "/api/health")
    head_by_app = await asgi(app, "HEAD", "/api/health/")
    assert (head[0], head[2], _norm(head[1])) == (200, b"", _norm(head_by_app[1]))


async def test_the_door_is_counted_under_the_route(app: QuartTrio) -> None:
    metrics = dashboard_state(app).metrics
    before = metrics.count  # the method is called; count the calls it gets
    seen: list[tuple[Any, ...]] = []
    metrics.count = lambda *args: (seen.append(args), before(*args))[1]  # type: ignore[method-assign]
    await asgi(app, "GET", "/api/health")
    await asgi(app, "GET", "/api/health/")
    assert seen == [("/api/health", "GET", 200), ("/api/health", "GET", 200)]


@pytest.mark.parametrize(
    ("method", "path", "query", "host", "status"),
    [
        ("GET", "/api/health", b"", "evil.example", 403),  # the Host check holds
        ("GET", "/api/health", b"x=1", "127.0.0.1", 200),  # a query: the app's answer
        ("POST", "/api/health", b"", "127.0.0.1", 405),
    ],
    ids=["refused-host", "query", "post"],
)
async def test_what_the_door_passes_on_the_app_answers(
    app: QuartTrio, method: str, path: str, query: bytes, host: str, status: int
) -> None:
    door = app.asgi_app.door  # type: ignore[attr-defined]
    took = door.takes
    taken: list[bool] = []

    def watched(scope: Any) -> bool:
        taken.append(took(scope))
        return taken[-1]

    door.takes = watched
    got = await asgi(app, method, path, query, host)
    assert taken == [False]
    assert got[0] == status, got
