"""Target ``rpc_stream``: bytes on a node RPC connection, as ``cluster.node.rpc`` reads them.

Input: one flags byte, then the bytes the peer sends before it closes its side. Bit 0 picks the
side:

- server (clear): one connection served by the RPC server (``rpc._Server.handle``) with small
  limits and handlers that answer, refuse (``ApiError``), fail (500) or return a reply that
  cannot be encoded (500), by the request's ``query``;
- client (set): the reply frame ``rpc_call`` reads (``_receive_reply``, ``decode_reply``).

Promises checked: the server closes a bad connection and counts it, never raises (rule 3), and
gives back every byte it charged to the budget (``held_bytes`` is 0 once the connection ends,
``active`` too); the client raises only ``BadFrame`` or ``PeerUnreachable`` (which
``rpc_call`` turns into ``PeerUnavailable``, rule 5). Time is trio's ``MockClock``: a wait for
more bytes than came would end at once, by a timeout, never hang.
"""

from __future__ import annotations

from typing import Any

import trio
import trio.testing

from cluster.ground.errors import BadRequest, PeerUnreachable
from cluster.node import rpc
from cluster.node.rpclimits import RpcLimits, RpcServerStats
from cluster.rpc import client, frames
from cluster.rpc.frames import BadFrame

from ..mutators import frames_after, msgpack_mutator

custom_mutator = msgpack_mutator("rpc_frame", frames_after(1))  # the flags, then frames

LIMITS = RpcLimits(
    max_connections=4,
    budget=1 << 20,
    small_reserve=1 << 18,
    max_frame=1 << 19,
    max_values=5000,
    frame_timeout=1.0,
    idle_timeout=1.0,
    send_timeout=1.0,
)


async def _answer(request: Any) -> Any:
    query = getattr(request, "query", "")
    if query == "refuse":
        raise BadRequest("refused")
    if query == "fail":
        raise RuntimeError("the handler failed")
    if query == "unencodable":
        return {1, 2}
    if isinstance(request, frames.Swim):
        return {"ok": False, "error": "not here"}
    return {"request": type(request).__name__}


HANDLERS: dict[type, rpc.Handler] = {r: _answer for r in frames._RECORDS}


async def _serve(data: bytes) -> bool:
    stats = RpcServerStats()
    server = rpc._Server(HANDLERS, LIMITS, stats)
    ours, theirs = trio.testing.memory_stream_pair()
    await theirs.send_all(data)
    await theirs.send_eof()
    await server.handle(ours)  # type: ignore[arg-type]
    assert stats.active == 0, stats
    assert stats.held_bytes == 0, stats
    return stats.requests > 0 and not stats.malformed


async def _call(data: bytes) -> bool:
    stream = trio.testing.MemoryReceiveStream()
    stream.put_data(data)
    stream.put_eof()
    try:
        frames.decode_reply(await client._receive_reply(stream))  # type: ignore[arg-type]
    except (BadFrame, PeerUnreachable):
        return False
    return True


def test_one_input(data: bytes) -> bool:
    """True when the server answered every frame, or the client read a reply."""
    if not data:
        return False
    side = _call if data[0] & 1 else _serve
    accepted: bool = trio.run(side, data[1:], clock=trio.testing.MockClock(autojump_threshold=0))
    return accepted
