"""The UDP wire format: a version byte, a type byte, a msgpack body; compound packets.

Packet layout::

    packet   := VERSION:u8  part
    part     := TYPE:u8  msgpack(body)           one message
              | COMPOUND:u8  msgpack([bin, ...])  each bin a part that is not itself compound

Rules:
1. ``decode_untrusted(data)`` raises only ``BadMessage`` (its ``reason`` is a short counter
   label): every field of every body is checked for type and range before a message is built,
   so nothing from the network reaches the machine unvalidated.
2. Bodies are msgpack arrays of plain ints, strings and bools; extension types, floats and maps
   are rejected. Nothing is ever unpickled.
3. The push/pull state that travels over TCP is validated here too (``decode_state_untrusted``).
4. The records themselves are the machine's (``messages``); this module only turns them into
   bytes and back, for the door of our own format (``swim.rtsimdoor``) and the TCP exchanges;
   what they weigh without being encoded is counted by ``sizes``, from the same field table.
"""

from __future__ import annotations

import enum
import functools
from collections.abc import Callable, Sequence
from typing import Any

import msgpack

from .members import MemberState
from .messages import (
    Ack,
    Alive,
    BadMessage,
    Dead,
    Message,
    Nack,
    Ping,
    PingReq,
    StateEntry,
    Suspect,
    type_name,
)
from .sizes import FIELDS, MAX_PARTS, compound_overhead, packet_size, part_size

__all__ = [
    "MAX_PARTS",
    "MAX_UDP_BYTES",
    "PART_CACHE",
    "VERSION",
    "Ack",
    "Alive",
    "BadMessage",
    "Dead",
    "Message",
    "MsgType",
    "Nack",
    "Ping",
    "PingReq",
    "StateEntry",
    "Suspect",
    "cached_part",
    "compound_overhead",
    "decode_state_untrusted",
    "decode_untrusted",
    "encode",
    "encode_compound",
    "encode_part",
    "encode_state",
    "packet_size",
    "part_size",
    "type_name",
]

VERSION = 1
MAX_UDP_BYTES = 65507
PART_CACHE = 4096  # encoded parts remembered (``cached_part``)
_U16, _U32, _U63 = (1 << 16) - 1, (1 << 32) - 1, (1 << 63) - 1
_MAX_HOST = 255


class MsgType(enum.IntEnum):
    PING = 1
    PING_REQ = 2
    ACK = 3
    NACK = 4
    ALIVE = 5
    SUSPECT = 6
    DEAD = 7
    COMPOUND = 8


_TYPE_OF: dict[type[Any], MsgType] = {
    Ping: MsgType.PING,
    PingReq: MsgType.PING_REQ,
    Ack: MsgType.ACK,
    Nack: MsgType.NACK,
    Alive: MsgType.ALIVE,
    Suspect: MsgType.SUSPECT,
    Dead: MsgType.DEAD,
}


def encode_part(msg: Message) -> bytes:
    """One message without the version byte (a part of a compound packet): its fields in
    order, as a msgpack array."""
    packed: bytes = msgpack.packb(FIELDS[type(msg)](msg), use_bin_type=True)
    return bytes([_TYPE_OF[type(msg)]]) + packed


@functools.lru_cache(maxsize=PART_CACHE)
def cached_part(msg: Message) -> bytes:
    """``encode_part``, remembered for the last ``PART_CACHE`` messages: a queued update is
    measured once by the outbox and then encoded by the door each time it is sent."""
    return encode_part(msg)


def encode(msg: Message) -> bytes:
    """A packet holding one message."""
    return bytes([VERSION]) + encode_part(msg)


def encode_compound(parts: Sequence[bytes]) -> bytes:
    """A packet holding several parts (from ``encode_part``); one part is sent plain."""
    if len(parts) == 1:
        return bytes([VERSION]) + parts[0]
    if not 1 <= len(parts) <= MAX_PARTS:
        raise ValueError(f"a compound packet holds 1..{MAX_PARTS} parts, not {len(parts)}")
    packed: bytes = msgpack.packb(list(parts), use_bin_type=True)
    return bytes([VERSION, MsgType.COMPOUND]) + packed


def decode_untrusted(data: bytes, max_bytes: int = MAX_UDP_BYTES) -> list[Message]:
    """Decode one packet into its messages; raises only ``BadMessage``."""
    if len(data) > max_bytes:
        raise BadMessage("oversize", f"{len(data)} bytes")
    if len(data) < 2:
        raise BadMessage("truncated", f"{len(data)} bytes")
    if data[0] != VERSION:
        raise BadMessage("version", f"version {data[0]}")
    if data[1] != MsgType.COMPOUND:
        return [_decode_part(data[1:], max_bytes)]
    parts = _unpack(data[2:], max_bytes)
    if not isinstance(parts, list) or not 1 <= len(parts) <= MAX_PARTS:
        raise BadMessage("malformed", "compound body is not a list of 1..255 parts")
    out: list[Message] = []
    for part in parts:
        if not isinstance(part, bytes) or len(part) < 1:
            raise BadMessage("malformed", "compound part is not bytes")
        if part[0] == MsgType.COMPOUND:
            raise BadMessage("malformed", "nested compound")
        out.append(_decode_part(part, max_bytes))
    return out


def _unpack(body: bytes, max_bytes: int) -> Any:
    try:
        return msgpack.unpackb(
            body,
            raw=False,
            use_list=True,
            strict_map_key=True,
            max_str_len=max_bytes,
            max_bin_len=max_bytes,
            max_array_len=MAX_PARTS,
            max_map_len=0,
            max_ext_len=0,
        )
    except Exception as exc:  # msgpack raises many types for hostile input; one door out
        raise BadMessage("malformed", f"msgpack: {type(exc).__name__}") from None


def _decode_part(part: bytes, max_bytes: int) -> Message:
    kind = part[0]
    body = _unpack(part[1:], max_bytes)
    if not isinstance(body, list):
        raise BadMessage("malformed", "body is not a list")
    decoder = _DECODER_OF.get(kind)
    if decoder is None:
        raise BadMessage("unknown_type", f"type {kind}")
    return decoder(body)


def _int(v: Any, hi: int, what: str) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v <= hi:
        raise BadMessage("bad_field", f"{what} = {v!r}")
    return v


def _str(v: Any, what: str) -> str:
    if not isinstance(v, str) or not 0 < len(v) <= _MAX_HOST:
        raise BadMessage("bad_field", f"{what} = {v!r:.40}")
    return v


def _bool(v: Any, what: str) -> bool:
    if not isinstance(v, bool):
        raise BadMessage("bad_field", f"{what} = {v!r}")
    return v


def _arity(body: list[Any], n: int, what: str) -> None:
    if len(body) != n:
        raise BadMessage("bad_field", f"{what} has {len(body)} fields, not {n}")


def _ping(b: list[Any]) -> Message:
    _arity(b, 5, "ping")
    return Ping(
        _int(b[0], _U32, "seq"),
        _int(b[1], _U32, "target"),
        _int(b[2], _U32, "src"),
        _str(b[3], "src_host"),
        _int(b[4], _U16, "src_port"),
    )


def _ping_req(b: list[Any]) -> Message:
    _arity(b, 8, "ping_req")
    return PingReq(
        _int(b[0], _U32, "seq"),
        _int(b[1], _U32, "target"),
        _str(b[2], "target_host"),
        _int(b[3], _U16, "target_port"),
        _bool(b[4], "nack"),
        _int(b[5], _U32, "src"),
        _str(b[6], "src_host"),
        _int(b[7], _U16, "src_port"),
    )


def _ack(b: list[Any]) -> Message:
    _arity(b, 2, "ack")
    return Ack(_int(b[0], _U32, "seq"), _int(b[1], _U32, "src"))


def _nack(b: list[Any]) -> Message:
    _arity(b, 2, "nack")
    return Nack(_int(b[0], _U32, "seq"), _int(b[1], _U32, "src"))


def _alive(b: list[Any]) -> Message:
    _arity(b, 5, "alive")
    return Alive(
        _int(b[0], _U63, "incarnation"),
        _int(b[1], _U32, "node"),
        _str(b[2], "host"),
        _int(b[3], _U16, "port"),
        _int(b[4], _U63, "boot"),
    )


def _suspect(b: list[Any]) -> Message:
    _arity(b, 3, "suspect")
    return Suspect(
        _int(b[0], _U63, "incarnation"), _int(b[1], _U32, "node"), _int(b[2], _U32, "src")
    )


def _dead(b: list[Any]) -> Message:
    _arity(b, 3, "dead")
    return Dead(_int(b[0], _U63, "incarnation"), _int(b[1], _U32, "node"), _int(b[2], _U32, "src"))


_DECODERS: dict[MsgType, Callable[[list[Any]], Message]] = {
    MsgType.PING: _ping,
    MsgType.PING_REQ: _ping_req,
    MsgType.ACK: _ack,
    MsgType.NACK: _nack,
    MsgType.ALIVE: _alive,
    MsgType.SUSPECT: _suspect,
    MsgType.DEAD: _dead,
}

_DECODER_OF = {int(t): f for t, f in _DECODERS.items()}  # by the type byte

_WIRE_STATES = {
    s.value: s
    for s in (MemberState.ALIVE, MemberState.SUSPECTED, MemberState.DEAD, MemberState.LEFT)
}


def encode_state(entries: Sequence[StateEntry]) -> list[list[Any]]:
    """Push/pull state as plain msgpack-able rows."""
    return [[e.node, e.host, e.port, e.incarnation, e.state.wire.value, e.boot] for e in entries]


def decode_state_untrusted(rows: Any, max_entries: int = 1 << 20) -> list[StateEntry]:
    """Validate push/pull rows from a peer; raises only ``BadMessage``."""
    if not isinstance(rows, list) or len(rows) > max_entries:
        raise BadMessage("bad_state", "state is not a list of rows")
    out: list[StateEntry] = []
    for row in rows:
        if not isinstance(row, list) or len(row) != 6:
            raise BadMessage("bad_state", "state row is not a 6-list")
        state = _WIRE_STATES.get(row[4]) if isinstance(row[4], str) else None
        if state is None:
            raise BadMessage("bad_state", f"state = {row[4]!r:.40}")
        out.append(
            StateEntry(
                _int(row[0], _U32, "node"),
                _str(row[1], "host"),
                _int(row[2], _U16, "port"),
                _int(row[3], _U63, "incarnation"),
                state,
                _int(row[5], _U63, "boot"),
            )
        )
    return out
