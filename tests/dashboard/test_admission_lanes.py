"""Two defects the load test (``tests/hostile/test_load.py``, issue 16) found in admission,
pinned here where they are quick to see:

- with every request slot busy and requests queued behind them, ``/api/health`` waited its
  turn in that queue (p99 1.4 s under 500 busy clients); it now has slots of its own;
- an answer to a ``Connection: close`` request never closed the connection (quart-trio's
  cancel reached hypercorn's close inside the app's last send); now it does, at once.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
import trio
import trio.testing
from quart_trio import QuartTrio

from cluster.runtime.runtime import Runtime
from dashboard import dashboard_state, serve_dashboard
from dashboard.admission import HEALTH_SLOTS

from .conftest import call

CLOSE_WAIT = 5.0  # seconds: far more than an answer from memory takes; the bug held 60 s


async def test_health_does_not_queue_behind_busy_request_slots(
    app: QuartTrio, client: Any, autojump_clock: trio.testing.MockClock
) -> None:
    admission = dashboard_state(app).admission
    for _ in range(admission.max_threads):  # every request slot taken
        admission.requests.acquire_nowait()
    answered: list[str] = []

    async def ask(path: str) -> None:
        status, _, _ = await call(client, "GET", path)
        assert status == 200
        answered.append(path)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(ask, "/api/topology")  # queued for a request slot
        await trio.testing.wait_all_tasks_blocked()
        t0 = trio.current_time()
        for _ in range(2 * HEALTH_SLOTS):
            nursery.start_soon(ask, "/api/health")
        await trio.testing.wait_all_tasks_blocked()
        assert answered == ["/api/health"] * (2 * HEALTH_SLOTS)
        assert trio.current_time() == t0  # no time passed: nothing waited
        admission.requests.release()
    assert answered[-1] == "/api/topology"
    for _ in range(admission.max_threads - 1):
        admission.requests.release()
    assert admission.health.value == HEALTH_SLOTS


async def _read_to_end(port: int, request: bytes) -> bytes:
    stream = await trio.open_tcp_stream("127.0.0.1", port)
    async with stream:
        await stream.send_all(request)
        data = b""
        with trio.fail_after(CLOSE_WAIT):  # the node must close; it used to wait 60 s
            while chunk := await stream.receive_some(65536):
                data += chunk
    return data


@pytest.mark.parametrize("path", ["/api/health", "/api/topology", "/api/nope"])
async def test_connection_close_is_closed(
    runtime: Runtime, nursery: trio.Nursery, path: str
) -> None:
    _, port = await nursery.start(serve_dashboard, runtime, replace(runtime.settings.viz, port=0))
    request = f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n"
    data = await _read_to_end(port, request.encode())
    assert data.startswith(b"HTTP/1.1 200" if path != "/api/nope" else b"HTTP/1.1 404"), data
    assert data.endswith(b"}\n") or data.endswith(b"}"), data
