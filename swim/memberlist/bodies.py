"""memberlist's message bodies: go-msgpack maps keyed by Go field names, read field by field.

Rules:
1. Every function here raises only ``BadMessage`` (``codec`` rule 1); every field is checked
   for type and range before a message is built, and a field that is absent takes Go's zero
   value, as the Go decoder gives it.
2. Strings and byte slices both travel as msgpack raw strings (a ``[]uint8`` may come as an
   array of numbers); names are UTF-8 of at most ``MAX_NAME`` bytes, node meta at most
   ``MAX_META`` bytes, integers in their Go type's range.
3. A body is one msgpack map within msgpack's own limits (``limits``): trailing bytes are
   ignored, as the Go decoder ignores them; a compressed body inflates to at most the
   ``max_bytes`` given.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgpack

from ..messages import BadMessage
from .lzw import LzwError, decompress
from .messages import (
    MAX_META,
    MAX_NAME,
    Ack,
    Alive,
    Dead,
    IndirectPing,
    Kind,
    Message,
    Nack,
    NodeState,
    Ping,
    Suspect,
    ip_text,
)

__all__ = [
    "decode_body",
    "decode_state",
    "decoder_for",
    "decompressed",
    "limits",
    "text_field",
    "unpack_map",
]

_U16, _U32 = (1 << 16) - 1, (1 << 32) - 1


def decompressed(body: dict[bytes, Any], max_bytes: int) -> bytes:
    """The message a ``compress`` body holds (LZW, the only algorithm)."""
    if _uint(body, b"Algo", 255) != 0:
        raise BadMessage("bad_field", "an unknown compression algorithm")
    try:
        return decompress(_bytes(body, b"Buf", max_bytes), max_bytes)
    except LzwError as exc:
        raise BadMessage("malformed", f"lzw: {exc}") from None


def unpack_map(body: bytes, max_bytes: int) -> dict[bytes, Any]:
    """The first msgpack value of ``body``, which must be a map (trailing bytes ignored, as
    the Go decoder ignores them)."""
    try:
        value = msgpack.unpackb(body, **limits(max_bytes))
    except msgpack.ExtraData as extra:
        value = extra.unpacked
    except Exception as exc:  # msgpack raises many types for hostile input; one door out
        raise BadMessage("malformed", f"msgpack: {type(exc).__name__}") from None
    if not isinstance(value, dict):
        raise BadMessage("malformed", "a body that is not a map")
    return value


def limits(max_bytes: int) -> dict[str, Any]:
    """msgpack's own limits for a memberlist body (raw strings come out as bytes)."""
    return {
        "raw": True,
        "strict_map_key": False,
        "max_str_len": max_bytes,
        "max_bin_len": max_bytes,
        "max_array_len": 64,
        "max_map_len": 32,
        "max_ext_len": 0,
    }


def _uint(body: dict[bytes, Any], key: bytes, hi: int) -> int:
    v = body.get(key, 0)
    if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v <= hi:
        raise BadMessage("bad_field", f"{key.decode()} = {v!r:.40}")
    return v


def _bytes(body: dict[bytes, Any], key: bytes, most: int) -> bytes:
    v = body.get(key)
    if v is None:
        return b""
    if isinstance(v, list):  # a []uint8 written as an array of numbers
        if not all(isinstance(x, int) and not isinstance(x, bool) and 0 <= x <= 255 for x in v):
            raise BadMessage("bad_field", f"{key.decode()} is not bytes")
        v = bytes(v)
    if not isinstance(v, bytes) or len(v) > most:
        raise BadMessage("bad_field", f"{key.decode()} is not bytes of at most {most}")
    return v


def _name(body: dict[bytes, Any], key: bytes, *, required: bool = True) -> str:
    raw = _bytes(body, key, MAX_NAME)
    if required and not raw:
        raise BadMessage("bad_field", f"{key.decode()} is empty")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise BadMessage("bad_field", f"{key.decode()} is not UTF-8") from None


def _ip(body: dict[bytes, Any], key: bytes) -> str:
    return ip_text(_bytes(body, key, 16))


def _bool(body: dict[bytes, Any], key: bytes) -> bool:
    v = body.get(key, False)
    if not isinstance(v, bool):
        raise BadMessage("bad_field", f"{key.decode()} = {v!r:.40}")
    return v


def _source(b: dict[bytes, Any]) -> tuple[str, int, str]:
    port = _uint(b, b"SourcePort", _U16)
    return _ip(b, b"SourceAddr"), port, _name(b, b"SourceNode", required=False)


def _ping(b: dict[bytes, Any]) -> Message:
    return Ping(_uint(b, b"SeqNo", _U32), _name(b, b"Node", required=False), *_source(b))


def _indirect(b: dict[bytes, Any]) -> Message:
    target = _ip(b, b"Target")
    if not target:
        raise BadMessage("bad_field", "Target is empty")
    return IndirectPing(
        _uint(b, b"SeqNo", _U32),
        target,
        _uint(b, b"Port", _U16),
        _name(b, b"Node", required=False),
        _bool(b, b"Nack"),
        *_source(b),
    )


def _accusation(b: dict[bytes, Any]) -> tuple[int, str, str]:
    return _uint(b, b"Incarnation", _U32), _name(b, b"Node"), _name(b, b"From", required=False)


def _alive(b: dict[bytes, Any]) -> Message:
    ip = _ip(b, b"Addr")
    if not ip:
        raise BadMessage("bad_field", "Addr is empty")
    return Alive(
        _uint(b, b"Incarnation", _U32),
        _name(b, b"Node"),
        ip,
        _uint(b, b"Port", _U16),
        _bytes(b, b"Meta", MAX_META),
        _bytes(b, b"Vsn", 16),
    )


_DECODERS: dict[int, Callable[[dict[bytes, Any]], Message]] = {
    Kind.PING: _ping,
    Kind.INDIRECT_PING: _indirect,
    Kind.ACK: lambda b: Ack(_uint(b, b"SeqNo", _U32)),
    Kind.NACK: lambda b: Nack(_uint(b, b"SeqNo", _U32)),
    Kind.SUSPECT: lambda b: Suspect(*_accusation(b)),
    Kind.DEAD: lambda b: Dead(*_accusation(b)),
    Kind.ALIVE: _alive,
}


def decoder_for(kind: int) -> Callable[[dict[bytes, Any]], Message] | None:
    """The decoder of a message body of type ``kind``; None for a type this edge does not take."""
    return _DECODERS.get(kind)


def decode_body(kind: int, body: dict[bytes, Any]) -> Message:
    """The message of type ``kind`` a decoded map holds; raises only ``BadMessage``."""
    decoder = _DECODERS.get(kind)
    if decoder is None:
        raise BadMessage("unknown_type", f"type {kind}")
    return decoder(body)


def text_field(body: dict[bytes, Any], key: bytes) -> str:
    """A text field of a decoded map ("" when absent); raises only ``BadMessage``."""
    return _name(body, key, required=False)


def decode_state(b: dict[bytes, Any]) -> NodeState:
    """One member of a push/pull (a decoded map); raises only ``BadMessage``."""
    ip = _ip(b, b"Addr")
    if not ip:
        raise BadMessage("bad_state", "Addr is empty")
    return NodeState(
        _name(b, b"Name"),
        ip,
        _uint(b, b"Port", _U16),
        _bytes(b, b"Meta", MAX_META),
        _uint(b, b"Incarnation", _U32),
        _uint(b, b"State", 3),
        _bytes(b, b"Vsn", 16),
    )
