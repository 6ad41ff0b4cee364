"""The HTTP/1.1 connection under the app: two adjustments to hypercorn 0.18, installed by
``serve_dashboard`` before it serves (``install``).

Rules:
1. What h11 refuses before any app runs is answered by hypercorn itself: 400 for no Host, two
   Hosts, a NUL or a line without a colon in the head, a bad method, a bad ``Content-Length``
   or chunk size, bytes that are not HTTP (a TLS hello); 431 for a head that is still
   incomplete past ``h11_max_incomplete_size``; 501 for a transfer coding other than
   ``chunked``. ``JsonRefusalProtocol`` gives those answers the spec's ``{"error": ...}``
   body (h11's reason, cut short) and ``content-type: application/json`` in place of
   hypercorn's empty body: the same status, still ``Connection: close``.
2. hypercorn's TCP server half-closes a connection (``send_eof``, when h11 has seen the
   client's EOF mid-request, or after an answer) without taking its send lock, so a write of
   the app can meet it and trio raises ``BusyResourceError`` in the app: a client that
   trickles a body, reads the early 408 and hangs up makes hypercorn close while the end of
   that 408 is written. ``CloseSafeTCPServer`` treats that error as what it means (the
   connection is closing), exactly as hypercorn treats a broken or closed stream. The one
   answer was sent; nothing is logged as a failure.
3. Both are subclasses swapped into the hypercorn modules whose names are looked up when a
   connection starts (``hypercorn.protocol.H11Protocol``, ``hypercorn.trio.run.TCPServer``).
   ``install`` checks that hypercorn still has the methods overridden here and raises
   ``RuntimeError`` if not (``serve_dashboard`` then logs a warning and serves without
   them); ``tests/dashboard/test_connection.py`` pins the behaviour.
"""

from __future__ import annotations

import inspect
import sys

import h11
import hypercorn.protocol
import hypercorn.trio.run
import trio
from hypercorn.events import Closed, Event
from hypercorn.protocol.h11 import H11Protocol
from hypercorn.trio.tcp_server import TCPServer

from .intake import MAX_HEADERS
from .jsonio import dumps

__all__ = ["CloseSafeTCPServer", "JsonRefusalProtocol", "install", "refusal_reason"]

MAX_REASON = 160  # characters of h11's reason kept (it may quote the offending bytes)


def refusal_reason(status: int, error: BaseException | None) -> str:
    """The ``error`` text for hypercorn's refusal ``status``; ``error`` is h11's exception."""
    if status == 431:
        return f"request headers larger than {MAX_HEADERS} bytes"
    said = str(error) if isinstance(error, h11.ProtocolError) else ""
    what = said[:MAX_REASON] or "not a valid HTTP/1.1 request"
    if status == 501:
        return f"not implemented: {what}"
    return f"malformed request: {what}"


class JsonRefusalProtocol(H11Protocol):
    """hypercorn's HTTP/1.1 protocol with rule 1's answer for what h11 refuses."""

    async def _send_error_response(self, status_code: int) -> None:
        # hypercorn calls this inside its ``except h11.RemoteProtocolError`` block, so the
        # exception being handled is h11's, with its reason.
        body = dumps({"error": refusal_reason(status_code, sys.exception())}).encode()
        headers = [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
            (b"connection", b"close"),
            (b"x-content-type-options", b"nosniff"),
            *self.config.response_headers("h11"),
        ]
        await self._send_h11_event(h11.Response(status_code=status_code, headers=headers))
        await self._send_h11_event(h11.Data(data=body))
        await self._send_h11_event(h11.EndOfMessage())


class CloseSafeTCPServer(TCPServer):
    """hypercorn's trio TCP server with rule 2."""

    async def protocol_send(self, event: Event) -> None:
        try:
            await super().protocol_send(event)
        except trio.BusyResourceError:
            # Every write holds hypercorn's send lock; only its unlocked send_eof can be
            # busy beside one, so the connection is closing: as for a closed stream.
            await self.protocol.handle(Closed())


_SWAPPED = (  # (module, the name it looks up per connection, our subclass of what it holds)
    (hypercorn.protocol, "H11Protocol", JsonRefusalProtocol),
    (hypercorn.trio.run, "TCPServer", CloseSafeTCPServer),
)


def _check() -> None:
    """Rule 3: the hooks overridden here still exist with the signatures relied on."""
    expected = {
        (H11Protocol, "_send_error_response"): ["self", "status_code"],
        (H11Protocol, "_send_h11_event"): ["self", "event"],
        (TCPServer, "protocol_send"): ["self", "event"],
    }
    for (cls, name), params in expected.items():
        method = getattr(cls, name, None)
        if method is None or list(inspect.signature(method).parameters) != params:
            raise RuntimeError(f"hypercorn changed: {cls.__name__}.{name}{params} is gone")
    for module, name, own in _SWAPPED:
        if getattr(module, name, None) not in (own.__mro__[1], own):
            raise RuntimeError(f"hypercorn changed: {module.__name__}.{name} is not the one known")


def install() -> None:
    """Swap the subclasses into hypercorn (idempotent; for every server of the process)."""
    _check()
    for module, name, own in _SWAPPED:
        setattr(module, name, own)
