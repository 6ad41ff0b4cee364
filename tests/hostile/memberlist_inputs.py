"""Hostile memberlist input for a node speaking memberlist (``rt_run start --wire memberlist``):
UDP packets and TCP streams, generated with a fixed seed.

Rules:
1. Valid messages are built with ``swim.memberlist``'s own encoders (and ``lzw.compress``), so
   they stay valid when the formats gain fields; the hostile ones are those messages cut,
   nested, mis-summed or over a limit, or bytes from ``random.Random(SEED)``.
2. Every datagram of ``malformed`` is refused by the codec (``codec.decode_packet`` raises
   ``BadMessage``): each is checked as it is made and one that happens to decode is left out,
   so none is a message the node would act on (an alive of a random name adds a member).
3. No stream asks for a legitimate state change: a push/pull that parses carries no state.
"""

from __future__ import annotations

import random
import struct
from collections.abc import Iterator
from typing import Any

from swim.keyring import Keyring
from swim.memberlist import codec, lzw, stream
from swim.memberlist.codec import Kind
from swim.memberlist.door import MAX_PACKET
from swim.wire import BadMessage
from tests.support.memberlist_packets import compound, compress_message, pack, typed

from .http_inputs import SEED

__all__ = [
    "MAX_FRAME",
    "Stream",
    "costly",
    "malformed",
    "ping",
    "sealed_garbage",
    "streams",
]

MAX_FRAME = 8 << 20  # bytes: swim.max_frame_bytes, the bound of one stream
HOST = "127.0.0.1"
Stream = tuple[str, bytes, str]  # what it is, its bytes, then "eof", "stall" or "hold"


def _clears(n: int) -> bytes:
    """``n`` LZW clear codes (a multiple of 8: eight 9-bit codes fill nine bytes)."""
    assert n % 8 == 0, n
    return lzw.pack_codes([256] * 8) * (n // 8)


def _zeros(total: int) -> bytes:
    """An LZW stream that expands to at least ``total`` zeros from a few KB: after each clear,
    every code is the one being defined (the last string and its first byte again), so each
    is one byte longer than the last, until the table is full and is cleared."""
    out = bytearray()
    acc = nbits = 0

    def put(code: int, width: int) -> None:
        nonlocal acc, nbits
        acc |= code << nbits
        nbits += width
        while nbits >= 8:
            out.append(acc & 0xFF)
            acc >>= 8
            nbits -= 8

    written, width = 0, 9
    while written < total:
        put(256, width)
        put(0, 9)
        written, length, hi, width = written + 1, 1, 258, 9
        while hi < 4096 and written < total:
            put(hi, width)  # the code this step defines
            length, written, hi = length + 1, written + length + 1, hi + 1
            if hi == 1 << width and width < 12:
                width += 1
    put(257, width)
    return bytes(out) + (bytes([acc]) if nbits else b"")


def ping(seq: int, node: str, src_port: int) -> bytes:
    """A plain ping of ``node`` acked to ``127.0.0.1:src_port``, with a CRC as Serf sends it."""
    msg = codec.encode_message(codec.Ping(seq, node, HOST, src_port, "hostile"))
    return codec.encode_packet([msg], None)


def _refused(data: bytes, keyring: Keyring | None = None) -> bool:
    try:
        codec.decode_packet(data, keyring, MAX_PACKET)
    except BadMessage:
        return True
    return False


# -- UDP --------------------------------------------------------------------------------------


def _garbage(rng: random.Random, n: int) -> Iterator[tuple[str, bytes]]:
    """A valid type byte, then random bytes (what a random map might hold: left out, rule 2)."""
    for _ in range(n):
        kind = rng.choice([k for k in Kind if k != Kind.USER])
        size = rng.choice((0, 1, 2, 5, 20, 100, 1400, 9000))
        yield f"type {kind.name.lower()} + {size} random bytes", bytes([kind]) + rng.randbytes(size)


def _compounds(src_port: int) -> Iterator[tuple[str, bytes]]:
    one = ping(1, "rt-0", src_port)
    yield "compound of 255 parts, no lengths", bytes([Kind.COMPOUND, 255])
    yield "compound of 255 parts of 65535 bytes", bytes([Kind.COMPOUND, 255]) + b"\xff" * 510
    yield "compound of 255 parts, 10 bytes", bytes([Kind.COMPOUND, 255]) + b"\x00\x01" * 5
    yield "compound of 0 parts", bytes([Kind.COMPOUND, 0])
    yield "compound of 255 empty parts", bytes([Kind.COMPOUND, 255]) + b"\x00" * 510
    yield "compound whose part runs past the end", compound([one, one])[:-4]
    yield "compound claiming 2, lengths of 65535", bytes([Kind.COMPOUND, 2]) + b"\xff" * 4 + one


def _bombs(src_port: int) -> Iterator[tuple[str, bytes]]:
    msg = codec.encode_message(codec.Ping(1, "rt-0", HOST, src_port, ""))
    zeros = lzw.compress(b"\x00" * 200_000)
    yield f"LZW of 200,000 zeros ({len(zeros)} bytes)", compress_message(zeros)
    yield "LZW of a ping padded to 70,000", compress_message(lzw.compress(msg + b"\x00" * 70_000))
    yield "LZW of 53,000 clear codes, no end", compress_message(_clears(53_000))
    yield (
        "LZW of clear codes, then nothing",
        compress_message(_clears(5_000) + lzw.pack_codes([257])),
    )
    yield "LZW of 1 MB of zeros, handmade", compress_message(_zeros(1 << 20))
    yield "LZW with an undefined code", compress_message(lzw.pack_codes([256, 65, 400, 257]))
    yield "LZW of algorithm 1", typed(Kind.COMPRESS, {"Algo": 1, "Buf": zeros})
    half = compress_message(lzw.compress(msg + b"\x00" * 40_000))  # two of them: 80 KB in all
    yield "two LZW parts of 40 KB each", compound([half, half])
    wide = compress_message(lzw.compress(compound([msg] * 200)))
    yield "two LZW compounds of 200 pings each", compound([wide, wide])


def _nested(src_port: int) -> Iterator[tuple[str, bytes]]:
    msg = codec.encode_message(codec.Ping(1, "rt-0", HOST, src_port, ""))
    for depth in (codec.MAX_DEPTH + 1, 10, 200):
        deep = msg
        for _ in range(depth):
            deep = compound([deep])
        yield f"compound nested {depth} deep", deep
    packed = msg
    for _ in range(codec.MAX_DEPTH + 1):
        packed = compress_message(lzw.compress(packed))
    yield f"LZW nested {codec.MAX_DEPTH + 1} deep", packed
    mixed = compound(
        [compress_message(lzw.compress(compound([compress_message(lzw.compress(msg))])))]
    )
    yield "compound, LZW, compound, LZW", mixed


def _checksums(src_port: int) -> Iterator[tuple[str, bytes]]:
    good = ping(1, "rt-0", src_port)
    yield "CRC flipped", good[:1] + bytes([good[1] ^ 0xFF]) + good[2:]
    yield "body under a CRC changed", good[:-1] + bytes([good[-1] ^ 0x01])
    yield "CRC of nothing", bytes([Kind.CRC]) + struct.pack(">I", 0)
    inner = codec.encode_packet([codec.encode_message(codec.Ack(1))], None)
    yield "CRC inside a CRC, outer wrong", bytes([Kind.CRC]) + b"\x00" * 4 + inner


def _fields() -> Iterator[tuple[str, bytes]]:
    alive = {"Incarnation": 1, "Node": "hostile", "Addr": b"\x7f\x00\x00\x01", "Port": 1}
    for what, change in (
        ("name not UTF-8", {"Node": b"\xc3\x28"}),
        ("name of 513 bytes", {"Node": "n" * 513}),
        ("address of 5 bytes", {"Addr": b"\x7f\x00\x00\x01\x00"}),
        ("no address", {"Addr": b""}),
        ("incarnation 2^32", {"Incarnation": 1 << 32}),
        ("incarnation -1", {"Incarnation": -1}),
        ("port 65536", {"Port": 65536}),
        ("meta of 513 bytes", {"Meta": b"m" * 513}),
        ("meta a map", {"Meta": {"a": 1}}),
        ("vsn of 17 bytes", {"Vsn": b"\x01" * 17}),
    ):
        yield f"alive: {what}", typed(Kind.ALIVE, alive | change)
    yield "dead: incarnation 2^64-1", typed(Kind.DEAD, {"Incarnation": 2**64 - 1, "Node": "rt-1"})
    yield "suspect: no name", typed(Kind.SUSPECT, {"Incarnation": 1, "Node": ""})
    yield "indirect ping: no target", typed(Kind.INDIRECT_PING, {"SeqNo": 1, "Node": "rt-1"})
    yield "indirect ping: nack 1", typed(Kind.INDIRECT_PING, {"Target": b"\x7f\0\0\1", "Nack": 1})
    yield "ack: seq 2^32", typed(Kind.ACK, {"SeqNo": 1 << 32})
    yield "ping: seq a float", typed(Kind.PING, {"SeqNo": 1.5, "Node": "rt-0"})
    yield "ping: body a list", bytes([Kind.PING]) + pack([1, "rt-0"])


def malformed(src_port: int) -> list[tuple[str, bytes]]:
    """Every hostile datagram, each refused by the codec (rule 2)."""
    rng = random.Random(SEED + 10)
    items = [
        *_garbage(rng, 300),
        *_compounds(src_port),
        *_bombs(src_port),
        *_nested(src_port),
        *_checksums(src_port),
        *_fields(),
    ]
    for _ in range(100):  # valid packets cut short
        good = ping(rng.randrange(1 << 32), "rt-0", src_port)
        cut = rng.randrange(1, len(good))
        items.append((f"ping cut to {cut} of {len(good)} bytes", good[:cut]))
    kept = [(what, data) for what, data in items if len(data) <= MAX_PACKET and _refused(data)]
    assert len(kept) > len(items) // 2, "most hostile datagrams decoded: the formats moved"
    return kept


def sealed_garbage(n: int, keyring: Keyring | None) -> list[tuple[str, bytes]]:
    """Envelopes of random bytes (versions 0 and 1), refused under ``keyring`` (rule 2)."""
    rng = random.Random(SEED + 11)
    items = []
    for _ in range(n):
        version, size = rng.choice((0, 1)), rng.choice((0, 10, 28, 29, 100, 1400))
        data = bytes([version]) + rng.randbytes(size)
        items.append((f"sealed v{version}, {size} random bytes", data))
    return [(what, data) for what, data in items if _refused(data, keyring)]


def costly(n: int) -> list[tuple[str, bytes]]:
    """Packets as costly to decode as the door allows: 64 KB of LZW clear codes, then a ping
    for another member (dropped as misdirected, after the work)."""
    msg = codec.encode_message(codec.Ping(1, "rt-9", "", 0, ""))
    data = compress_message(_clears(57_000) + lzw.pack_codes([*msg, 257]))
    assert len(data) <= MAX_PACKET
    assert codec.decode_packet(data, None, MAX_PACKET).messages
    return [("64 KB of LZW clear codes, then a ping for rt-9", data)] * n


# -- TCP --------------------------------------------------------------------------------------


def _header(**fields: Any) -> bytes:
    return typed(Kind.PUSH_PULL, {"Nodes": 0, "UserStateLen": 0, "Join": False} | fields)


def streams(src_port: int) -> list[Stream]:
    """Hostile streams for a node without a keyring; each ends as its third field says:
    ``eof`` (we close our side), ``stall`` (we stay silent: the node's deadline must end it)."""
    empty = stream.pushpull_bytes([], join=True)
    sealed_4gb = bytes([Kind.ENCRYPT]) + b"\xff" * 4 + b"\x01" * 64
    clears = compress_message(_clears(7_400_000) + lzw.pack_codes([257]))  # 8.3 MB: seconds of work
    bomb = compress_message(_zeros(MAX_FRAME + 1024))
    misdirected = codec.encode_message(codec.Ping(5, "rt-9", HOST, src_port, "hostile"))
    rng = random.Random(SEED + 12)
    items: list[Stream] = [
        ("push/pull of 10^9 members", _header(Nodes=10**9), "stall"),
        ("push/pull of 2^31 bytes of user state", _header(UserStateLen=1 << 31), "stall"),
        ("push/pull of 2^30 bytes of user state, then EOF", _header(UserStateLen=1 << 30), "eof"),
        ("push/pull of 2^30 bytes of user state, then silence", _header(UserStateLen=1 << 30),
         "stall"),
        ("push/pull of 2^30 bytes of user state, 9 MiB sent", _header(UserStateLen=1 << 30)
         + b"u" * (9 << 20), "stall"),
        ("push/pull with a state of State 7", _header(Nodes=1)
         + pack({"Name": "x", "Addr": b"\x7f\0\0\1", "State": 7}), "stall"),
        ("push/pull cut in the middle, then silence", empty[: len(empty) // 2], "stall"),
        ("push/pull cut in the middle, then EOF", empty[: len(empty) // 2], "eof"),
        ("sealed stream of 4 GB (no keyring here)", sealed_4gb, "stall"),
        ("TCP ping for rt-9", misdirected, "stall"),
        ("user message stream", typed(Kind.USER, {"Name": "x"}), "stall"),
        ("LZW stream expanding past 8 MiB", bomb, "stall"),
        *((f"LZW of 7,400,000 clear codes, #{k}", clears, "stall") for k in (1, 2, 3)),
    ]  # fmt: skip
    for kind in (Kind.PUSH_PULL, Kind.COMPRESS, Kind.ENCRYPT, Kind.USER):
        for size in (1, 100, 5000):
            items.append((f"type {kind.name.lower()} + {size} random bytes",
                          bytes([kind]) + rng.randbytes(size), "eof"))  # fmt: skip
    return items


def keyed_streams() -> list[Stream]:
    """Hostile streams for a node with a keyring: a sealed length of 4 GB, garbage sealed,
    and plain streams (refused before a byte of them is decoded)."""
    rng = random.Random(SEED + 13)
    return [
        ("sealed stream of 4 GB", bytes([Kind.ENCRYPT]) + b"\xff" * 4 + b"\x01" * 64, "stall"),
        ("sealed stream of 100 random bytes", bytes([Kind.ENCRYPT]) + struct.pack(">I", 100)
         + rng.randbytes(100), "stall"),
        ("sealed stream cut short", bytes([Kind.ENCRYPT]) + struct.pack(">I", 100) + b"\x01" * 50,
         "stall"),
        ("plain push/pull", stream.pushpull_bytes([], join=True), "stall"),
    ]  # fmt: skip
