"""Node-to-node RPC: length-prefixed msgpack frames over TCP on the runtime port.

Errors of the one client, ``rpc_call``::

    ApiError                  the remote handler's refusal, as the same class (status kept)
    │                         (``RpcError``, 500, when the status is not one of ours)
    └── PeerUnavailable (503)
        ├── PeerUnreachable   the transport failed: refused, reset, closed, a malformed reply
        └── PeerTimeout       no reply within the call's timeout

Rules:
1. A connection carries requests (``cluster.node.frames``), each answered by one reply frame.
   A ``Swim`` request's reply is the membership handler's own map, sent as it is.
2. A malformed frame (bad length, not msgpack, not a request) closes that connection and is
   counted; it never stops the node. A handler's ``ApiError`` is an error reply with its
   status; any other exception is a 500 reply and is logged.
3. The handler table is built once, before the server starts, keyed by request type.
4. ``rpc_call`` maps every failure to the tree above, so callers catch ``PeerUnavailable`` (or
   its two kinds) and ``ApiError``, nothing else. The transport error it replaces is the
   exception's ``__cause__``.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import trio

from cluster.errors import (
    ApiError,
    BadRequest,
    Conflict,
    Forbidden,
    NotFound,
    PeerUnavailable,
    PeerUnreachable,
)
from swim import FrameError, recv_frame, send_frame

from .frames import (
    BadFrame,
    Call,
    Err,
    Ok,
    Request,
    Swim,
    decode_reply,
    decode_untrusted,
    encode,
    encode_reply,
)

__all__ = [
    "MAX_FRAME",
    "Handler",
    "PeerTimeout",
    "RpcError",
    "RpcServerStats",
    "bound_port",
    "open_rpc_listeners",
    "rpc_call",
    "serve_rpc",
]

log = logging.getLogger(__name__)
MAX_FRAME = 16 * 1024 * 1024  # bytes
Handler = Callable[[Any], Awaitable[Any]]  # takes the request of the type it is filed under
_BY_STATUS: dict[int, type[ApiError]] = {
    400: BadRequest,
    403: Forbidden,
    404: NotFound,
    409: Conflict,
    503: PeerUnavailable,
}
_TRANSPORT = (OSError, trio.BrokenResourceError, trio.ClosedResourceError, FrameError)


class RpcError(ApiError):
    """A remote handler failed with an unexpected error."""


class PeerTimeout(PeerUnavailable):
    """A node RPC call that got no reply within its timeout (``__cause__``: the
    ``trio.TooSlowError``)."""


@dataclass(slots=True)
class RpcServerStats:
    """Counters of one RPC server."""

    connections: int = 0
    requests: int = 0
    malformed: int = 0
    failed: int = 0


# -- the server -------------------------------------------------------------------------------


@asynccontextmanager
async def open_rpc_listeners(host: str, port: int) -> AsyncIterator[list[trio.SocketListener]]:
    """Bind the RPC's TCP listeners (port 0 picks one); closed when the block exits."""
    listeners = await trio.open_tcp_listeners(port, host=host)
    try:
        yield listeners
    finally:
        for listener in listeners:
            listener.socket.close()


def bound_port(listeners: Sequence[trio.SocketListener]) -> int:
    """The port the listeners are bound to."""
    return int(listeners[0].socket.getsockname()[1])


async def _answer(handler: Handler, request: Request, stats: RpcServerStats) -> Any:
    """The reply frame to ``request``: ``Swim`` replies are the handler's own map."""
    try:
        body = await handler(request)
        reply: Any = body if isinstance(request, Swim) else encode_reply(Ok(body))
    except ApiError as exc:
        reply = encode_reply(Err(exc.status, exc.message))
    except Exception as exc:
        stats.failed += 1
        log.exception("RPC handler for %s failed", type(request).__name__)
        reply = encode_reply(Err(500, f"handler failed: {exc}"))
    if isinstance(request, Swim) and isinstance(reply, dict):
        reply.setdefault("k", "swim")
    return reply


async def serve_rpc(
    listeners: Sequence[trio.SocketListener],
    handlers: Mapping[type, Handler],
    stats: RpcServerStats,
    *,
    task_status: trio.TaskStatus[int] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Answer requests on ``listeners`` with ``handlers``; report the bound port."""

    async def handle(stream: trio.SocketStream) -> None:
        stats.connections += 1
        async with stream:
            while True:
                try:
                    msg = await recv_frame(stream, MAX_FRAME)
                    if msg is None:  # clean end of stream
                        return
                    request = decode_untrusted(msg)
                    handler = handlers.get(type(request))
                    if handler is None:
                        raise BadFrame(f"no handler for {type(request).__name__}")
                except (FrameError, BadFrame) as exc:
                    stats.malformed += 1
                    log.debug("closing an RPC connection: %s", exc)
                    return
                except (trio.BrokenResourceError, trio.ClosedResourceError):
                    return
                stats.requests += 1
                reply = await _answer(handler, request, stats)
                try:
                    await send_frame(stream, reply)
                except (trio.BrokenResourceError, trio.ClosedResourceError):
                    return

    async with trio.open_nursery() as nursery:
        for listener in listeners:
            nursery.start_soon(trio.serve_listeners, handle, [listener])
        task_status.started(bound_port(listeners))


# -- the client -------------------------------------------------------------------------------


async def rpc_call(host: str, port: int, request: Call, timeout: float) -> Any:
    """Send ``request`` to the node at ``host:port`` and return its reply's body.

    ``timeout`` (seconds) bounds the whole call. Raises the remote ``ApiError``,
    ``PeerTimeout`` or ``PeerUnreachable`` (see the module docstring), nothing else.
    """
    try:
        with trio.fail_after(timeout):
            stream = await trio.open_tcp_stream(host, port)
            async with stream:
                await send_frame(stream, encode(request))
                raw = await recv_frame(stream, MAX_FRAME)
    except trio.TooSlowError as exc:
        raise PeerTimeout(f"no reply within {timeout:g}s") from exc
    except _TRANSPORT as exc:
        raise PeerUnreachable(str(exc)) from exc
    if raw is None:
        raise PeerUnreachable("the connection closed without a reply")
    try:
        reply = decode_reply(raw)
    except BadFrame as exc:
        raise PeerUnreachable(f"answered a malformed frame: {exc}") from exc
    if isinstance(reply, Err):
        raise _BY_STATUS.get(reply.status, RpcError)(reply.message)
    return reply.body
