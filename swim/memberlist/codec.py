"""memberlist's messages (hashicorp/memberlist 0.2, as Serf 0.9 speaks them), as bytes.

A UDP packet, from the outside in::

    packet   := 1:u8 nonce:12 AES-GCM(plain)          with a keyring (no associated data;
                                                        version 0 pads the plaintext PKCS#7)
    plain    := 12:u8 crc32:u32 msg  |  msg            (IEEE CRC of ``msg``)
    msg      := type:u8 go-msgpack(map)                one message
              | 7:u8 count:u8 len:u16*count part*      compound: each part a ``msg``
              | 9:u8 go-msgpack({Algo: 0, Buf})        compressed: Buf is Go LZW of a ``msg``

Bodies are maps keyed by the Go field names; strings and byte slices both travel as msgpack
raw strings (go-msgpack's default), integers big-endian. Types: ping 0, indirect ping 1,
ack 2, suspect 3, alive 4, dead 5, push/pull 6 (TCP only), user 8, nack 11, error 13.

Rules:
1. ``decode_packet`` raises only ``BadMessage`` (its ``reason`` labels the drop counter);
   every field is checked for type and range before a message is built (``bodies``: the
   maps, field by field). A field that is absent takes Go's zero value.
2. A part of a type this edge does not take (Serf's user messages and queries, a push/pull
   sent over UDP) is skipped and counted; the other parts of the packet still count.
3. Limits: a packet of at most ``max_bytes``, and at most ``max_bytes`` decompressed in all
   its layers together; at most ``MAX_PARTS`` messages and skipped parts in all (a compound
   of compressed compounds would otherwise hold tens of thousands); compound and compressed
   layers nest at most ``MAX_DEPTH`` deep; names at most ``MAX_NAME`` bytes of UTF-8; node
   meta at most ``MAX_META`` bytes (memberlist's ``MetaMaxSize``).
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import msgpack

from ..keyring import Keyring
from ..messages import BadMessage
from .bodies import (
    decode_body,
    decode_state,
    decoder_for,
    decompressed,
    limits,
    text_field,
    unpack_map,
)
from .messages import (
    MAX_META,
    MAX_NAME,
    VSN,
    Ack,
    Alive,
    Dead,
    Decoded,
    IndirectPing,
    Kind,
    Message,
    Nack,
    NodeState,
    Ping,
    Suspect,
    ip_bytes,
    ip_text,
)

__all__ = [
    "MAX_DEPTH",
    "MAX_META",
    "MAX_NAME",
    "MAX_PARTS",
    "NONCE",
    "VSN",
    "Ack",
    "Alive",
    "Dead",
    "Decoded",
    "IndirectPing",
    "Kind",
    "Message",
    "Nack",
    "NodeState",
    "Ping",
    "Suspect",
    "decode_body",
    "decode_packet",
    "decode_state",
    "decompressed",
    "encode_message",
    "encode_packet",
    "ip_bytes",
    "ip_text",
    "limits",
    "open_sealed",
    "text_field",
    "unpack_map",
]

MAX_DEPTH = 3
MAX_PARTS = 255
NONCE = 12
_LEN = struct.Struct(">H")
_CRC = struct.Struct(">I")


# ---- encoding --------------------------------------------------------------------------------


def _pack(obj: Any) -> bytes:
    out: bytes = msgpack.packb(obj, use_bin_type=False)
    return out


def encode_message(msg: Message | NodeState) -> bytes:
    """One message: its type byte and its go-msgpack map (a ``NodeState`` has no type)."""
    match msg:
        case Ping():
            body: dict[str, Any] = {"SeqNo": msg.seq, "Node": msg.node}
            return bytes([Kind.PING]) + _pack(body | _source_fields(msg))
        case IndirectPing():
            body = {
                "SeqNo": msg.seq,
                "Target": ip_bytes(msg.target_ip),
                "Port": msg.port,
                "Node": msg.node,
                "Nack": msg.nack,
            }
            return bytes([Kind.INDIRECT_PING]) + _pack(body | _source_fields(msg))
        case Ack():
            return bytes([Kind.ACK]) + _pack({"SeqNo": msg.seq, "Payload": b""})
        case Nack():
            return bytes([Kind.NACK]) + _pack({"SeqNo": msg.seq})
        case Suspect() | Dead():
            kind = Kind.SUSPECT if isinstance(msg, Suspect) else Kind.DEAD
            body = {"Incarnation": msg.incarnation, "Node": msg.node, "From": msg.src}
            return bytes([kind]) + _pack(body)
        case Alive():
            body = {
                "Incarnation": msg.incarnation,
                "Node": msg.node,
                "Addr": ip_bytes(msg.ip),
                "Port": msg.port,
                "Meta": msg.meta,
                "Vsn": msg.vsn,
            }
            return bytes([Kind.ALIVE]) + _pack(body)
        case NodeState():
            return _pack(
                {
                    "Name": msg.name,
                    "Addr": ip_bytes(msg.ip),
                    "Port": msg.port,
                    "Meta": msg.meta,
                    "Incarnation": msg.incarnation,
                    "State": msg.state,
                    "Vsn": msg.vsn,
                }
            )
    raise TypeError(f"not a memberlist message: {type(msg).__name__}")


def _source_fields(msg: Ping | IndirectPing) -> dict[str, Any]:
    """A ping's source fields, each left out when empty (Go's ``omitempty`` on each)."""
    body: dict[str, Any] = {}
    if msg.source_ip:
        body["SourceAddr"] = ip_bytes(msg.source_ip)
    if msg.source_port:
        body["SourcePort"] = msg.source_port
    if msg.source_node:
        body["SourceNode"] = msg.source_node
    return body


def encode_packet(parts: Sequence[bytes], keyring: Keyring | None, *, crc: bool = True) -> bytes:
    """A UDP packet of ``parts`` (``encode_message`` bytes): compound when more than one,
    with a CRC, sealed with the keyring's primary key (encryption version 1)."""
    if not 1 <= len(parts) <= MAX_PARTS:
        raise ValueError(f"a packet holds 1..{MAX_PARTS} parts, not {len(parts)}")
    if len(parts) == 1:
        msg = parts[0]
    else:
        head = bytes([Kind.COMPOUND, len(parts)]) + b"".join(_LEN.pack(len(p)) for p in parts)
        msg = head + b"".join(parts)
    if crc:
        msg = bytes([Kind.CRC]) + _CRC.pack(zlib.crc32(msg)) + msg
    if keyring is not None:
        msg = keyring.seal_envelope(b"\x01", msg, None)
    return msg


# ---- decoding --------------------------------------------------------------------------------


def open_sealed(keyring: Keyring, data: bytes, aad: bytes | None) -> bytes:
    """The plaintext of memberlist's envelope (version 0 or 1); ``BadMessage("auth")``."""
    if len(data) < 1 + NONCE + 16 or data[0] not in (0, 1):
        raise BadMessage("auth", f"not sealed ({len(data)} bytes)")
    plain = keyring.open_envelope(data[1 : 1 + NONCE], data[1 + NONCE :], aad)
    if data[0] == 0:  # PKCS#7 padding
        pad = plain[-1] if plain else 0
        if not 1 <= pad <= 16 or pad > len(plain):
            raise BadMessage("auth", "bad padding")
        plain = plain[:-pad]
    return plain


def decode_packet(data: bytes, keyring: Keyring | None, max_bytes: int) -> Decoded:
    """The messages of one UDP packet; raises only ``BadMessage``."""
    if len(data) > max_bytes:
        raise BadMessage("oversize", f"{len(data)} bytes")
    if keyring is not None:
        data = open_sealed(keyring, data, None)
    if len(data) >= 5 and data[0] == Kind.CRC:
        (want,) = _CRC.unpack_from(data, 1)
        data = data[5:]
        if zlib.crc32(data) != want:
            raise BadMessage("crc", "checksum does not match")
    walk = _Walk(Decoded([], 0), max_bytes, max_bytes)
    _command(data, 0, walk)
    return walk.out


@dataclass(slots=True)
class _Walk:
    """One packet's decoding: what it holds so far and what it may still take (rule 3)."""

    out: Decoded
    max_bytes: int
    inflate: int  # bytes decompression may still produce

    def count(self) -> None:
        """One more message or skipped part; BadMessage past ``MAX_PARTS``."""
        if len(self.out.messages) + self.out.skipped >= MAX_PARTS:
            raise BadMessage("oversize", f"more than {MAX_PARTS} messages in one packet")


def _command(buf: bytes, depth: int, walk: _Walk) -> None:
    if not buf:
        raise BadMessage("truncated", "an empty message")
    kind = buf[0]
    if kind in (Kind.COMPOUND, Kind.COMPRESS):
        if depth >= MAX_DEPTH:
            raise BadMessage("malformed", "layers nested too deep")
        if kind == Kind.COMPOUND:
            for part in _compound_parts(buf):
                _command(part, depth + 1, walk)
        else:
            inner = decompressed(unpack_map(buf[1:], walk.max_bytes), walk.inflate)
            walk.inflate -= len(inner)
            _command(inner, depth + 1, walk)
        return
    walk.count()
    decoder = decoder_for(kind)
    if decoder is None:
        walk.out.skipped += 1  # rule 2
        return
    walk.out.messages.append(decoder(unpack_map(buf[1:], walk.max_bytes)))


def _compound_parts(buf: bytes) -> list[bytes]:
    if len(buf) < 2:
        raise BadMessage("truncated", "a compound without its count")
    count = buf[1]
    start = 2 + 2 * count
    if count == 0 or len(buf) < start:
        raise BadMessage("truncated", f"a compound of {count} parts without their lengths")
    parts = []
    at = start
    for i in range(count):
        (n,) = _LEN.unpack_from(buf, 2 + 2 * i)
        if at + n > len(buf):
            raise BadMessage("truncated", f"compound part {i} runs past the packet")
        parts.append(buf[at : at + n])
        at += n
    return parts
