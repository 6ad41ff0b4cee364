"""Intake: a request's whole body is received before the request may take a request slot.

Rules:
1. Every HTTP request's body is read here, before admission (``dashboard.admission``), so a
   client that sends headers and then trickles its body, or sends nothing, holds no request
   slot: it holds only its own connection, for at most ``BODY_TIMEOUT`` seconds.
2. Limits, checked before and while reading:
   - a request line (path and query) over ``MAX_TARGET`` bytes is 414, headers over
     ``MAX_HEADERS`` bytes 431 (hypercorn enforces its own limit only on a head that arrives
     in pieces), a header with a line break in it 400 (werkzeug cannot hold it);
   - a declared ``Content-Length`` over ``MAX_BODY`` is 413 at once, unread, and so is the
     ``MAX_BODY + 1``-th byte received;
   - a body not complete within ``BODY_TIMEOUT`` seconds of the request's arrival is 408;
   - more than ``BODY_BUDGET`` bytes held by all requests of the app together is 503 (so
     many connections cannot buffer unbounded memory).
   Each refusal is an ``{"error": ...}`` body, and the connection is closed after it.
3. The app then sees the body as one ``http.request`` message (``replay``), then the
   connection's own messages (``http.disconnect``).
4. A client that disconnects while sending is dropped without an answer.
5. A request that has no body (HTTP/1.x, no ``Transfer-Encoding``, no ``Content-Length`` or
   ``Content-Length: 0``) is complete with its head: h11 ends such a message there, and no
   byte after the head can be its body. Only its head is checked here (rule 2); the app
   reads the empty body itself, with no wait, no timer and no copy (``Intake.admit``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from itertools import chain
from typing import Any

import trio

from .errors import MAX_BODY

__all__ = [
    "BODY_BUDGET",
    "BODY_TIMEOUT",
    "MAX_HEADERS",
    "MAX_TARGET",
    "Intake",
    "Refusal",
    "bodiless",
    "declared_length",
    "head_refusal",
    "replay",
]

BODY_TIMEOUT = 5.0  # seconds from a request's arrival until its whole body has arrived
BODY_BUDGET = 32 * MAX_BODY  # bytes of request bodies held by one app at a time
MAX_TARGET = 8 * 1024  # bytes: path and query string of one request
MAX_HEADERS = 16 * 1024  # bytes: names and values of all headers of one request

Receive = Callable[[], Awaitable[Any]]


@dataclass(frozen=True, slots=True)
class Refusal:
    """A request refused while its body arrived: answer ``status`` with ``message``."""

    status: int
    message: str


def too_large() -> Refusal:
    return Refusal(413, f"request body larger than {MAX_BODY} bytes")


def declared_length(headers: Any) -> int | None:
    """The ``Content-Length`` of ASGI ``headers`` (None: absent or not ASCII digits; h11
    refuses a malformed one before the app runs)."""
    for name, value in headers or ():
        if name.lower() == b"content-length":
            raw = bytes(value).strip()
            return int(raw) if raw.isdigit() and len(raw) <= 20 else None
    return None


def head_refusal(scope: Any) -> Refusal | None:
    """414, 431 or 400 for a request line or headers refused by rule 2, else None."""
    target = len(scope.get("raw_path") or scope.get("path", "").encode("utf-8", "replace"))
    if target + len(scope.get("query_string", b"")) > MAX_TARGET:
        return Refusal(414, f"request path and query longer than {MAX_TARGET} bytes")
    blob = b"".join(chain.from_iterable(scope.get("headers") or ()))  # names and values
    if len(blob) > MAX_HEADERS:
        return Refusal(431, f"request headers larger than {MAX_HEADERS} bytes")
    if b"\r" in blob or b"\n" in blob:
        return Refusal(400, "malformed request: a header holds a line break")
    return None


def bodiless(scope: Any) -> bool:
    """Whether an HTTP/1.x request has no body by its head alone: no ``Transfer-Encoding``
    and no ``Content-Length`` or one of 0 (RFC 9112, 6.3). h11 ends such a message with its
    head, so the app's one ``http.request`` message is queued already (rule 5)."""
    if scope.get("http_version") not in ("1.0", "1.1"):
        return False  # HTTP/2 may send DATA frames whatever the head declared
    for name, value in scope.get("headers") or ():
        name = name.lower()
        if name == b"transfer-encoding" or (name == b"content-length" and value.strip() != b"0"):
            return False
    return True


def replay(body: bytes, receive: Receive) -> Receive:
    """An ASGI ``receive`` giving ``body`` as one complete message, then ``receive``'s own."""
    first: list[dict[str, Any]] = [{"type": "http.request", "body": body, "more_body": False}]

    async def receive_replayed() -> Any:
        if first:
            return first.pop()
        return await receive()

    return receive_replayed


class Intake:
    """The body reader of one app: the limits of rule 2 and the bytes held right now."""

    def __init__(
        self, max_body: int = MAX_BODY, timeout: float | None = None, budget: int = BODY_BUDGET
    ) -> None:
        self.max_body = max_body
        self.timeout = BODY_TIMEOUT if timeout is None else timeout  # seconds
        self.budget = budget
        self.held = 0  # bytes of bodies received and not yet released

    async def admit(self, scope: Any, receive: Receive) -> tuple[Receive, int] | Refusal | None:
        """The ``receive`` the app is to use and the bytes of the budget its body holds (the
        caller gives them back with ``release``), a Refusal, or None when the client went
        away. A bodiless request only has its head checked (rule 5)."""
        if bodiless(scope):
            refused = head_refusal(scope)
            return (receive, 0) if refused is None else refused
        body = await self.receive_body(scope, receive)
        if body is None or isinstance(body, Refusal):
            return body
        return replay(body, receive), len(body)

    async def receive_body(self, scope: Any, receive: Receive) -> bytes | Refusal | None:
        """The whole body of the request, a Refusal, or None when the client went away. The
        caller owns ``len(body)`` bytes of the budget until it calls ``release``."""
        refused = head_refusal(scope)
        if refused is not None:
            return refused
        length = declared_length(scope.get("headers"))
        if length is not None and length > self.max_body:
            return too_large()
        chunks: list[bytes] = []
        outcome: bytes | Refusal | None = Refusal(
            408, f"request body not received within {self.timeout:g}s"
        )
        with trio.move_on_after(self.timeout):
            outcome = await self._read(receive, chunks)
        if isinstance(outcome, bytes):
            return outcome  # the budget stays charged: released by the caller
        self.release(sum(len(c) for c in chunks))
        return outcome

    async def _read(self, receive: Receive, chunks: list[bytes]) -> bytes | Refusal | None:
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return None  # http.disconnect
            chunk = bytes(message.get("body", b""))
            if size + len(chunk) > self.max_body:
                return too_large()
            if self.held + len(chunk) > self.budget:
                return Refusal(503, "too many request bodies being received: try again")
            self.held += len(chunk)
            size += len(chunk)
            chunks.append(chunk)
            if not message.get("more_body", False):
                return b"".join(chunks)

    def release(self, size: int) -> None:
        """Give back ``size`` bytes of the budget (a body whose request has ended)."""
        self.held -= size
