"""Length-prefixed msgpack frames on a trio stream: the TCP format shared with the node RPC.

Frame layout: a 4-byte big-endian body length, then a msgpack body (a map at top level).

Rules:
1. ``recv_frame`` raises ``FrameError`` for every malformed input (bad length, truncated body,
   undecodable msgpack, a body that is not a map); ``trio`` errors of the stream pass through.
2. ``recv_frame`` returns None on a clean end of stream between frames.
3. No pickling, no extension types: bodies are plain msgpack values.
4. A frame holds at most ``max_values`` msgpack values (list items, map keys and values),
   counted while msgpack builds them: 8 MiB of nested empty lists would otherwise become
   600 MB of Python lists and seconds of a blocked event loop (a peer's push/pull reply).
"""

from __future__ import annotations

import struct
from typing import Any

import msgpack
import trio

__all__ = ["MAX_VALUES", "FrameError", "recv_frame", "send_frame", "unpack_body"]

_LEN = struct.Struct(">I")
MAX_VALUES = 1 << 19  # a push/pull state of 65536 members (the default max_members) is 458,753


class FrameError(Exception):
    """A malformed or oversized frame on a TCP stream (the connection should be closed)."""


async def send_frame(stream: trio.abc.SendStream, obj: Any) -> None:
    """Send one frame holding ``obj`` (msgpack-able: dicts, lists, str, bytes, ints...)."""
    body = msgpack.packb(obj, use_bin_type=True)
    await stream.send_all(_LEN.pack(len(body)) + body)


async def _read_exactly(stream: trio.abc.ReceiveStream, n: int, *, at_start: bool) -> bytes | None:
    buf = bytearray()
    while len(buf) < n:
        chunk = await stream.receive_some(n - len(buf))
        if not chunk:
            if at_start and not buf:
                return None
            raise FrameError(f"stream ended inside a frame ({len(buf)} of {n} bytes)")
        buf += chunk
    return bytes(buf)


class _TooManyValues(Exception):
    pass


async def recv_frame(
    stream: trio.abc.ReceiveStream, max_bytes: int, max_values: int = MAX_VALUES
) -> Any:
    """Receive one frame; None at a clean end of stream; ``FrameError`` if malformed."""
    head = await _read_exactly(stream, _LEN.size, at_start=True)
    if head is None:
        return None
    (length,) = _LEN.unpack(head)
    if length == 0 or length > max_bytes:
        raise FrameError(f"frame length {length} outside 1..{max_bytes}")
    body = await _read_exactly(stream, length, at_start=False)
    assert body is not None
    return unpack_body(body, max_values)[0]


def unpack_body(body: bytes | bytearray, max_values: int = MAX_VALUES) -> tuple[Any, int]:
    """The msgpack map of an untrusted frame body and how many values it holds (rule 4);
    ``FrameError`` if it is not msgpack, not a map, or holds more than ``max_values`` values.
    The node RPC's frames are read with it too."""
    values = 1

    def count(container: Any) -> Any:  # called as each list or map is built (rule 4)
        nonlocal values
        values += len(container) * (2 if isinstance(container, dict) else 1)
        if values > max_values:
            raise _TooManyValues
        return container

    try:
        obj = msgpack.unpackb(
            body,
            raw=False,
            strict_map_key=True,
            max_ext_len=0,
            max_array_len=max_values,
            max_map_len=max_values,
            list_hook=count,
            object_hook=count,
        )
    except _TooManyValues:
        raise FrameError(f"a frame holds more than {max_values} values") from None
    except Exception as exc:  # msgpack raises many types for hostile input; one door out
        raise FrameError(f"undecodable frame body: {type(exc).__name__}") from None
    if not isinstance(obj, dict):
        raise FrameError(f"frame body is a {type(obj).__name__}, not a map")
    return obj, values
