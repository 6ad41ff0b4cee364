"""The UDP codec: round trips, and hostile bytes never raise anything but BadMessage."""

from __future__ import annotations

import msgpack
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from swim import BadMessage, decode_untrusted
from swim.wire import (
    VERSION,
    Ack,
    Alive,
    Dead,
    Message,
    MsgType,
    Nack,
    Ping,
    PingReq,
    Suspect,
    decode_state_untrusted,
    encode,
    encode_compound,
    encode_part,
    packet_size,
    part_size,
)
from tests.support.strategies import msgpack_scalars, msgpack_values, swim_messages

SAMPLES: list[Message] = [
    Ping(1, 2, 3, "127.0.0.1", 7946),
    PingReq(4_000_000_000, 1, "10.0.0.2", 1, True, 0, "h", 65535),
    Ack(0, 0),
    Nack(7, 9),
    Alive(2**63 - 1, 5, "node-5.example", 80, 2**62),
    Suspect(3, 4, 5),
    Dead(3, 4, 4),
]


@pytest.mark.parametrize("msg", SAMPLES)
def test_round_trip(msg: Message) -> None:
    assert decode_untrusted(encode(msg)) == [msg]


def test_compound_round_trip() -> None:
    data = encode_compound([encode_part(m) for m in SAMPLES])
    assert decode_untrusted(data) == SAMPLES


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"", "truncated"),
        (b"\x01", "truncated"),
        (bytes([2, MsgType.ACK]) + msgpack.packb([1, 2]), "version"),
        (bytes([VERSION, 99]) + msgpack.packb([1, 2]), "unknown_type"),
        (bytes([VERSION, MsgType.ACK]) + msgpack.packb([1]), "bad_field"),
        (bytes([VERSION, MsgType.ACK]) + msgpack.packb([1, -2]), "bad_field"),
        (bytes([VERSION, MsgType.ACK]) + msgpack.packb([True, 2]), "bad_field"),
        (bytes([VERSION, MsgType.ACK]) + msgpack.packb([1.5, 2]), "bad_field"),
        (bytes([VERSION, MsgType.ACK]) + msgpack.packb({"a": 1}), "malformed"),
        (bytes([VERSION, MsgType.ACK]) + msgpack.packb([1, 2]) + b"x", "malformed"),
        (bytes([VERSION, MsgType.ALIVE]) + msgpack.packb([1, 2, "", 3, 4]), "bad_field"),
        (bytes([VERSION, MsgType.ALIVE]) + msgpack.packb([1, 2, "h", 70000, 4]), "bad_field"),
        (bytes([VERSION, MsgType.PING]) + msgpack.packb([1, 2, 3, b"h", 4]), "bad_field"),
        (bytes([VERSION, MsgType.COMPOUND]) + msgpack.packb([]), "malformed"),
        (bytes([VERSION, MsgType.COMPOUND]) + msgpack.packb(["x"]), "malformed"),
        (bytes([VERSION, MsgType.COMPOUND]) + msgpack.packb([bytes([8]) + b"\x90"]), "malformed"),
        (bytes([VERSION, MsgType.ACK]) + msgpack.packb(msgpack.ExtType(1, b"x")), "malformed"),
    ],
)
def test_malformed_packets_are_bad_messages(data: bytes, reason: str) -> None:
    with pytest.raises(BadMessage) as info:
        decode_untrusted(data)
    assert info.value.reason == reason


def test_oversize_is_rejected() -> None:
    big = encode(Alive(1, 1, "h" * 200, 1, 1))
    with pytest.raises(BadMessage, match="oversize"):
        decode_untrusted(big, max_bytes=100)


def test_deeply_nested_msgpack_is_rejected() -> None:
    nested = b"\x91" * 100_000 + b"\x01"
    with pytest.raises(BadMessage):
        decode_untrusted(bytes([VERSION, MsgType.ACK]) + nested)


@settings(max_examples=400, deadline=None)
@given(st.binary(max_size=2000))
def test_random_bytes_raise_only_bad_message(data: bytes) -> None:
    try:
        decode_untrusted(data)
    except BadMessage:
        pass


@settings(max_examples=400, deadline=None)
@given(st.binary(max_size=300))
def test_random_bodies_behind_valid_headers(body: bytes) -> None:
    for kind in MsgType:
        try:
            decode_untrusted(bytes([VERSION, kind]) + body)
        except BadMessage:
            pass


_value = msgpack_values(msgpack_scalars(20), width=4, max_leaves=8)


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(list(MsgType)), st.lists(_value, max_size=9))
def test_structured_garbage_raises_only_bad_message(kind: MsgType, body: list[object]) -> None:
    data = bytes([VERSION, kind]) + msgpack.packb(body, use_bin_type=True)
    try:
        msgs = decode_untrusted(data)
    except BadMessage:
        return
    for m in msgs:  # whatever got through is fully typed
        for v in m.__dataclass_fields__:
            assert isinstance(getattr(m, v), int | str | bool)


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_mutated_valid_packets(data: st.DataObject) -> None:
    packet = bytearray(encode_compound([encode_part(m) for m in SAMPLES]))
    for _ in range(data.draw(st.integers(1, 8))):
        i = data.draw(st.integers(0, len(packet) - 1))
        packet[i] = data.draw(st.integers(0, 255))
    cut = data.draw(st.integers(0, len(packet)))
    try:
        decode_untrusted(bytes(packet[:cut]))
    except BadMessage:
        pass


def test_state_rows_are_validated() -> None:
    good = [[1, "h", 2, 3, "alive", 4], [2, "h", 2, 0, "left", 4]]
    assert [e.node for e in decode_state_untrusted(good)] == [1, 2]
    for bad in (
        [[1, "h", 2, 3, "probe_failed", 4]],
        [[1, "h", 2, 3, "alive"]],
        "x",
        [None],
        [[1, "h", -2, 3, "alive", 4]],
        [[1, 2, 2, 3, "alive", 4]],
    ):
        with pytest.raises(BadMessage):
            decode_state_untrusted(bad)


_ints = st.one_of(
    st.sampled_from([0, 127, 128, 255, 256, 65535, 65536, 2**32 - 1, 2**32, 2**63 - 1]),
    st.integers(0, 2**63 - 1),
)
_hosts = st.text(min_size=1, max_size=300)
_messages = swim_messages(_ints, _hosts)


@settings(max_examples=500, deadline=None)
@given(st.lists(_messages, min_size=1, max_size=40))
def test_sizes_are_counted_as_the_encoding_weighs(msgs: list[Message]) -> None:
    """The simulator and the outbox count a packet's bytes without encoding it
    (``part_size``, ``packet_size``): the count is the encoding's length, to the byte."""
    parts = [encode_part(m) for m in msgs]
    assert [part_size(m) for m in msgs] == [len(p) for p in parts]
    assert packet_size([len(p) for p in parts]) == len(encode_compound(parts))
