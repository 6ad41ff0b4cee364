"""File-descriptor pressure (issue 12): a dashboard whose process is out of descriptors keeps
serving what needs none, answers 503 for what does (an asset file), and accepts connections
again once descriptors are free; nothing in it dies.

The process's soft ``RLIMIT_NOFILE`` is lowered to a little above the descriptors in use and
the rest is filled with ``/dev/null``, then everything is given back, whatever happens."""

from __future__ import annotations

import errno
import json
import logging
import os
import resource
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

import h11
import pytest
import trio
from quart_trio import QuartTrio

from cluster.runtime.runtime import Runtime
from dashboard import serve_dashboard
from tests.support import wait_for_async

from .conftest import call

pytestmark = pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc")


@contextmanager
def descriptors_exhausted() -> Iterator[None]:
    """Until exit, opening any descriptor fails with EMFILE."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    top = max(int(fd) for fd in os.listdir("/proc/self/fd"))
    filler: list[int] = []
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(soft, top + 32), hard))
    try:
        while True:
            try:
                filler.append(os.open(os.devnull, os.O_RDONLY))
            except OSError as exc:
                if exc.errno != errno.EMFILE:
                    raise
                break
        yield
    finally:
        for fd in filler:
            os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


async def test_asset_under_emfile_is_503_and_local_routes_answer(
    app: QuartTrio, client: Any
) -> None:
    with descriptors_exhausted():
        status, body, _ = await call(client, "GET", "/viz/rt_thing/APP.JS")
        assert (status, body) == (503, {"error": "node is short of resources (EMFILE): try again"})
        status, body, _ = await call(client, "GET", "/api/health")
        assert status == 200
    response = await client.get("/viz/rt_thing/APP.JS")
    assert response.status_code == 200


class Client:
    """HTTP/1.1 over one already-open stream (no new descriptor per request)."""

    def __init__(self, stream: trio.SocketStream) -> None:
        self.stream = stream
        self.h11 = h11.Connection(h11.CLIENT)

    async def get(self, path: str) -> tuple[int, bytes]:
        if self.h11.our_state is h11.DONE:
            self.h11.start_next_cycle()
        request = h11.Request(method="GET", target=path, headers=[("Host", "127.0.0.1")])
        await self.stream.send_all(self.h11.send(request) + self.h11.send(h11.EndOfMessage()))
        status, body = 0, b""
        while True:
            event = self.h11.next_event()
            if event is h11.NEED_DATA:
                self.h11.receive_data(await self.stream.receive_some(65536))
            elif isinstance(event, h11.Response):
                status = event.status_code
            elif isinstance(event, h11.Data):
                body += event.data
            elif isinstance(event, h11.EndOfMessage):
                return status, body


class Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


async def test_server_survives_emfile_and_accepts_again(
    runtime: Runtime, nursery: trio.Nursery
) -> None:
    _, port = await nursery.start(serve_dashboard, runtime, replace(runtime.settings.viz, port=0))
    old = Client(await trio.open_tcp_stream("127.0.0.1", port))
    assert (await old.get("/api/health"))[0] == 200  # accepted before the pressure
    late = trio.socket.socket()  # its descriptor exists before the pressure
    accepts = Records()
    logging.getLogger("trio.serve_listeners").addHandler(accepts)
    try:
        with descriptors_exhausted():
            await late.connect(("127.0.0.1", port))  # queued: accept() fails with EMFILE
            await wait_for_async(
                "the listener to log that accept() failed with EMFILE",
                lambda: list(accepts.messages),  # all of them, for the timeout's message
                until=lambda ms: any("EMFILE" in m or "Too many open files" in m for m in ms),
                timeout=30,
                interval=0.01,
            )
            status, body = await old.get("/viz/rt_admin/index.html")
            assert (status, json.loads(body)) == (
                503, {"error": "node is short of resources (EMFILE): try again"}
            )  # fmt: skip
            assert (await old.get("/api/health"))[0] == 200
        with trio.fail_after(30):  # accepted once descriptors are free again
            status, _ = await Client(trio.SocketStream(late)).get("/api/health")
        assert status == 200
    finally:
        logging.getLogger("trio.serve_listeners").removeHandler(accepts)
        late.close()
        await old.stream.aclose()
