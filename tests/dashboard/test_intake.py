"""Slow and oversized requests (issue 12): a body arrives whole before its request takes a
request slot, within 1 MiB and 5 s; headers within 16 KiB and the keep-alive time.

In-process (the QuartTrio test client, trio's autojump clock) for the timing rules, and over
real sockets for what hypercorn adds (408 closes the connection, slow headers are dropped)."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest
import trio
import trio.testing
from quart_trio import QuartTrio

import dashboard.intake
import dashboard.serve
from cluster.runtime.runtime import Runtime
from dashboard import dashboard_state, serve_dashboard
from dashboard.intake import BODY_TIMEOUT, Intake, Refusal, declared_length

from .conftest import call

FORM = {"Content-Type": "application/x-www-form-urlencoded"}
SLOW = 40  # clients that send headers and part of a body, then nothing


def pool_ids(runtime: Runtime) -> list[str]:
    return [str(c.info.pool_id) for c in runtime.containers()]


async def slow_post(app: QuartTrio, results: list[tuple[float, int, Any]]) -> None:
    """A POST whose body never completes; records (when answered, status, JSON body)."""
    client = app.test_client()
    headers = {**FORM, "Content-Length": "1000"}
    async with client.request("/api/pools/compose", method="POST", headers=headers) as conn:
        await conn.send(b"mod_name=rt_thing&pool_name=slow&pool_id=650.0&x=")
        response = await conn.as_response()
        raw = await response.get_data(as_text=True)
        results.append((trio.current_time(), response.status_code, json.loads(raw)))


async def test_slow_bodies_hold_no_request_slot(
    app: QuartTrio, client: Any, runtime: Runtime, autojump_clock: trio.testing.MockClock
) -> None:
    """Issue 12: 40 slow-body POSTs held every slot and /api/health waited 9-10 s. Now they
    hold none: health answers at once, and each slow POST gets 408 at the 5 s read bound."""
    admission = dashboard_state(app).admission
    before = pool_ids(runtime)
    results: list[tuple[float, int, Any]] = []
    start = trio.current_time()
    async with trio.open_nursery() as nursery:
        for _ in range(SLOW):
            nursery.start_soon(slow_post, app, results)
        await trio.testing.wait_all_tasks_blocked()
        assert admission.statistics()["requests_in_flight"] == 0
        status, body, _ = await call(client, "GET", "/api/health")
        assert status == 200
        assert body["ok"] is True
        assert trio.current_time() == start  # no waiting at all
        assert results == []
    assert len(results) == SLOW
    for when, status, body in results:
        assert when - start == pytest.approx(BODY_TIMEOUT)
        assert (status, body) == (
            408,
            {"error": f"request body not received within {BODY_TIMEOUT:g}s"},
        )
    assert pool_ids(runtime) == before
    assert dashboard_state(app).admission.intake.held == 0


async def test_body_sent_in_pieces_within_the_bound_is_served(
    app: QuartTrio, runtime: Runtime, autojump_clock: trio.testing.MockClock
) -> None:
    client = app.test_client()
    body = b"mod_name=rt_thing&pool_name=pieces&pool_id=651.0"
    async with client.request("/api/pools/compose", method="POST", headers=FORM) as conn:
        for i in range(0, len(body), 10):
            await conn.send(body[i : i + 10])
            await trio.sleep(BODY_TIMEOUT / 10)
        await conn.send_complete()
        response = await conn.as_response()
    assert response.status_code == 200
    assert "651.0" in pool_ids(runtime)


async def test_body_over_the_cap_without_length_is_413(app: QuartTrio, runtime: Runtime) -> None:
    client = app.test_client()
    before = pool_ids(runtime)
    async with client.request("/api/pools/compose", method="POST", headers=FORM) as conn:
        for _ in range(17):
            await conn.send(b"x" * 65536)  # 17 x 64 KiB > 1 MiB, no Content-Length
        response = await conn.as_response()
    assert response.status_code == 413
    assert json.loads(await response.get_data()) == {
        "error": "request body larger than 1048576 bytes"
    }
    assert pool_ids(runtime) == before
    assert dashboard_state(app).admission.intake.held == 0


async def test_body_budget_is_503_not_unbounded_memory() -> None:
    """Bodies held by the app at once are bounded: past the budget a request is refused."""
    intake = Intake(max_body=100, timeout=5, budget=150)
    sent = [{"type": "http.request", "body": b"a" * 100, "more_body": False}]

    async def receive() -> Any:
        return sent[0]

    first = await intake.receive_body({"headers": []}, receive)
    assert first == b"a" * 100
    assert intake.held == 100
    second = await intake.receive_body({"headers": []}, receive)
    assert second == Refusal(503, "too many request bodies being received: try again")
    assert intake.held == 100
    intake.release(100)
    assert await intake.receive_body({"headers": []}, receive) == b"a" * 100


async def test_client_gone_before_body_is_dropped() -> None:
    intake = Intake()
    messages = [{"type": "http.disconnect"},
                {"type": "http.request", "body": b"ab", "more_body": True}]  # fmt: skip

    async def receive() -> Any:
        return messages.pop()

    assert await intake.receive_body({"headers": []}, receive) is None
    assert intake.held == 0


@pytest.mark.parametrize(
    ("headers", "length"),
    [
        ([(b"content-length", b"12")], 12),
        ([(b"Content-Length", b" 7 ")], 7),
        ([(b"content-length", b"-1")], None),
        ([(b"content-length", b"1" * 30)], None),
        ([(b"content-length", "\u0661".encode())], None),
        ([], None),
    ],
)
def test_declared_length(headers: list[tuple[bytes, bytes]], length: int | None) -> None:
    assert declared_length(headers) == length


# -- over real sockets ------------------------------------------------------------------------


async def read_head(stream: trio.SocketStream) -> bytes:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = await stream.receive_some(65536)
        if not chunk:
            break
        data += chunk
    return data


async def read_until_closed(stream: trio.SocketStream) -> bytes:
    data = b""
    while chunk := await stream.receive_some(65536):
        data += chunk
    return data


async def get_health(port: int) -> int:
    stream = await trio.open_tcp_stream("127.0.0.1", port)
    async with stream:
        await stream.send_all(b"GET /api/health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        head = await read_head(stream)
    return int(head.split(b" ", 2)[1])


async def test_health_answers_before_any_slow_body_client(
    runtime: Runtime, nursery: trio.Nursery, monkeypatch: pytest.MonkeyPatch
) -> None:
    """40 slow-body clients on the real server (body bound raised to 60 s so none is answered
    during the test): health is answered while every slow client is still waiting."""
    monkeypatch.setattr(dashboard.intake, "BODY_TIMEOUT", 60.0)
    _, port = await nursery.start(serve_dashboard, runtime, replace(runtime.settings.viz, port=0))
    slow = []
    for _ in range(SLOW):
        stream = await trio.open_tcp_stream("127.0.0.1", port)
        await stream.send_all(
            b"POST /api/pools/compose HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            b"Content-Type: application/x-www-form-urlencoded\r\n"
            b"Content-Length: 1000\r\n\r\nmod_name="
        )
        slow.append(stream)
    with trio.fail_after(30):  # generous: the answer needs no slot a slow client holds
        assert await get_health(port) == 200
    for stream in slow:
        answered = None
        with trio.move_on_after(0.01):  # an answer already there would be returned at once
            answered = await stream.receive_some(1)
        assert answered is None
        await stream.aclose()


async def test_slow_body_is_408_and_closed(
    runtime: Runtime, nursery: trio.Nursery, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(dashboard.intake, "BODY_TIMEOUT", 0.2)
    _, port = await nursery.start(serve_dashboard, runtime, replace(runtime.settings.viz, port=0))
    stream = await trio.open_tcp_stream("127.0.0.1", port)
    async with stream:
        await stream.send_all(
            b"POST /api/pools/compose HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100\r\n\r\nab"
        )
        with trio.fail_after(30):
            answer = await read_until_closed(stream)  # the server closes after answering
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 408")
    assert json.loads(body) == {"error": "request body not received within 0.2s"}
    assert b"x-content-type-options: nosniff" in head.lower()


async def test_slow_headers_are_dropped(
    runtime: Runtime, nursery: trio.Nursery, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Headers that never finish are bounded by the keep-alive time (hypercorn's idle timer,
    which runs until a whole request head has arrived)."""
    monkeypatch.setattr(dashboard.serve, "KEEP_ALIVE", 0.2)
    _, port = await nursery.start(serve_dashboard, runtime, replace(runtime.settings.viz, port=0))
    stream = await trio.open_tcp_stream("127.0.0.1", port)
    async with stream:
        await stream.send_all(b"GET /api/health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: a")
        with trio.fail_after(30):
            assert await read_until_closed(stream) == b""
    assert await get_health(port) == 200


@pytest.mark.parametrize(
    ("head", "status", "error"),
    [
        (b"X-Big: " + b"a" * 20000, 431, "request headers larger than 16384 bytes"),
        (b"X-A: " + b"a" * 9000 + b"\r\nX-B: " + b"b" * 9000, 431, None),
        # may arrive in pieces: h11's own refusal, answered alike (dashboard.connection)
        (b"X-Huge: " + b"a" * 100_000, 431, "request headers larger than 16384 bytes"),
    ],
)
async def test_oversized_headers_refused(
    runtime: Runtime, nursery: trio.Nursery, head: bytes, status: int | None, error: str | None
) -> None:
    _, port = await nursery.start(serve_dashboard, runtime, replace(runtime.settings.viz, port=0))
    stream = await trio.open_tcp_stream("127.0.0.1", port)
    async with stream:
        request = b"GET /api/health HTTP/1.1\r\nHost: 127.0.0.1\r\n" + head + b"\r\n\r\n"
        with trio.fail_after(30):
            try:
                await stream.send_all(request)
            except trio.BrokenResourceError:
                pass  # refused and closed before all of it was sent
            answer = await read_until_closed(stream)
    answered = int(answer.split(b" ", 2)[1])
    assert 400 <= answered < 500
    if status is not None:
        assert answered == status
        body = json.loads(answer.partition(b"\r\n\r\n")[2])
        assert list(body) == ["error"]
        if error is not None:
            assert body["error"] == error
    assert await get_health(port) == 200


async def test_overlong_request_line_is_414(client: Any) -> None:
    status, body, _ = await call(client, "GET", "/api/health?x=" + "a" * 9000)
    assert (status, body) == (414, {"error": "request path and query longer than 8192 bytes"})
    status, _, _ = await call(client, "GET", "/viz/rt_thing/" + "a" * 9000)
    assert status == 414
