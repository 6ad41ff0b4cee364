"""Target ``memberlist_stream``: the bytes of one memberlist TCP stream, as the door reads them
(``swim.memberlist.stream.read_request``, then ``read_pushpull`` or the ping's body).

Input: a mode byte, then what the peer sends before it closes its side. Bit 0 of the mode: read
with the test keyring; bit 1: the rest is sealed here first (memberlist's stream envelope, a
fixed nonce), so the fuzzer writes what is inside it. The first four bytes reach the reader as
``first``, as the node's RPC server hands them over.

Only ``BadMessage`` may come out (``stream`` rule 1): the stream ends with the input, so a read
past it is ``truncated``, never a wait. A push/pull it reads encodes again
(``pushpull_bytes``, plain and sealed) into a stream that reads the same; a ping's body is a
``Ping``.
"""

from __future__ import annotations

import struct

import trio
import trio.testing

from swim.memberlist import codec, stream
from swim.memberlist.codec import Kind
from swim.wire import BadMessage

from ..mutators import after, msgpack_mutator
from .memberlist import AEAD, KEYRING, NONCE

__all__ = ["MAX_BYTES", "MAX_STATES", "custom_mutator", "test_one_input"]

MAX_BYTES = 1 << 16
MAX_STATES = 64
_LEN = struct.Struct(">I")

custom_mutator = msgpack_mutator("memberlist", after(2))  # the mode, a type byte, a header


def sealed(msg: bytes) -> bytes:
    """``msg`` in memberlist's stream envelope under the test key (a fixed nonce)."""
    head = bytes([Kind.ENCRYPT]) + _LEN.pack(1 + codec.NONCE + len(msg) + 16)
    return head + b"\x01" + NONCE + AEAD.encrypt(NONCE, msg, head)  # the header is the AAD


async def _read(data: bytes, keyed: bool) -> bool:
    ring = KEYRING if keyed else None
    source = trio.testing.MemoryReceiveStream()
    source.put_data(data[4:])
    source.put_eof()
    try:
        kind, reader = await stream.read_request(source, data[:4], ring, MAX_BYTES)
        if kind == Kind.PUSH_PULL:
            join, states = await stream.read_pushpull(reader, MAX_STATES)
        elif kind == Kind.PING:
            ping = codec.decode_body(Kind.PING, await reader.map())
            assert isinstance(ping, codec.Ping), ping
            return True
        elif kind == Kind.ERROR:
            codec.text_field(await reader.map(), b"Error")
            return True
        else:
            return False
    except BadMessage:
        return False
    assert len(states) <= MAX_STATES
    again = stream.pushpull_bytes(states, join)
    for ring_again in (None, KEYRING):
        wrapped = stream.sealed_stream(ring_again, again)
        source = trio.testing.MemoryReceiveStream()
        source.put_data(wrapped)
        source.put_eof()
        kind, reader = await stream.read_request(source, b"", ring_again, 1 << 22)
        assert kind == Kind.PUSH_PULL, kind
        assert await stream.read_pushpull(reader, MAX_STATES) == (join, states)
    return True


def test_one_input(data: bytes) -> bool:
    """True when a push/pull, a ping or an error reply was read whole."""
    if not data:
        return False
    mode, rest = data[0] & 3, data[1:]
    if mode & 2:
        rest = sealed(rest)
    accepted: bool = trio.run(_read, rest, bool(mode & 1))
    return accepted
