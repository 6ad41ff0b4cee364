"""Target ``state``: the TCP push/pull and induct frames of the membership protocol, both sides.

Input: one flags byte, then the frame. Bit 0 of the flags gives the member a keyring; bit 1
picks the side:

- server (bit 1 clear): a request as the node RPC reads it (``frames.decode_frame``), answered
  as ``SwimHandle.handle_tcp`` does: open the seal, ``induct`` or ``pushpull``
  (``wire.decode_state_untrusted``, then ``SwimMachine.merge_state``), seal the reply;
- client (bit 1 set): the reply to our push/pull or induct as ``swim.framing.recv_frame`` reads
  it (a length prefix, then msgpack), then ``exchange.open_sealed``, ``read_pushpull_reply``
  and ``merge_state``, and ``read_induct_reply``.

With a keyring the fuzzer cannot forge a seal, so the target seals the frame's bytes itself and
the fuzzed bytes are what the seal holds (``exchange`` rule 4).

Promises checked: only ``BadMessage`` (and ``BadFrame`` or ``FrameError`` from the framing)
come out; every reply the server side builds encodes as msgpack; the machine raises nothing.
"""

from __future__ import annotations

import random
from typing import Any

import msgpack
import trio
import trio.testing

from cluster.rpc.frames import BadFrame, Swim, decode_frame
from swim import FrameError, MemberState, SwimConfig, SwimMachine, exchange, recv_frame, wire
from swim.keyring import TCP_REPLY, TCP_REQUEST, Keyring
from swim.wire import StateEntry

from ..mutators import Layout, after, frames_after, msgpack_mutator


def _layout(data: bytes) -> Layout:
    """A framed reply (client side, no keyring) or a bare body, after the flags byte."""
    return frames_after(1) if data[:1] and data[0] & 3 == 2 else after(1)


custom_mutator = msgpack_mutator(
    "rpc_frame", Layout(lambda d: _layout(d).split(d), lambda p: _layout(p[0][0]).join(p))
)

HOST = "127.0.0.1"
MAX_BYTES = 1 << 16
KEYRING = Keyring([bytes(range(16))])
CONFIG = SwimConfig(max_members=8, new_members_per_period=4)
MEMBERS = (
    StateEntry(1, HOST, 7001, 0, MemberState.ALIVE, 11),
    StateEntry(2, HOST, 7002, 2, MemberState.SUSPECTED, 12),
)


def _machine() -> SwimMachine:
    m = SwimMachine(CONFIG, 0, HOST, 7000, rng=random.Random(3), now=50.0, boot=10)
    m.preload(MEMBERS)
    return m


def _sealed(keyring: Keyring | None, body: bytes, label: bytes) -> dict[str, Any]:
    assert keyring is not None
    return {"k": "swim", "sealed": keyring.seal(body, label)}


def _serve(keyring: Keyring | None, body: bytes) -> bool:
    if keyring is None:
        request = decode_frame(body).request
        if not isinstance(request, Swim):
            return False
        frame: Any = dict(request.message)
    else:
        frame = _sealed(keyring, body, TCP_REQUEST)
    m = _machine()
    try:
        msg = exchange.open_sealed(keyring, frame, TCP_REQUEST, MAX_BYTES)
        op = msg.get("op")
        if op == "induct":
            reply = exchange.induct_reply(m.next_free_id())
        elif op == "pushpull":
            entries = wire.decode_state_untrusted(msg.get("state"))
            reply = exchange.pushpull_reply(m.node_id, m.local_state())
            m.merge_state(entries, 51.0, exchange.sender(msg))
        else:
            reply = exchange.error_reply(f"unknown swim op {op!r:.40}")
    except wire.BadMessage as exc:
        reply = exchange.error_reply(str(exc))
    msgpack.packb(exchange.seal(keyring, reply, TCP_REPLY), use_bin_type=True)
    return reply.get("ok") is True


async def _read_frame(data: bytes) -> Any:
    stream = trio.testing.MemoryReceiveStream()
    stream.put_data(data)
    stream.put_eof()
    return await recv_frame(stream, MAX_BYTES)


def _answered(keyring: Keyring | None, data: bytes) -> bool:
    reply = trio.run(_read_frame, data) if keyring is None else _sealed(keyring, data, TCP_REPLY)
    reply = exchange.open_sealed(keyring, reply, TCP_REPLY, MAX_BYTES)
    try:
        exchange.read_induct_reply(reply)
        return True
    except wire.BadMessage:
        pass
    peer, entries = exchange.read_pushpull_reply(reply)
    _machine().merge_state(entries, 51.0, peer)
    return True


def test_one_input(data: bytes) -> bool:
    """True when the frame was an exchange the member took part in."""
    if not data:
        return False
    keyring = KEYRING if data[0] & 1 else None
    try:
        if data[0] & 2:
            return _answered(keyring, data[1:])
        return _serve(keyring, data[1:])
    except (wire.BadMessage, BadFrame, FrameError):
        return False
