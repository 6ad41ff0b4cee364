"""Target ``memberlist``: one UDP packet through ``swim.memberlist.codec.decode_packet``.

Input: a mode byte, then the packet. The mode's two low bits say how it is decoded:

- 0: as it is, with no keyring (plain packets: CRC, compound, compressed, every message);
- 1: as it is, with the test keyring (Serf's sealed packets, and the refusals of the rest);
- 2: sealed here with the test key (envelope version 1), then opened and decoded: the fuzzer
  writes the plaintext, which it could never do through AES-GCM;
- 3: the same in envelope version 0, whose plaintext ends in its own PKCS#7 padding (the
  fuzzer's last bytes are that padding).

Only ``BadMessage`` may come out (``codec`` rule 1). A packet it accepts holds at most
``MAX_PARTS`` messages and skipped parts (rule 3), and its messages encode again
(``encode_message``, ``encode_packet`` with a CRC, plain and sealed) into a packet that decodes
to the same messages.
"""

from __future__ import annotations

import struct
import zlib

from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from swim.keyring import Keyring
from swim.memberlist import codec
from swim.wire import BadMessage

from ..mutators import Layout, Pieces, msgpack_mutator

__all__ = [
    "AEAD",
    "KEY",
    "KEYRING",
    "LAYOUT",
    "MAX_BYTES",
    "NONCE",
    "custom_mutator",
    "seal",
    "test_one_input",
]

KEY = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ012345"  # the test key of tests/swim/serf_captures
KEYRING = Keyring([KEY])
AEAD = AESGCM(KEY)
NONCE = bytes(codec.NONCE)  # a fixed nonce: the same input, the same bytes (a test key)
MAX_BYTES = 16384  # under the door's 65507, so the fuzzer reaches the bounds sooner
_LEN = struct.Struct(">H")


def seal(plain: bytes, version: int) -> bytes:
    """``plain`` in memberlist's envelope under the test key (no padding is added)."""
    return bytes([version]) + NONCE + AEAD.encrypt(NONCE, plain, None)


def _split(data: bytes) -> Pieces:
    """The mode byte (and a CRC's type byte), then (type byte, msgpack body) per message."""
    head, msg = data[:1], data[1:]
    if data[:1] and data[0] & 3 == 1:  # sealed: no body a mutator could read
        return [(data, b"")]
    if len(msg) >= 5 and msg[0] == codec.Kind.CRC:
        head, msg = head + msg[:1], msg[5:]
    parts = [msg]
    if len(msg) >= 2 and msg[0] == codec.Kind.COMPOUND:
        count, at = msg[1], 2 + 2 * msg[1]
        parts = []
        for i in range(count):
            if 4 + 2 * i > len(msg):
                break
            (n,) = _LEN.unpack_from(msg, 2 + 2 * i)
            parts.append(msg[at : at + n])
            at += n
    return [(head, b""), *((p[:1], p[1:]) for p in parts)]


def _join(pieces: Pieces) -> bytes:
    """The input ``_split`` read, lengths and checksum computed again."""
    head = pieces[0][0]
    parts = [t + body for t, body in pieces[1:]]
    if not parts:
        return head
    msg = parts[0]
    if len(parts) > 1:
        lengths = b"".join(_LEN.pack(len(p) & 0xFFFF) for p in parts)
        msg = bytes([codec.Kind.COMPOUND, len(parts) & 0xFF]) + lengths + b"".join(parts)
    if head[1:2] == bytes([codec.Kind.CRC]):
        msg = head[1:2] + zlib.crc32(msg).to_bytes(4, "big") + msg
    return head[:1] + msg


LAYOUT = Layout(_split, _join)
custom_mutator = msgpack_mutator("memberlist", LAYOUT)


def _packet(data: bytes) -> tuple[bytes, Keyring | None]:
    mode, rest = data[0] & 3, data[1:]
    if mode == 0:
        return rest, None
    if mode == 1:
        return rest, KEYRING
    return seal(rest, 1 if mode == 2 else 0), KEYRING


def test_one_input(data: bytes) -> bool:
    """True when the packet decoded (its messages may all have been skipped)."""
    if not data:
        return False
    packet, keyring = _packet(data)
    try:
        decoded = codec.decode_packet(packet, keyring, MAX_BYTES)
    except BadMessage:
        return False
    messages = decoded.messages
    count = len(messages) + decoded.skipped
    assert 1 <= count <= codec.MAX_PARTS, f"{len(messages)} messages, {decoded.skipped} skipped"
    if not messages:
        return True
    parts = [codec.encode_message(m) for m in messages]
    for ring in (None, KEYRING):
        again = codec.encode_packet(parts, ring, crc=True)
        redecoded = codec.decode_packet(again, ring, 1 << 22)  # no compression: it may grow
        assert redecoded.messages == messages, (messages, redecoded)
        assert redecoded.skipped == 0, redecoded
    return True
