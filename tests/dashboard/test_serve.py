"""serve_dashboard over real sockets (in this process): port 0, a taken port, HEAD, and the
request slots under forwards to a silent peer."""

from __future__ import annotations

from dataclasses import replace

import httpx
import pytest
import trio

from cluster.runtime.runtime import Runtime
from cluster.runtime.testing import FakePeers
from dashboard import serve_dashboard
from tests.support import hold_port, wait_for_async


async def test_port_zero_reports_bound_port(runtime: Runtime, nursery: trio.Nursery) -> None:
    viz = replace(runtime.settings.viz, port=0)
    bind, port = await nursery.start(serve_dashboard, runtime, viz)
    assert bind == "127.0.0.1"
    assert port > 0
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as http:
        r = await http.get("/api/health")
        assert r.status_code == 200
        assert r.headers["content-type"] == "application/json"
        assert r.json()["node_id"] == 0
        assert "server" not in r.headers
        head = await http.head("/api/health")
        assert head.status_code == 200
        assert head.content == b""
        r = await http.get("/api/health", headers={"Host": "evil.example"})
        assert r.status_code == 403
        r = await http.get(f"http://localhost:{port}/api/health")
        assert r.status_code == 200


async def test_declared_oversized_body_refused_unread(
    runtime: Runtime, nursery: trio.Nursery
) -> None:
    _, port = await nursery.start(serve_dashboard, runtime, replace(runtime.settings.viz, port=0))
    stream = await trio.open_tcp_stream("127.0.0.1", port)
    async with stream:
        await stream.send_all(
            b"POST /api/pools/compose HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            b"Content-Type: application/x-www-form-urlencoded\r\n"
            b"Content-Length: 5000000\r\n\r\n"
        )  # and no body: the answer must not wait for it
        with trio.fail_after(5):
            head = b""
            while b"\r\n\r\n" not in head:
                head += await stream.receive_some(4096)
    assert head.startswith(b"HTTP/1.1 413")


async def test_taken_port_is_oserror(runtime: Runtime, nursery: trio.Nursery) -> None:
    with hold_port() as port:
        viz = replace(runtime.settings.viz, port=port)
        with pytest.raises(OSError) as info:
            await nursery.start(serve_dashboard, runtime, viz)
        assert info.type is not BaseExceptionGroup


async def test_health_answers_while_forwards_hang(runtime: Runtime, nursery: trio.Nursery) -> None:
    """max_threads=4: three slots for forwards, one kept for local routes; 8 forwards to a
    silent peer are in flight or queued, and local routes answer while every forward slot is
    held and before any forward has ended: by the order of events, not by a stopwatch (the
    peer stays silent for a minute, far past anything a slow machine adds, then the test ends
    the silence as the bound would)."""
    peers = FakePeers(runtime)
    peers.timeout = 60.0
    peers.hang(1)
    viz = replace(runtime.settings.viz, port=0, max_threads=4)
    _, port = await nursery.start(serve_dashboard, runtime, viz)
    base = f"http://127.0.0.1:{port}"
    answers: list[tuple[int, str]] = []
    limits = httpx.Limits(max_connections=20)
    async with httpx.AsyncClient(base_url=base, limits=limits, timeout=90) as http:

        async def forward() -> None:
            r = await http.get("/api/nodes/1/workers")
            answers.append((r.status_code, r.json()["error"]))

        async with trio.open_nursery() as inner:
            for _ in range(8):
                inner.start_soon(forward)
            await wait_for_async(
                "three forwards in flight at the silent peer (every forward slot)",
                lambda: peers.in_flight,
                until=lambda n: n >= 3,
                timeout=10,
                interval=0.01,
            )
            for path in ("/api/health", "/api/nodes/local/workers", "/api/topology"):
                r = await http.get(path)
                assert r.status_code == 200
            assert peers.in_flight == 3  # no fourth forward got past the slots
            assert answers == []  # the local routes did not wait behind any forward
            peers.time_out_now(1)
    assert answers == [(503, "monitor 'workers' timed out after 60s")] * 8
