"""What hypercorn answers on its own, and how its connections close (``dashboard.connection``):
h11's refusals carry an ``{"error": ...}`` body, and a close racing the app's last write is no
error. Over real sockets in this process, and with a controlled stream for the race."""

from __future__ import annotations

import inspect
import json
import logging
from dataclasses import replace
from typing import Any

import h11
import hypercorn.protocol
import hypercorn.trio.run
import pytest
import trio
import trio.testing
from hypercorn.config import Config
from hypercorn.events import Closed, Event, RawData
from hypercorn.protocol.h11 import H11Protocol

from cluster.runtime.runtime import Runtime
from dashboard import serve_dashboard
from dashboard.connection import CloseSafeTCPServer, JsonRefusalProtocol, install, refusal_reason

HEAD = b"GET /api/health HTTP/1.1\r\nHost: 127.0.0.1\r\n"
POST = b"POST /api/pools/compose HTTP/1.1\r\nHost: 127.0.0.1\r\n"
# What the hostile-input suite found answered with hypercorn's empty body (issue 12).
REFUSED = {
    "no Host": (b"GET /api/health HTTP/1.1\r\n\r\n", 400, "Host"),
    "two Hosts": (HEAD + b"Host: 127.0.0.1\r\n\r\n", 400, "Host"),
    "Host with NUL": (b"GET / HTTP/1.1\r\nHost: 127.0.0.1\x00x\r\n\r\n", 400, "header line"),
    "NUL in a header": (HEAD + b"X-A: a\x00b\r\n\r\n", 400, "header line"),
    "header without a colon": (HEAD + b"no colon here\r\n\r\n", 400, "header line"),
    "method with NUL": (b"GE\x00T / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", 400, "request line"),
    "TLS hello": (bytes.fromhex("16030100a5010000a10303") + b"\x00" * 40, 400, "request line"),
    "Content-Length abc": (POST + b"Content-Length: abc\r\n\r\n", 400, "Content-Length"),
    "Content-Length -1": (POST + b"Content-Length: -1\r\n\r\n", 400, "Content-Length"),
    "two Content-Lengths": (
        POST + b"Content-Length: 3\r\nContent-Length: 4\r\n\r\nabcd",
        400,
        "Content-Length",
    ),
    "chunked, bad size": (POST + b"Transfer-Encoding: chunked\r\n\r\nzz\r\nab\r\n", 400, "chunk"),
    "Transfer-Encoding gzip": (POST + b"Transfer-Encoding: gzip\r\n\r\n", 501, "chunked"),
}


async def exchange(port: int, request: bytes) -> tuple[bytes, bytes]:
    """(head, body) of the answer to ``request``; the server closes after it."""
    stream = await trio.open_tcp_stream("127.0.0.1", port)
    answer = b""
    async with stream:
        with trio.fail_after(30):  # generous: an answer is immediate
            try:
                await stream.send_all(request)
            except trio.BrokenResourceError:
                pass  # refused and closed before all of it was sent
            while chunk := await stream.receive_some(65536):
                answer += chunk
    head, _, body = answer.partition(b"\r\n\r\n")
    return head, body


@pytest.mark.parametrize("name", sorted(REFUSED))
async def test_h11_refusals_are_json(runtime: Runtime, nursery: trio.Nursery, name: str) -> None:
    """Issue 12: hypercorn answered these 400/501 with an empty body."""
    request, status, mentions = REFUSED[name]
    _, port = await nursery.start(serve_dashboard, runtime, replace(runtime.settings.viz, port=0))
    head, body = await exchange(port, request)
    lines = head.lower().split(b"\r\n")
    assert lines[0].startswith(f"http/1.1 {status} ".encode()), (name, head)
    assert b"content-type: application/json" in lines
    assert b"connection: close" in lines
    answer = json.loads(body)
    assert list(answer) == ["error"]
    prefix = "not implemented: " if status == 501 else "malformed request: "
    assert answer["error"].startswith(prefix), answer
    assert mentions in answer["error"], answer  # h11's own reason, not a generic text


async def test_head_over_the_limit_in_pieces_is_json_431(
    runtime: Runtime, nursery: trio.Nursery
) -> None:
    """A head still incomplete past 16 KiB is h11's refusal (the intake never sees it)."""
    _, port = await nursery.start(serve_dashboard, runtime, replace(runtime.settings.viz, port=0))
    stream = await trio.open_tcp_stream("127.0.0.1", port)
    answer = b""
    async with stream:
        with trio.fail_after(30):
            try:
                await stream.send_all(HEAD + b"X-Huge: " + b"a" * 100_000)  # no end of head
            except trio.BrokenResourceError:
                pass
            while chunk := await stream.receive_some(65536):
                answer += chunk
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 431 ")
    assert json.loads(body) == {"error": "request headers larger than 16384 bytes"}


def test_refusal_reason() -> None:
    error = h11.RemoteProtocolError("Missing mandatory Host: header")
    assert refusal_reason(400, error) == "malformed request: Missing mandatory Host: header"
    assert refusal_reason(400, None) == "malformed request: not a valid HTTP/1.1 request"
    assert refusal_reason(431, error) == "request headers larger than 16384 bytes"
    long = h11.RemoteProtocolError("Illegal header value " + "x" * 10_000)
    assert len(refusal_reason(400, long)) <= len("malformed request: ") + 160
    assert refusal_reason(501, None).startswith("not implemented: ")


def test_hypercorn_still_has_the_hooks_overridden() -> None:
    """Fails loudly when a hypercorn upgrade moves what ``dashboard.connection`` relies on:
    the refusal is sent by ``_send_error_response(status)`` inside the handler of h11's
    error (where ``sys.exception()`` is h11's), and connections are built from the names
    ``install`` replaces."""
    handle = inspect.getsource(H11Protocol._handle_events)
    handler = handle[handle.index("except h11.RemoteProtocolError as error:") :]
    assert "await self._send_error_response(error.error_status_hint)" in handler.split("else:")[0]
    assert "H11Protocol(" in inspect.getsource(hypercorn.protocol.ProtocolWrapper.__init__)
    assert "TCPServer," in inspect.getsource(hypercorn.trio.run.worker_serve)
    install()
    install()  # idempotent
    assert hypercorn.protocol.H11Protocol is JsonRefusalProtocol
    assert hypercorn.trio.run.TCPServer is CloseSafeTCPServer


# -- the close racing a write (BusyResourceError) -------------------------------------------


class HalfClosingStream:
    """A stream keeping trio's documented rule for ``send_all`` and ``send_eof``: one at a
    time, else ``BusyResourceError``; its ``send_eof`` stays in progress until released, the
    moment at which hypercorn's unlocked close can meet a write."""

    def __init__(self) -> None:
        self.busy = False
        self.sent = b""
        self.closing = trio.Event()  # send_eof is in progress
        self.release = trio.Event()
        self.closed = False

    async def send_all(self, data: bytes) -> None:
        if self.busy:
            raise trio.BusyResourceError("another task is currently sending data")
        self.busy = True
        try:
            await trio.lowlevel.checkpoint()
            self.sent += data
        finally:
            self.busy = False

    async def send_eof(self) -> None:
        if self.busy:
            raise trio.BusyResourceError("another task is currently sending data")
        self.busy = True
        try:
            self.closing.set()
            await self.release.wait()
        finally:
            self.busy = False

    async def aclose(self) -> None:
        self.closed = True
        await trio.lowlevel.checkpoint()


class Recorded:
    """A protocol that records what the server hands it."""

    def __init__(self) -> None:
        self.events: list[Event] = []

    async def handle(self, event: Event) -> None:
        self.events.append(event)


async def test_write_beside_the_close_is_a_closed_connection(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Issue 12: a slow-body client that reads its 408 and hangs up made hypercorn half-close
    (``send_eof``, without its send lock) while the 408's end was written: trio raised
    ``BusyResourceError`` into the app (a traceback per client). With hypercorn's own
    ``TCPServer`` in place of ``CloseSafeTCPServer`` this test fails with that error."""
    stream = HalfClosingStream()
    server: Any = CloseSafeTCPServer(None, Config(), None, None, stream)  # type: ignore[arg-type]
    server.protocol = protocol = Recorded()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(server._close)  # what hypercorn does on the client's EOF
        await stream.closing.wait()
        with caplog.at_level(logging.ERROR):
            await server.protocol_send(RawData(data=b""))  # the end of the answer
        assert [type(e) for e in protocol.events] == [Closed]  # as for a closed stream
        stream.release.set()
    assert stream.closed
    assert caplog.records == []


async def test_writes_without_a_close_are_sent() -> None:
    stream = HalfClosingStream()
    server: Any = CloseSafeTCPServer(None, Config(), None, None, stream)  # type: ignore[arg-type]
    server.protocol = protocol = Recorded()
    await server.protocol_send(RawData(data=b"HTTP/1.1 408 "))
    await server.protocol_send(RawData(data=b"..."))
    assert stream.sent == b"HTTP/1.1 408 ..."
    assert protocol.events == []


def test_install_refuses_an_unknown_hypercorn(monkeypatch: pytest.MonkeyPatch) -> None:
    """A hypercorn whose connection classes are not the ones subclassed here is refused with
    a clear error at start, not served with half of the adjustments."""

    class Other:
        pass

    monkeypatch.setattr(hypercorn.protocol, "H11Protocol", Other)
    with pytest.raises(RuntimeError, match=r"hypercorn changed: hypercorn\.protocol\.H11Protocol"):
        install()


async def test_an_unknown_hypercorn_is_a_warning_and_the_dashboard_still_serves(
    runtime: Runtime,
    nursery: trio.Nursery,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    def changed() -> None:
        raise RuntimeError("hypercorn changed: H11Protocol._send_error_response is gone")

    monkeypatch.setattr("dashboard.serve.connection.install", changed)
    with caplog.at_level(logging.WARNING, logger="dashboard.serve"):
        _, port = await nursery.start(
            serve_dashboard, runtime, replace(runtime.settings.viz, port=0)
        )
    assert "hypercorn changed" in caplog.text
    stream = await trio.open_tcp_stream("127.0.0.1", port)
    answer = b""
    async with stream:
        await stream.send_all(HEAD + b"\r\n")
        with trio.fail_after(30):  # generous: the answer is immediate
            while not answer.endswith(b"}\n"):  # a keep-alive answer: read its JSON body
                answer += await stream.receive_some(65536)
    assert answer.startswith(b"HTTP/1.1 200 ")
    assert json.loads(answer.partition(b"\r\n\r\n")[2])["ok"] is True
