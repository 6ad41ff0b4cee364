"""Node-to-node RPC: length-prefixed msgpack frames over TCP on the runtime port.

Rules:
1. A connection carries request frames ``{"k": kind, ...}``, each answered by one reply frame:
   ``{"ok": true, "body": ...}`` or ``{"ok": false, "status": int, "error": str}``. Kinds named
   in ``verbatim`` (the membership protocol's ``"swim"``) own their reply format: the handler's
   dict is sent as it is.
2. A malformed frame (bad length, not msgpack, not a mapping, unknown kind) closes that
   connection and is counted; it never stops the node.
3. Callers bound every call with a timeout; an ``ApiError`` raised by the remote handler comes
   back as the same status on this side.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Any

import trio

from cluster.errors import ApiError, BadRequest, Conflict, Forbidden, NotFound, PeerUnavailable
from swim import FrameError, recv_frame, send_frame

__all__ = ["MAX_FRAME", "RpcError", "RpcServerStats", "rpc_call", "serve_rpc"]

log = logging.getLogger(__name__)
MAX_FRAME = 16 * 1024 * 1024
Handler = Callable[[dict[str, Any]], Awaitable[Any]]
_BY_STATUS: dict[int, type[ApiError]] = {
    400: BadRequest,
    403: Forbidden,
    404: NotFound,
    409: Conflict,
    503: PeerUnavailable,
}


class RpcError(ApiError):
    """A remote handler failed with an unexpected error."""


@dataclass(slots=True)
class RpcServerStats:
    connections: int = 0
    requests: int = 0
    malformed: int = 0
    failed: int = 0


async def serve_rpc(
    host: str,
    port: int,
    handlers: Mapping[str, Handler],
    stats: RpcServerStats,
    *,
    verbatim: Collection[str] = (),
    task_status: trio.TaskStatus[int] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Listen on ``host:port`` (TCP) and answer frames by kind; report the bound port."""
    listeners = await trio.open_tcp_listeners(port, host=host)

    async def handle(stream: trio.SocketStream) -> None:
        stats.connections += 1
        async with stream:
            while True:
                try:
                    msg = await recv_frame(stream, MAX_FRAME)
                except FrameError as exc:
                    stats.malformed += 1
                    log.debug("closing an RPC connection: %s", exc)
                    return
                except (trio.BrokenResourceError, trio.ClosedResourceError):
                    return
                if msg is None:  # clean end of stream
                    return
                kind = msg.get("k") if isinstance(msg, dict) else None
                handler = handlers.get(kind) if isinstance(kind, str) else None
                if handler is None:
                    stats.malformed += 1
                    return
                stats.requests += 1
                try:
                    body = await handler(msg)
                    reply = body if kind in verbatim else {"ok": True, "body": body}
                except ApiError as exc:
                    reply = {"ok": False, "status": exc.status, "error": exc.message}
                except Exception as exc:
                    stats.failed += 1
                    log.exception("RPC handler %r failed", kind)
                    reply = {"ok": False, "status": 500, "error": f"handler failed: {exc}"}
                if kind in verbatim:
                    reply.setdefault("k", kind)
                try:
                    await send_frame(stream, reply)
                except (trio.BrokenResourceError, trio.ClosedResourceError):
                    return

    async with trio.open_nursery() as nursery:
        for listener in listeners:
            nursery.start_soon(trio.serve_listeners, handle, [listener])
        task_status.started(listeners[0].socket.getsockname()[1])


async def rpc_call(host: str, port: int, frame: Mapping[str, Any], timeout: float) -> Any:
    """One request and its reply; raises the remote ``ApiError`` or ``PeerUnavailable``."""
    with trio.fail_after(timeout):
        stream = await trio.open_tcp_stream(host, port)
        async with stream:
            await send_frame(stream, dict(frame))
            reply = await recv_frame(stream, MAX_FRAME)
    if not isinstance(reply, dict) or "ok" not in reply:
        raise PeerUnavailable(f"node at {host}:{port} answered a malformed frame")
    if reply["ok"]:
        return reply.get("body")
    cls = _BY_STATUS.get(int(reply.get("status", 500)), RpcError)
    raise cls(str(reply.get("error", "remote error")))
