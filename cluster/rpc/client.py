"""The one client of the node RPC, and the frame reads the server shares with it.

Errors of ``rpc_call``::

    ApiError                  the remote handler's refusal, as the same class (status kept)
    │                         (``RpcError``, 500, when the status is not one of ours)
    ├── BadRequest (400)      the request itself cannot be encoded (an int beyond 64 bits)
    └── PeerUnavailable (503)
        ├── PeerUnreachable   the transport failed: refused, reset, closed, a malformed reply
        └── PeerTimeout       no reply within the call's timeout

Rules:
1. ``rpc_call`` maps every failure to the tree above, so callers catch ``PeerUnavailable`` (or
   its two kinds) and ``ApiError``, nothing else. The transport error it replaces is the
   exception's ``__cause__``.
2. ``timeout`` bounds the whole call, connecting included; a request larger than its kind
   allows (``frames`` rule 4) is a ``BadRequest`` before any byte is sent.
3. A reply is read within ``MAX_FRAME`` bytes and ``MAX_VALUES`` values, like a request on the
   server (``cluster.node.rpc``), which reads its frames with ``receive_into`` and ``LENGTH``.
"""

from __future__ import annotations

import struct
from typing import Any

import msgpack
import trio

from cluster.ground.errors import (
    ApiError,
    BadRequest,
    Conflict,
    Forbidden,
    NotFound,
    PeerUnavailable,
    PeerUnreachable,
)

from .frames import MAX_FRAME, BadFrame, Call, Err, decode_reply, encode, unpack_untrusted

__all__ = ["LENGTH", "PeerTimeout", "RpcError", "receive_into", "rpc_call"]

_BY_STATUS: dict[int, type[ApiError]] = {
    400: BadRequest,
    403: Forbidden,
    404: NotFound,
    409: Conflict,
    503: PeerUnavailable,
}
_TRANSPORT = (OSError, trio.BrokenResourceError, trio.ClosedResourceError)
LENGTH = struct.Struct(">I")  # a frame's 4-byte big-endian length
_CHUNK = 64 * 1024  # bytes asked of the socket at once: memory follows the bytes that came


class RpcError(ApiError):
    """A remote handler failed with an unexpected error."""


class PeerTimeout(PeerUnavailable):
    """A node RPC call that got no reply within its timeout (``__cause__``: the
    ``trio.TooSlowError``)."""


async def receive_into(stream: trio.SocketStream, buf: bytearray, n: int) -> None:
    """Append bytes to ``buf`` until it holds ``n``; ``BadFrame`` if the stream ends first."""
    while len(buf) < n:
        chunk = await stream.receive_some(min(_CHUNK, n - len(buf)))
        if not chunk:
            raise BadFrame(f"stream ended inside a frame ({len(buf)} of {n} bytes)")
        buf += chunk


def _request_frame(request: Call) -> bytes:
    """The frame bytes of ``request``; ``BadRequest`` if it cannot be encoded or is larger than
    its kind allows (a migrating pool's data over 16 MiB)."""
    try:
        body: bytes = msgpack.packb(encode(request), use_bin_type=True)
    except (TypeError, ValueError, OverflowError) as exc:
        raise BadRequest(f"cannot send {type(request).__name__}: {exc}") from None
    if len(body) > request.MAX_BYTES:
        raise BadRequest(
            f"cannot send {type(request).__name__}: {len(body)} bytes, more than its "
            f"{request.MAX_BYTES}"
        )
    return LENGTH.pack(len(body)) + body


async def _receive_reply(stream: trio.SocketStream) -> Any:
    """The reply frame's value (within ``MAX_FRAME`` and ``MAX_VALUES``); ``BadFrame`` if it is
    malformed, ``PeerUnreachable`` if the connection closed first."""
    head = bytearray(await stream.receive_some(LENGTH.size))
    if not head:
        raise PeerUnreachable("the connection closed without a reply")
    await receive_into(stream, head, LENGTH.size)
    (length,) = LENGTH.unpack(head)
    if not 0 < length <= MAX_FRAME:
        raise BadFrame(f"frame length {length} outside 1..{MAX_FRAME}")
    body = bytearray()
    await receive_into(stream, body, length)
    return unpack_untrusted(body)[0]


async def rpc_call(host: str, port: int, request: Call, timeout: float) -> Any:
    """Send ``request`` to the node at ``host:port`` and return its reply's body.

    ``timeout`` (seconds) bounds the whole call. Raises the remote ``ApiError``,
    ``PeerTimeout``, ``PeerUnreachable`` or ``BadRequest`` (see the module docstring), nothing
    else.
    """
    frame = _request_frame(request)
    try:
        with trio.fail_after(timeout):
            stream = await trio.open_tcp_stream(host, port)
            async with stream:
                await stream.send_all(frame)
                reply = decode_reply(await _receive_reply(stream))
    except trio.TooSlowError as exc:
        raise PeerTimeout(f"no reply within {timeout:g}s") from exc
    except _TRANSPORT as exc:
        raise PeerUnreachable(str(exc)) from exc
    except BadFrame as exc:
        raise PeerUnreachable(f"answered a malformed frame: {exc}") from exc
    if isinstance(reply, Err):
        raise _BY_STATUS.get(reply.status, RpcError)(reply.message)
    return reply.body
