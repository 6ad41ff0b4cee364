"""The node RPC's server: length-prefixed msgpack frames over TCP on the runtime port, each
request answered by its handler. The client and the frames are ``cluster.rpc``'s.

Rules:
1. A connection carries requests (``cluster.rpc.frames``), each answered by one reply frame.
   A ``Swim`` request's reply is the membership handler's own map, sent as it is.
2. Every door has a limit, checked before the work is done (``RpcLimits``): connections at
   once (at the cap a new connection closes the one idle the longest, or is closed at once if
   none is idle); a frame's size by its kind, read from its first bytes; the bytes all frames
   in flight cost together (``budget``: a frame that would pass it closes its connection); a
   frame's read time once its first byte came; the idle time before and between frames; a
   reply's write time. A refusal closes only that connection and is counted in
   ``RpcServerStats``; the first of each reason is logged as a warning.
3. A malformed frame (bad length, not msgpack, not a request) closes that connection and is
   counted; it never stops the node. A handler's ``ApiError`` is an error reply with its
   status; any other exception, and a reply that cannot be encoded, is a 500 reply, logged
   and counted as ``failed``.
4. The handler table is built once, before the server starts, keyed by request type.
5. A node speaking memberlist hands the connections that open with memberlist's bytes
   (``is_foreign``) to its membership (``serve_rpc(foreign=...)``); none ever reaches a
   handler. Of our frames, only one of exactly four lengths near 8.4 MB opens that way.

Frames have the format of ``swim.framing`` (a 4-byte big-endian length, then a msgpack map);
the server reads them itself, like the client (``cluster.rpc.client``), because its limits
act between the length and the body, and while msgpack builds the values.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Any

import msgpack
import trio

from cluster.ground.errors import ApiError
from cluster.rpc.client import LENGTH, receive_into
from cluster.rpc.frames import (
    MAX_FRAME,
    PEEK_BYTES,
    SMALL_FRAME,
    BadFrame,
    Err,
    Ok,
    Request,
    Swim,
    decode_frame,
    encode_reply,
    frame_limit,
)

from . import fds
from .rpclimits import Budget, Closed, RpcLimits, RpcServerStats

__all__ = [
    "Handler",
    "RpcLimits",
    "RpcServerStats",
    "bound_port",
    "open_rpc_listeners",
    "serve_rpc",
]

log = logging.getLogger(__name__)
Handler = Callable[[Any], Awaitable[Any]]  # takes the request of the type it is filed under
_VALUE_BYTES = 72  # what one decoded msgpack value costs (a list slot and a small object)


# -- the server -------------------------------------------------------------------------------


@asynccontextmanager
async def open_rpc_listeners(host: str, port: int) -> AsyncIterator[list[trio.SocketListener]]:
    """Bind the RPC's TCP listeners (port 0 picks one); closed when the block exits.

    Raises the process's open-file limit first (``fds.raise_nofile_limit``): the connection
    cap of ``RpcLimits.for_this_process`` follows it."""
    fds.raise_nofile_limit()
    listeners = await trio.open_tcp_listeners(port, host=host)
    try:
        yield listeners
    finally:
        for listener in listeners:
            listener.socket.close()


def bound_port(listeners: Sequence[trio.SocketListener]) -> int:
    """The port the listeners are bound to."""
    return int(listeners[0].socket.getsockname()[1])


async def _receive_length(
    stream: trio.SocketStream, first: bytes, limits: RpcLimits
) -> tuple[int, float]:
    """The length of the frame whose first bytes are ``first``, and the deadline of its last
    byte (``frame_timeout`` after its first)."""
    deadline = trio.current_time() + limits.frame_timeout
    head = bytearray(first)
    with trio.move_on_at(deadline):
        await receive_into(stream, head, LENGTH.size)
        (length,) = LENGTH.unpack(head)
        if length == 0:
            raise Closed("malformed", "a frame of length 0")
        if length > limits.max_frame:
            raise Closed("oversized", f"frame length {length} over {limits.max_frame}")
        return int(length), deadline
    raise Closed("timed_out", "a frame's length did not arrive whole in time")


async def _receive_request(
    stream: trio.SocketStream, length: int, limits: RpcLimits, budget: Budget
) -> tuple[Request, int]:
    """Read the body of a frame of ``length`` bytes and decode it, within the budget; the
    request and what it costs (charged: the caller gives it back)."""
    body = bytearray()
    small = length <= SMALL_FRAME
    if not small:  # the kind, from the first bytes, says how large its frames may be
        await receive_into(stream, body, min(length, PEEK_BYTES))
        if length > frame_limit(body):
            raise Closed("oversized", f"a {length}-byte frame of a kind that allows less")
    budget.take(length, small=small)
    try:
        await receive_into(stream, body, length)
        decoded = decode_frame(body, limits.max_values)
        del body  # the decoded request replaces the bytes
        extra = decoded.values * _VALUE_BYTES
        budget.take(extra, small=small)
    except BaseException:
        budget.give(length)
        raise
    return decoded.request, length + extra


def _reply_frame(reply: Any, request: Request, stats: RpcServerStats) -> bytes:
    """The reply as frame bytes; a reply that cannot be encoded (or is too large to send)
    becomes a 500 error reply, logged and counted."""
    try:
        body: bytes = msgpack.packb(reply, use_bin_type=True)
        if len(body) > MAX_FRAME:
            raise ValueError(f"{len(body)} bytes, more than {MAX_FRAME}")
    except (TypeError, ValueError, OverflowError) as exc:
        stats.failed += 1
        log.error("RPC reply to %s cannot be sent: %s", type(request).__name__, exc)
        error = encode_reply(Err(500, f"the reply cannot be encoded: {exc}"))
        if isinstance(request, Swim):
            error["k"] = "swim"
        body = msgpack.packb(error, use_bin_type=True)
    return LENGTH.pack(len(body)) + body


async def _answer(handler: Handler, request: Request, stats: RpcServerStats) -> Any:
    """The reply to ``request``: ``Swim`` replies are the handler's own map."""
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


Foreign = Callable[[trio.SocketStream, bytes], Awaitable[None]]
# memberlist's streams open with push/pull 6, user 8, compressed 9 or sealed 10 (our frames'
# first byte, the top of a length of at most 16 MiB, is 0 or 1), or with a TCP ping: type 0,
# then its map (2 to 5 fields), then the key "SeqNo" as a 5-byte raw string.
_FOREIGN_TYPES = frozenset({6, 8, 9, 10})


def is_foreign(first: bytes) -> bool:
    """Do a connection's first bytes open a memberlist stream rather than one of our frames?"""
    if not first:
        return False
    if first[0] in _FOREIGN_TYPES:
        return True
    return len(first) >= 4 and first[0] == 0 and 0x82 <= first[1] <= 0x85 and first[2:4] == b"\xa5S"


async def _more_bytes(stream: trio.SocketStream, first: bytes) -> bytes:
    """Up to 4 first bytes in all, enough to tell a memberlist ping from a frame length."""
    more = b""
    with trio.move_on_after(1.0):
        while len(first) + len(more) < 4:
            chunk = await stream.receive_some(4 - len(first) - len(more))
            if not chunk:
                break
            more += chunk
    return more


class _Server:
    """One RPC server's connections: its handlers, limits, budget and counters, and the
    connections waiting for a frame (idle), oldest first."""

    def __init__(
        self,
        handlers: Mapping[type, Handler],
        limits: RpcLimits,
        stats: RpcServerStats,
        foreign: Foreign | None = None,
    ) -> None:
        self.handlers, self.limits, self.stats = handlers, limits, stats
        self.foreign = foreign
        self.budget = Budget(limits, stats)
        self.idle: dict[trio.CancelScope, None] = {}  # insertion order: the oldest first

    async def handle(self, stream: trio.SocketStream) -> None:
        """Serve one connection until it ends or a limit closes it."""
        async with stream:
            if self.stats.active >= self.limits.max_connections and not self._evict_idle():
                self.stats.count("refused", f"{self.stats.active} connections open, none idle")
                return
            self.stats.connections += 1
            self.stats.active += 1
            try:
                first = await self._first_bytes(stream)
                if not first:
                    return
                if self.foreign is not None and first[:1] == b"\x00":
                    first += await _more_bytes(stream, first)
                if self.foreign is not None and is_foreign(first):
                    await self.foreign(stream, first)  # rule 5
                    return
                while await self._one_request(stream, first):
                    first = b""
            except Closed as closed:
                self.stats.count(closed.reason, closed.detail)
            except BadFrame as exc:
                self.stats.count("malformed", exc)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                pass  # the peer reset or closed the connection
            finally:
                self.stats.active -= 1

    def _evict_idle(self) -> bool:
        """Close the connection idle the longest, to make room; False if none is idle."""
        if not self.idle:
            return False
        oldest = next(iter(self.idle))
        del self.idle[oldest]  # unregistered first: its task counts it as evicted
        oldest.cancel()
        return True

    async def _first_bytes(self, stream: trio.SocketStream) -> bytes:
        """The first bytes of the next frame (b"" at a clean end of stream); waits
        ``idle_timeout`` at most, and less if a new connection needs the room."""
        with trio.move_on_after(self.limits.idle_timeout) as scope:
            self.idle[scope] = None
            try:
                return await stream.receive_some(LENGTH.size)
            finally:
                evicted = scope not in self.idle  # ``_evict_idle`` took it out
                self.idle.pop(scope, None)
        if evicted:
            raise Closed("evicted", f"idle while {self.stats.active} connections were open")
        raise Closed("idle_closed", f"no frame within {self.limits.idle_timeout:g}s")

    async def _one_request(self, stream: trio.SocketStream, first: bytes = b"") -> bool:
        """Read, answer and reply to one request; False at a clean end of the stream."""
        first = first or await self._first_bytes(stream)
        if not first:
            return False
        length, deadline = await _receive_length(stream, first, self.limits)
        try:
            with trio.fail_at(deadline):
                request, cost = await _receive_request(stream, length, self.limits, self.budget)
        except trio.TooSlowError:
            raise Closed("timed_out", f"a {length}-byte frame not whole in time") from None
        try:
            handler = self.handlers.get(type(request))
            if handler is None:
                raise BadFrame(f"no handler for {type(request).__name__}")
            self.stats.requests += 1
            frame = _reply_frame(await _answer(handler, request, self.stats), request, self.stats)
            del request
            with trio.fail_after(self.limits.send_timeout):
                await stream.send_all(frame)
        except trio.TooSlowError:
            raise Closed("timed_out", "the reply was not taken in time") from None
        finally:
            self.budget.give(cost)
        return True


async def serve_rpc(
    listeners: Sequence[trio.SocketListener],
    handlers: Mapping[type, Handler],
    stats: RpcServerStats,
    limits: RpcLimits | None = None,
    *,
    foreign: Foreign | None = None,
    task_status: trio.TaskStatus[int] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Answer requests on ``listeners`` with ``handlers`` within ``limits`` (default:
    ``RpcLimits.for_this_process()``); report the bound port. ``foreign`` takes the
    connections that open with memberlist's bytes (rule 5)."""
    limits = RpcLimits.for_this_process() if limits is None else limits
    stats.max_connections = limits.max_connections
    server = _Server(handlers, limits, stats, foreign)
    log.debug("RPC: at most %d connections, budget %d bytes", limits.max_connections, limits.budget)
    async with trio.open_nursery() as nursery:
        for listener in listeners:
            nursery.start_soon(trio.serve_listeners, server.handle, [listener])
        task_status.started(bound_port(listeners))
