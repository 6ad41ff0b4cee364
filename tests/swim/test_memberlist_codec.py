"""memberlist's wire protocol at the edge (``swim.memberlist``): what ``codec`` and ``stream``
promise in their rules, pinned on real Serf agents' bytes and on our own encoders' output.

Real packets and streams (``serf_captures/``) all decode to what the agents said; every message
kind round-trips, plain, with a CRC, in a compound and sealed; each check and limit refuses
with ``BadMessage`` and the reason the drop counter shows. Go's LZW is tested in
``test_memberlist_lzw.py``, the name <-> id edge in ``test_memberlist_edge.py``.
"""

from __future__ import annotations

import base64
import random
import struct
import zlib
from pathlib import Path
from typing import Any

import msgpack
import pytest
import trio
import trio.lowlevel
import trio.testing
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from swim.keyring import Keyring
from swim.memberlist import codec, decode_tags, lzw, stream
from swim.memberlist.codec import Kind
from swim.memberlist.door import MAX_PACKET
from swim.wire import BadMessage
from tests.support.memberlist_packets import compound, compressed, pack, typed

CAPTURES = Path(__file__).parent / "serf_captures"
KEY = base64.b64decode("QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVowMTIzNDU=")  # the README's test key
KEYRING = Keyring([KEY])
VSN = bytes([1, 5, 2, 2, 5, 5])
HOST = "127.0.0.1"
MESSAGES: tuple[codec.Message, ...] = (
    codec.Ping(7, "rt-0", HOST, 7946, "serf-a"),
    codec.Ping(8, "", "", 0, ""),
    codec.Ping(9, "rt-0", "", 7946, ""),  # a port without an address keeps its port
    codec.IndirectPing(10, "::1", 7947, "serf-b", True, HOST, 7946, "serf-a"),
    codec.IndirectPing(11, HOST, 7947, "", False),
    codec.Ack(2**32 - 1),
    codec.Nack(0),
    codec.Suspect(2**32 - 1, "serf-b", "serf-a"),
    codec.Alive(1, "ünïcode", "fe80::1", 65535, b"\xff" * codec.MAX_META, VSN),
    codec.Alive(0, "n" * codec.MAX_NAME, HOST, 0, b"", b""),
    codec.Dead(4, "serf-b", "serf-b"),
    codec.Dead(5, "serf-b", ""),
)
STATES = (
    codec.NodeState("serf-a", HOST, 7946, b"\xff\x81\xa4role\xa3web", 3, 0, VSN),
    codec.NodeState("rt-1", "::1", 7947, b"", 1, 3, b""),
)


def _decode(packet: bytes, keyring: Keyring | None = None, max_bytes: int = MAX_PACKET) -> Any:
    return codec.decode_packet(packet, keyring, max_bytes)


def _refused(packet: bytes, reason: str, keyring: Keyring | None = None, **kw: Any) -> None:
    with pytest.raises(BadMessage) as caught:
        _decode(packet, keyring, **kw)
    assert caught.value.reason == reason, caught.value


async def _request(data: bytes, keyring: Keyring | None, max_bytes: int = 1 << 20) -> Any:
    """``stream.read_request`` on ``data`` sent whole, its first 4 bytes as the RPC hands them."""
    source = trio.testing.MemoryReceiveStream()
    source.put_data(data[4:])
    source.put_eof()
    return await stream.read_request(source, data[:4], keyring, max_bytes)


# ---- real Serf agents' bytes -------------------------------------------------------------------

UDP_CAPTURES = sorted(CAPTURES.glob("udp-*"))
NAMES = {"serf-a", "serf-b", "rt-0"}


def _check_alive(name: str, ip: str, meta: bytes, vsn: bytes) -> None:
    assert name in NAMES
    assert ip == HOST
    assert vsn == VSN
    assert decode_tags(meta) == ({"rtsim": "0"} if name == "rt-0" else {"role": "web"})


@pytest.mark.parametrize("path", UDP_CAPTURES, ids=lambda p: p.name)
def test_every_captured_packet_decodes(path: Path) -> None:
    keyring = KEYRING if "sealed" in path.name else None
    decoded = _decode(path.read_bytes(), keyring)
    assert decoded.messages or decoded.skipped
    for m in decoded.messages:
        if isinstance(m, codec.Alive):
            _check_alive(m.node, m.ip, m.meta, m.vsn)
        elif isinstance(m, codec.Ping):
            assert (m.node, m.source_ip, m.source_node in NAMES) == ("rt-0", HOST, True)


def test_the_captures_hold_what_serf_sends() -> None:
    first = {p.name: p.read_bytes()[0] for p in UDP_CAPTURES if "plain" in p.name}
    assert {Kind.CRC, Kind.COMPRESS, Kind.COMPOUND, Kind.PING, Kind.ACK} <= set(first.values())
    alive = _decode((CAPTURES / "udp-plain-01").read_bytes()).messages
    assert [(m.node, m.incarnation) for m in alive] == [("serf-b", 1), ("serf-a", 1), ("rt-0", 1)]
    ping = _decode((CAPTURES / "udp-sealed-03").read_bytes(), KEYRING).messages
    assert ping == [codec.Ping(1, "rt-0", HOST, ping[0].source_port, "serf-b")]
    user = _decode((CAPTURES / "udp-plain-03").read_bytes())  # Serf's own event, CRC'd
    assert (user.messages, user.skipped) == ([], 1)


def test_sealed_captures_open_with_the_key_alone() -> None:
    wrong = Keyring([b"another key of thirty-two bytes!"])
    for path in CAPTURES.glob("udp-sealed-*"):
        _refused(path.read_bytes(), "auth", wrong)
        with pytest.raises(BadMessage):
            _decode(path.read_bytes(), None)
    _refused((CAPTURES / "udp-plain-01").read_bytes(), "auth", KEYRING)


@pytest.mark.parametrize(("name", "keyring"), [("stream-plain", None), ("stream-sealed", KEYRING)])
async def test_both_captured_streams_read(name: str, keyring: Keyring | None) -> None:
    data = (CAPTURES / name).read_bytes()
    assert data[0] == (Kind.ENCRYPT if keyring else Kind.COMPRESS)
    kind, reader = await _request(data, keyring)
    assert kind == Kind.PUSH_PULL
    join, states = await stream.read_pushpull(reader, max_states=16)
    assert join is True  # `serf join`
    assert {s.name for s in states} == NAMES
    for s in states:
        _check_alive(s.name, s.ip, s.meta, s.vsn)
        assert (s.incarnation, s.state) == (1, 0)


@pytest.mark.parametrize("path", [CAPTURES / "udp-plain-02", CAPTURES / "stream-plain"])
def test_go_lzw_bytes_decompress_and_compress_again_byte_for_byte(path: Path) -> None:
    data = path.read_bytes()
    assert data[0] == Kind.COMPRESS
    buf = msgpack.unpackb(data[1:], raw=True)[b"Buf"]
    assert lzw.compress(lzw.decompress(buf, 1 << 20)) == buf  # lzw rule 2


# ---- round trips --------------------------------------------------------------------------------


@pytest.mark.parametrize("msg", MESSAGES, ids=lambda m: type(m).__name__)
@pytest.mark.parametrize("crc", [True, False], ids=["crc", "no-crc"])
@pytest.mark.parametrize("keyring", [None, KEYRING], ids=["plain", "sealed"])
def test_every_message_kind_round_trips(
    msg: codec.Message, crc: bool, keyring: Keyring | None
) -> None:
    packet = codec.encode_packet([codec.encode_message(msg)], keyring, crc=crc)
    outer = 1 if keyring else Kind.CRC if crc else codec.encode_message(msg)[0]
    assert packet[0] == outer
    assert _decode(packet, keyring).messages == [msg]


@pytest.mark.parametrize("keyring", [None, KEYRING], ids=["plain", "sealed"])
def test_a_compound_of_every_kind_round_trips(keyring: Keyring | None) -> None:
    parts = [codec.encode_message(m) for m in MESSAGES]
    packet = codec.encode_packet(parts, keyring)
    decoded = _decode(packet, keyring)
    assert (decoded.messages, decoded.skipped) == (list(MESSAGES), 0)
    assert _decode(compressed(codec.encode_packet(parts, None, crc=False))).messages == list(
        MESSAGES
    )
    with pytest.raises(ValueError, match=r"1\.\.255 parts"):
        codec.encode_packet(parts * 30, None)


@pytest.mark.parametrize("keyring", [None, KEYRING], ids=["plain", "sealed"])
@pytest.mark.parametrize("compress", [False, True], ids=["raw", "lzw"])
async def test_a_pushpull_round_trips(keyring: Keyring | None, compress: bool) -> None:
    msg = stream.pushpull_bytes(STATES, join=False)
    kind, reader = await _request(
        stream.sealed_stream(keyring, compressed(msg) if compress else msg), keyring
    )
    assert kind == Kind.PUSH_PULL
    assert await stream.read_pushpull(reader, max_states=2) == (False, list(STATES))


# ---- envelopes and checksums --------------------------------------------------------------------


def _sealed_v0(plain: bytes, pad: int | None = None) -> bytes:
    """memberlist's version-0 envelope: the plaintext padded PKCS#7 to 16 bytes."""
    pad = 16 - len(plain) % 16 if pad is None else pad
    nonce = bytes(range(codec.NONCE))
    return b"\x00" + nonce + AESGCM(KEY).encrypt(nonce, plain + bytes([pad]) * pad, None)


def test_a_version_0_envelope_with_its_padding_opens() -> None:
    plain = codec.encode_packet([codec.encode_message(MESSAGES[0])], None)
    assert _decode(_sealed_v0(plain), KEYRING).messages == [MESSAGES[0]]
    for pad in (0, 17):  # PKCS#7 pads 1 to 16 bytes
        _refused(_sealed_v0(plain, pad), "auth", KEYRING)


def test_a_sealed_packet_under_another_key_or_cut_is_refused() -> None:
    packet = codec.encode_packet([codec.encode_message(MESSAGES[0])], KEYRING)
    _refused(packet, "auth", Keyring([b"0123456789abcdef"]))
    _refused(packet[:-1], "auth", KEYRING)
    _refused(packet[: 1 + codec.NONCE + 15], "auth", KEYRING)
    _refused(b"\x02" + packet[1:], "auth", KEYRING)  # no such envelope version


def test_a_checksum_that_does_not_match_is_refused() -> None:
    packet = codec.encode_packet([codec.encode_message(MESSAGES[3])], None)
    _refused(packet[:1] + bytes([packet[1] ^ 1]) + packet[2:], "crc")
    _refused(packet[:-1] + bytes([packet[-1] ^ 0x40]), "crc")
    assert zlib.crc32(packet[5:]).to_bytes(4, "big") == packet[1:5]


# ---- parts this edge does not take --------------------------------------------------------------


def test_parts_of_other_types_are_skipped_and_counted_while_the_rest_decode() -> None:
    ping, alive = codec.encode_message(MESSAGES[0]), codec.encode_message(MESSAGES[8])
    user = typed(Kind.USER, {"LTime": 1, "Name": "deploy"})  # Serf's own messages
    push = typed(Kind.PUSH_PULL, {"Nodes": 0})  # TCP only
    decoded = _decode(compound([ping, user, push, alive, b"\x2a\xc0"]))
    assert (decoded.messages, decoded.skipped) == ([MESSAGES[0], MESSAGES[8]], 3)


# ---- refusals, by reason ------------------------------------------------------------------------

PING = codec.encode_message(MESSAGES[0])


@pytest.mark.parametrize(
    "packet",
    [
        b"",
        b"\x07",  # a compound without its count
        b"\x07\x00",  # of no part
        b"\x07\x03\x00\x05",  # its lengths cut
        compound([PING, PING])[:-1],  # its last part cut
        bytes([Kind.COMPOUND, 2, 0, len(PING), 0, 0]) + PING,  # an empty part
    ],
    ids=["empty", "no-count", "no-part", "lengths-cut", "part-cut", "empty-part"],
)
def test_a_truncated_packet_is_refused(packet: bytes) -> None:
    _refused(packet, "truncated")


def test_layers_nest_at_most_max_depth_deep() -> None:
    nested, packed = PING, PING
    for _ in range(codec.MAX_DEPTH):
        nested, packed = compound([nested]), compressed(packed)
    assert _decode(nested).messages == _decode(packed).messages == [MESSAGES[0]]
    _refused(compound([nested]), "malformed")
    _refused(compressed(packed), "malformed")
    _refused(compound([compressed(compound([packed]))]), "malformed")


def _alive(**fields: Any) -> bytes:
    body = {"Incarnation": 1, "Node": "x", "Addr": b"\x7f\x00\x00\x01", "Port": 1} | fields
    return typed(Kind.ALIVE, body)


@pytest.mark.parametrize(
    ("packet", "reason"),
    [
        (typed(Kind.SUSPECT, {"Incarnation": 1, "Node": b"\xc3\x28"}), "bad_field"),
        (typed(Kind.DEAD, {"Incarnation": 1, "Node": ""}), "bad_field"),
        (_alive(Node="n" * (codec.MAX_NAME + 1)), "bad_field"),
        (_alive(Addr=b"\x7f\x00\x00\x01\x00"), "bad_field"),
        (_alive(Addr=b""), "bad_field"),
        (_alive(Incarnation=2**32), "bad_field"),
        (_alive(Incarnation=-1), "bad_field"),
        (typed(Kind.DEAD, {"Incarnation": 2**32, "Node": "x"}), "bad_field"),
        (_alive(Port=65536), "bad_field"),
        (_alive(Meta=b"m" * (codec.MAX_META + 1)), "bad_field"),
        (_alive(Meta=[1, 2, 256]), "bad_field"),
        (typed(Kind.ACK, {"SeqNo": 1.0}), "bad_field"),
        (typed(Kind.ACK, {"SeqNo": True}), "bad_field"),
        (typed(Kind.INDIRECT_PING, {"Target": b"\x7f\x00\x00\x01", "Nack": 1}), "bad_field"),
        (typed(Kind.COMPRESS, {"Algo": 1, "Buf": b""}), "bad_field"),
        (bytes([Kind.ACK]) + pack([1, 2]), "malformed"),
        (bytes([Kind.ACK, 0xC1]), "malformed"),
        (bytes([Kind.ACK]) + b"\xdb\xff\xff\xff\xff", "malformed"),
    ],
    ids=[
        "name-not-utf8", "name-empty", "name-long", "addr-5-bytes", "addr-empty", "inc-2^32",
        "inc-negative", "dead-inc-2^32", "port-2^16", "meta-513", "meta-not-bytes", "seq-float",
        "seq-bool", "nack-not-bool", "algo-1", "not-a-map", "not-msgpack", "str-of-4GB",
    ],
)  # fmt: skip
def test_a_field_out_of_its_type_or_range_is_refused(packet: bytes, reason: str) -> None:
    _refused(packet, reason)


def test_the_edges_of_the_ranges_are_taken() -> None:
    meta = b"m" * codec.MAX_META
    (alive,) = _decode(_alive(Incarnation=2**32 - 1, Meta=meta, Port=65535)).messages
    assert (alive.incarnation, alive.meta, alive.port) == (2**32 - 1, meta, 65535)
    mapped = _alive(Addr=b"\x00" * 10 + b"\xff\xff\x0a\x00\x00\x01")
    assert _decode(mapped).messages[0].ip == "10.0.0.1"  # IPv4-mapped IPv6, as IPv4
    (listed,) = _decode(_alive(Meta=[1, 2, 255])).messages  # []uint8 as an array
    assert listed.meta == b"\x01\x02\xff"


def test_a_packet_over_its_size_is_refused_before_and_after_decompression() -> None:
    _refused(b"\x00" * 101, "oversize", max_bytes=100)
    padded = PING + b"\x00" * 3000  # trailing bytes after a body are ignored, as Go does
    assert _decode(compressed(padded), max_bytes=4096).messages == [MESSAGES[0]]
    _refused(compressed(padded), "malformed", max_bytes=2048)  # lzw: expands beyond
    # The bound holds for the whole packet: two layers of 3 KB each are 6 KB decompressed.
    _refused(compound([compressed(padded), compressed(padded)]), "malformed", max_bytes=4096)


def test_a_packet_holds_at_most_max_parts_messages_in_all_its_layers() -> None:
    full = compound([PING] * codec.MAX_PARTS)
    assert len(_decode(full).messages) == codec.MAX_PARTS
    wide = compressed(compound([PING] * 200))
    assert len(wide) < 2000  # 200 messages in under 2 KB: two of them hold 400
    _refused(compound([wide, wide]), "oversize")
    user = typed(Kind.USER, {})
    _refused(compound([compressed(compound([user] * 200)), wide]), "oversize")


# ---- streams ------------------------------------------------------------------------------------


def _header(**fields: Any) -> bytes:
    return typed(Kind.PUSH_PULL, {"Nodes": 0, "UserStateLen": 0, "Join": False} | fields)


async def _pushpull(data: bytes, keyring: Keyring | None = None, max_bytes: int = 1 << 16) -> Any:
    kind, reader = await _request(data, keyring, max_bytes)
    assert kind == Kind.PUSH_PULL
    return await stream.read_pushpull(reader, max_states=4)


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (_header(Nodes=10**9), "bad_state"),
        (_header(Nodes=5), "bad_state"),  # over max_states
        (_header(UserStateLen=1 << 31), "bad_state"),
        (_header(UserStateLen=1 << 20) + b"u" * 70_000, "oversize"),  # past max_bytes
        (_header(UserStateLen=10) + b"short", "truncated"),
        (_header(Join=1), "bad_state"),
        (_header(Nodes=1) + pack({"Name": "x", "Addr": b"\x7f\x00\x00\x01", "State": 4}),
         "bad_field"),
        (_header(Nodes=1) + pack({"Name": "x"}), "bad_state"),
        (_header(Nodes=2) + codec.encode_message(STATES[0]), "truncated"),
        (bytes([Kind.PUSH_PULL]) + pack([1]), "malformed"),
    ],
    ids=["nodes-1e9", "nodes-over", "user-2^31", "user-1MiB", "user-cut", "join-int",
         "state-4", "no-addr", "states-cut", "not-a-map"],
)  # fmt: skip
async def test_a_hostile_pushpull_is_refused(data: bytes, reason: str) -> None:
    with pytest.raises(BadMessage) as caught:
        await _pushpull(data)
    assert caught.value.reason == reason, caught.value


async def test_serfs_user_state_is_read_past() -> None:
    data = _header(Nodes=1, UserStateLen=5) + codec.encode_message(STATES[0]) + b"serf!"
    assert await _pushpull(data) == (False, [STATES[0]])


@pytest.mark.parametrize(
    ("data", "keyring", "reason"),
    [
        (bytes([Kind.ENCRYPT]) + b"\xff\xff\xff\xff" + b"\x01" * 40, KEYRING, "oversize"),
        (bytes([Kind.ENCRYPT]) + struct.pack(">I", 60) + b"\x01" * 60, KEYRING, "auth"),
        (stream.sealed_stream(KEYRING, _header()), None, "auth"),  # sealed, and no keyring
        (_header(), KEYRING, "auth"),  # plain, and a keyring (stream rule 2)
        (stream.sealed_stream(KEYRING, _header())[:-3], KEYRING, "truncated"),
        (b"", None, "truncated"),
    ],
    ids=["sealed-4GB", "sealed-garbage", "no-keyring", "not-sealed", "sealed-cut", "empty"],
)
async def test_a_hostile_stream_envelope_is_refused(
    data: bytes, keyring: Keyring | None, reason: str
) -> None:
    with pytest.raises(BadMessage) as caught:
        await _request(data, keyring, max_bytes=1 << 16)
    assert caught.value.reason == reason, caught.value


async def test_a_stream_is_bounded_in_all_including_decompressed() -> None:
    big = stream.pushpull_bytes(STATES * 2, join=True)
    assert await _pushpull(big, max_bytes=len(big)) == (True, list(STATES * 2))
    with pytest.raises(BadMessage, match="oversize"):
        await _pushpull(big, max_bytes=len(big) - 1)
    with pytest.raises(BadMessage, match="lzw: expands beyond"):
        await _request(compressed(big + b"\x00" * 2000), None, max_bytes=2000)


async def test_a_large_compressed_stream_is_expanded_off_the_event_loop() -> None:
    user = random.Random(1).randbytes(150_000)  # Serf's user state, incompressible
    msg = _header(Nodes=1, UserStateLen=len(user)) + codec.encode_message(STATES[0]) + user
    data = compressed(msg)
    assert len(data) > stream.INLINE_LZW
    ticks = 0

    async def tick() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await trio.lowlevel.checkpoint()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(tick)
        assert await _pushpull(data, max_bytes=1 << 20) == (False, [STATES[0]])
        nursery.cancel_scope.cancel()
    assert ticks > 100, f"the event loop ran {ticks} times while the stream was expanded"
