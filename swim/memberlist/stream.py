"""memberlist over TCP: push/pull (join and anti-entropy), the TCP ping, error replies.

A stream carries one request and its reply, with no length prefix::

    stream  := 10:u8 len:u32 (1:u8 nonce:12 AES-GCM(msg, aad=the 5 bytes before))   keyring
             | msg
    msg     := 9:u8 go-msgpack({Algo: 0, Buf: lzw(msg)})      compressed
             | 6:u8 header{Nodes, UserStateLen, Join} state*Nodes user-state-bytes
             | 0:u8 ping  ->  2:u8 ackResp                    the TCP ping
             | 13:u8 {Error}                                  a refusal

Rules:
1. Everything read is bounded: ``max_bytes`` in all (sealed, plain and decompressed alike),
   at most ``max_states`` member states, and the caller's deadline over the whole exchange.
   Every refusal raises ``BadMessage``; nothing else escapes but trio's stream errors.
2. With a keyring, a stream that is not sealed is refused, as memberlist refuses it.
3. Serf's user state in a push/pull is read past and ignored; ours is empty.
4. The event loop never waits out a large decompression: a compressed body over ``INLINE_LZW``
   bytes is expanded in a worker thread (Python's LZW takes seconds for the megabytes a
   stream may hold), one at a time per run, and abandoned to finish on its own if the
   caller's deadline passes first.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import Any

import msgpack
import trio

from ..keyring import Keyring
from ..messages import BadMessage
from . import codec
from .codec import Kind, NodeState

__all__ = ["Reader", "pushpull_bytes", "read_request", "request_pushpull", "sealed_stream"]

_LEN = struct.Struct(">I")
_CHUNK = 65536
INLINE_LZW = 1 << 16  # compressed bytes expanded on the event loop (a few ms); more: rule 4
_LZW_THREADS: trio.lowlevel.RunVar[trio.CapacityLimiter] = trio.lowlevel.RunVar("lzw_threads")


class Reader:
    """Incremental msgpack values and raw bytes from a stream (or from bytes already whole)."""

    def __init__(self, stream: trio.abc.ReceiveStream | None, max_bytes: int) -> None:
        self._stream = stream
        self._max = max_bytes
        self._got = 0
        self._unpacker = msgpack.Unpacker(max_buffer_size=max_bytes, **codec.limits(max_bytes))

    def feed(self, data: bytes | bytearray) -> None:
        self._got += len(data)
        if self._got > self._max:
            raise BadMessage("oversize", f"more than {self._max} bytes")
        self._unpacker.feed(data)

    async def _more(self) -> None:
        chunk = b"" if self._stream is None else await self._stream.receive_some(_CHUNK)
        if not chunk:
            raise BadMessage("truncated", "the stream ended inside a message")
        self.feed(chunk)

    async def value(self) -> Any:
        while True:
            try:
                return next(self._unpacker)
            except StopIteration:
                await self._more()
            except Exception as exc:  # msgpack's many errors for hostile input: one door out
                raise BadMessage("malformed", f"msgpack: {type(exc).__name__}") from None

    async def map(self) -> dict[bytes, Any]:
        value = await self.value()
        if not isinstance(value, dict):
            raise BadMessage("malformed", "a body that is not a map")
        return value

    async def raw(self, n: int) -> bytes:
        out = bytearray()
        while len(out) < n:
            out += self._unpacker.read_bytes(n - len(out))
            if len(out) < n:
                await self._more()
        return bytes(out)


def _whole(data: bytes, max_bytes: int) -> Reader:
    reader = Reader(None, max_bytes)
    reader.feed(data)
    return reader


async def read_request(
    stream: trio.abc.ReceiveStream, first: bytes, keyring: Keyring | None, max_bytes: int
) -> tuple[int, Reader]:
    """The type of the message on ``stream`` (whose first bytes are ``first``), and a reader
    of its body: the envelope opened and the compression undone (rules 1 and 2)."""
    reader = Reader(stream, max_bytes)
    reader.feed(first)
    kind = (await reader.raw(1))[0]
    if kind == Kind.ENCRYPT:
        if keyring is None:
            raise BadMessage("auth", "a sealed stream and no keyring")
        head = bytes([kind]) + await reader.raw(4)
        (size,) = _LEN.unpack(head[1:])
        if size > max_bytes:
            raise BadMessage("oversize", f"a sealed stream of {size} bytes")
        plain = codec.open_sealed(keyring, await reader.raw(size), head)
        if not plain:
            raise BadMessage("truncated", "an empty sealed stream")
        kind, reader = plain[0], _whole(plain[1:], max_bytes)
    elif keyring is not None:
        raise BadMessage("auth", "a plain stream and a keyring")
    if kind == Kind.COMPRESS:
        plain = await _decompressed(await reader.map(), max_bytes)
        if not plain:
            raise BadMessage("truncated", "an empty compressed stream")
        kind, reader = plain[0], _whole(plain[1:], max_bytes)
    return kind, reader


async def _decompressed(body: dict[bytes, Any], max_bytes: int) -> bytes:
    """``codec.decompressed``, in a worker thread for a large body (rule 4)."""
    buf = body.get(b"Buf")
    if not isinstance(buf, bytes | list) or len(buf) <= INLINE_LZW:
        return codec.decompressed(body, max_bytes)
    try:
        limiter = _LZW_THREADS.get()
    except LookupError:
        limiter = trio.CapacityLimiter(1)  # more threads would only share the GIL
        _LZW_THREADS.set(limiter)
    return await trio.to_thread.run_sync(
        codec.decompressed, body, max_bytes, abandon_on_cancel=True, limiter=limiter
    )


async def read_pushpull(reader: Reader, max_states: int) -> tuple[bool, list[NodeState]]:
    """``(join, states)`` of a push/pull body (after its type byte)."""
    header = await reader.map()
    count, user = header.get(b"Nodes", 0), header.get(b"UserStateLen", 0)
    join = header.get(b"Join", False)
    for v, top in ((count, max_states), (user, 1 << 30)):
        if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v <= top:
            raise BadMessage("bad_state", f"a push/pull header with {v!r:.40}")
    if not isinstance(join, bool):
        raise BadMessage("bad_state", "Join is not a bool")
    states = []
    for _ in range(count):
        states.append(codec.decode_state(await reader.map()))
    await reader.raw(user)  # rule 3
    return join, states


def pushpull_bytes(states: Sequence[NodeState], join: bool) -> bytes:
    head: bytes = msgpack.packb(
        {"Nodes": len(states), "UserStateLen": 0, "Join": join}, use_bin_type=False
    )
    parts = [bytes([Kind.PUSH_PULL]), head]
    parts += [codec.encode_message(s) for s in states]
    return b"".join(parts)


def sealed_stream(keyring: Keyring | None, msg: bytes) -> bytes:
    """``msg`` as sent on a stream: in memberlist's envelope when there is a keyring."""
    if keyring is None:
        return msg
    head = bytes([Kind.ENCRYPT]) + _LEN.pack(1 + codec.NONCE + len(msg) + 16)
    return keyring.seal_envelope(head + b"\x01", msg, head)


def error_bytes(text: str) -> bytes:
    body: bytes = msgpack.packb({"Error": text}, use_bin_type=False)
    return bytes([Kind.ERROR]) + body


def ack_bytes(seq: int) -> bytes:
    return codec.encode_message(codec.Ack(seq))


async def request_pushpull(
    host: str,
    port: int,
    states: Sequence[NodeState],
    *,
    join: bool,
    keyring: Keyring | None,
    max_bytes: int,
    max_states: int,
) -> list[NodeState]:
    """One push/pull with ``host:port``: ours sent, theirs returned (``BadMessage`` or
    ``OSError`` when it fails; the caller bounds the time)."""
    stream = await trio.open_tcp_stream(host, port)
    async with stream:
        await stream.send_all(sealed_stream(keyring, pushpull_bytes(states, join)))
        kind, reader = await read_request(stream, b"", keyring, max_bytes)
        if kind == Kind.ERROR:
            text = codec.text_field(await reader.map(), b"Error")
            raise BadMessage("remote_error", text[:200])
        if kind != Kind.PUSH_PULL:
            raise BadMessage("malformed", f"a reply of type {kind}")
        _, theirs = await read_pushpull(reader, max_states)
        return theirs
