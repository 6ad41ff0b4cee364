"""A raw HTTP/1.1 client for hostile requests: the bytes go out exactly as given, the answer is
parsed with h11 (the parser hypercorn itself uses).

Rules:
1. A request is bytes (or a list of pieces with pauses, for trickling); nothing is normalized,
   so ``..``, bad percent-encoding, bad headers and bad framing reach the server as written.
2. Sending and reading run at once: a server that answers before it has read the whole body
   (413, 400) is read, not deadlocked on.
3. Every exchange ends in one ``Answer`` within its own time limit, whatever the server does:
   ``answered`` (a status), ``closed`` or ``reset`` (no response), ``timeout``, or
   ``bad-response`` (bytes that are not HTTP).
4. ``under_way`` (if given) is called once per exchange, as soon as its first piece is sent,
   or when the exchange ended without sending it: a test waits for that, not for a guess.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import h11
import trio

__all__ = ["HOST", "Answer", "exchange", "request_bytes"]

HOST = "127.0.0.1"
Piece = bytes | float  # bytes to send, or seconds to pause before the next piece


@dataclass(frozen=True, slots=True)
class Answer:
    """What one hostile request got: ``outcome``, the status (None without a response), the
    body and how long it took (seconds)."""

    outcome: str
    status: int | None
    body: bytes
    seconds: float

    @property
    def label(self) -> str:
        """The tally label: the status as text, else the outcome."""
        return str(self.status) if self.status is not None else self.outcome

    def json(self) -> Any:
        """The body as JSON, None if it is not JSON."""
        try:
            return json.loads(self.body)
        except ValueError:
            return None

    @property
    def has_error_body(self) -> bool:
        """Whether the body is the spec's error shape (a JSON object with ``error``, or a
        validation failure ``{"ok": false, "errors": ...}``)."""
        body = self.json()
        return isinstance(body, dict) and ("error" in body or body.get("ok") is False)


def request_bytes(
    method: str,
    target: str | bytes,
    *,
    headers: Sequence[tuple[str | bytes, str | bytes]] = (),
    body: bytes = b"",
    host: str | bytes = HOST,
    content_length: bool = True,
) -> bytes:
    """One HTTP/1.1 request as raw bytes, with ``Host`` and ``Connection: close`` first."""

    def b(x: str | bytes) -> bytes:
        return x if isinstance(x, bytes) else x.encode("utf-8")

    lines = [b(method) + b" " + b(target) + b" HTTP/1.1", b"Host: " + b(host)]
    lines.append(b"Connection: close")
    lines += [b(k) + b": " + b(v) for k, v in headers]
    if content_length and (body or method == "POST"):
        lines.append(b"Content-Length: " + str(len(body)).encode())
    return b"\r\n".join(lines) + b"\r\n\r\n" + body


def _reader() -> h11.Connection:
    """An h11 client connection that has 'sent' a request, so it parses the server's answer."""
    conn = h11.Connection(h11.CLIENT, max_incomplete_event_size=1 << 20)
    conn.send(h11.Request(method="GET", target="/", headers=[("Host", HOST)]))
    conn.send(h11.EndOfMessage())
    return conn


async def _send(
    stream: trio.SocketStream, pieces: Sequence[Piece], sent: Callable[[], None]
) -> None:
    try:
        for piece in pieces:
            if isinstance(piece, float):
                await trio.sleep(piece)  # the client's own pace (a trickle), part of the probe
            else:
                await stream.send_all(piece)
                sent()
    except (trio.BrokenResourceError, trio.ClosedResourceError):
        pass  # the server closed (it answered early, or refused): the reader sees how


async def _read(stream: trio.SocketStream) -> tuple[str, int | None, bytes]:
    conn, status, body = _reader(), None, bytearray()
    while True:
        try:
            event = conn.next_event()
        except h11.RemoteProtocolError:
            return "bad-response", status, bytes(body)
        if event is h11.NEED_DATA:
            try:
                data = await stream.receive_some(65536)
            except trio.BrokenResourceError:
                return "reset", status, bytes(body)
            if not data and status is None:
                return "closed", None, b""
            conn.receive_data(data)
        elif isinstance(event, h11.Response):
            status = event.status_code
        elif isinstance(event, h11.Data):
            body += event.data
        elif isinstance(event, h11.EndOfMessage | h11.ConnectionClosed):
            return "answered" if status is not None else "closed", status, bytes(body)


async def exchange(
    port: int,
    request: bytes | Sequence[Piece],
    *,
    timeout: float = 10.0,
    under_way: Callable[[], None] | None = None,
) -> Answer:
    """Send ``request`` to ``127.0.0.1:port`` and read the answer within ``timeout`` seconds;
    ``under_way()`` once the first piece is sent, or at the end if it never was (rule 4)."""
    pieces: Sequence[Piece] = [request] if isinstance(request, bytes) else request
    told = False

    def sent() -> None:
        nonlocal told
        if not told and under_way is not None:
            under_way()
        told = True

    t0 = time.monotonic()
    outcome: tuple[str, int | None, bytes] = ("timeout", None, b"")
    try:
        with trio.move_on_after(timeout):
            try:
                stream = await trio.open_tcp_stream(HOST, port)
            except OSError as exc:
                outcome = (f"refused ({exc.errno})", None, b"")
            else:
                async with stream, trio.open_nursery() as nursery:
                    nursery.start_soon(_send, stream, pieces, sent)
                    outcome = await _read(stream)
                    nursery.cancel_scope.cancel()
    finally:
        sent()
    return Answer(outcome[0], outcome[1], outcome[2], time.monotonic() - t0)
