"""memberlist's packets made by hand, as a Serf agent (or an attacker) lays them out, for the
codec's tests, the hostile suite and the fuzzer's seeds: no checks, so a test can make what
``swim.memberlist.codec.encode_packet`` refuses to (a compound of 300 parts, a body of the
wrong shape, a compress message around any stream).
"""

from __future__ import annotations

import struct
from typing import Any

import msgpack

from swim.memberlist import lzw
from swim.memberlist.messages import Kind

__all__ = ["compound", "compress_message", "compressed", "pack", "typed"]


def pack(obj: Any) -> bytes:
    """``obj`` in msgpack as Go's codec writes it for memberlist (strings as raw, no bin)."""
    out: bytes = msgpack.packb(obj, use_bin_type=False)
    return out


def typed(kind: int, body: dict[str, Any]) -> bytes:
    """One message: its type byte, then its body."""
    return bytes([kind]) + pack(body)


def compound(parts: list[bytes]) -> bytes:
    """A compound of ``parts`` as memberlist lays it out, whatever their count and sizes (the
    count cut to a byte, each length to two)."""
    lengths = b"".join(struct.pack(">H", len(p) & 0xFFFF) for p in parts)
    return bytes([Kind.COMPOUND, len(parts) & 0xFF]) + lengths + b"".join(parts)


def compress_message(stream: bytes) -> bytes:
    """A compress message holding ``stream`` as its LZW stream, whatever it is."""
    return typed(Kind.COMPRESS, {"Algo": 0, "Buf": stream})


def compressed(msg: bytes) -> bytes:
    """``msg`` in a compress message, as memberlist's ``compressPayload`` writes it."""
    return compress_message(lzw.compress(msg))
