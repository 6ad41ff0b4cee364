"""The node RPC's frames: the wire maps, validation at the boundary, round trips."""

from __future__ import annotations

import struct
import typing
from typing import Any

import msgpack
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cluster.node.rpc import is_foreign
from cluster.rpc.frames import (
    MAX_FRAME,
    PEEK_BYTES,
    SMALL_FRAME,
    Adopt,
    BadFrame,
    Block,
    Compose,
    Err,
    Faults,
    Identity,
    Migrate,
    Monitor,
    Ok,
    PoolMonitor,
    Pools,
    Request,
    Stop,
    Swim,
    decode_frame,
    decode_reply,
    decode_untrusted,
    encode,
    encode_reply,
    frame_limit,
    unpack_untrusted,
)
from cluster.runtime import BLOCK_IO
from swim.memberlist import codec, stream
from tests.support.strategies import msgpack_scalars, msgpack_values

# The maps the five modules built by hand before the frames were typed: the wire is unchanged.
WIRE: list[tuple[Request, dict[str, Any]]] = [
    (Monitor("workers"), {"k": "monitor", "query": "workers", "params": {}}),
    (
        PoolMonitor("1.0", "stats", {"a": "b"}),
        {"k": "pool_monitor", "pool_id": "1.0", "query": "stats", "params": {"a": "b"}},
    ),
    (Swim({"k": "swim", "op": "induct"}), {"k": "swim", "op": "induct"}),
    (
        Block("900.0", "write", 4096, 0, b"ab", "0/950.0", 7),
        {"k": "block", "pool": "900.0", "op": "write", "offset": 4096, "size": 0, "data": b"ab",
         "writer": "0/950.0", "epoch": 7},
    ),
    (Identity(), {"k": "control", "op": "identity"}),
    (Stop(), {"k": "control", "op": "stop"}),
    (
        Faults("block", None, 0, (1, 2)),
        {"k": "control", "op": "faults", "action": "block", "peer": None, "value": 0,
         "peers": [1, 2], "offset": 0.0, "rate": 1.0, "pool": "", "latency_ms": 0.0,
         "errors": 0.0, "full": False},
    ),
    (
        Faults("clock", offset=-86400.0, rate=2.0),
        {"k": "control", "op": "faults", "action": "clock", "peer": None, "value": 0,
         "peers": [], "offset": -86400.0, "rate": 2.0, "pool": "", "latency_ms": 0.0,
         "errors": 0.0, "full": False},
    ),
    (
        Faults("disk", pool="m1", latency_ms=200.0, errors=10.0, full=True),
        {"k": "control", "op": "faults", "action": "disk", "peer": None, "value": 0,
         "peers": [], "offset": 0.0, "rate": 1.0, "pool": "m1", "latency_ms": 200.0,
         "errors": 10.0, "full": True},
    ),
    (
        Compose(({"mod_name": "x"},)),
        {"k": "control", "op": "compose", "entries": [{"mod_name": "x"}]},
    ),
    (Pools(), {"k": "control", "op": "pools"}),
    (Migrate("800.0", "1"), {"k": "control", "op": "migrate", "pool_id": "800.0", "to": "1"}),
    (
        Adopt("rt_bdev", "b", "800.0", "local", {"config": {}}),
        {"k": "control", "op": "adopt", "mod_name": "rt_bdev", "pool_name": "b",
         "pool_id": "800.0", "pool_query": "local", "state": {"config": {}}},
    ),
]  # fmt: skip


@pytest.mark.parametrize(("request_", "wire"), WIRE)
def test_encode_gives_the_wire_maps(request_: Request, wire: dict[str, Any]) -> None:
    encoded = encode(request_)
    assert encoded == wire
    assert list(encoded) == list(wire)  # same key order: the same msgpack bytes
    assert msgpack.packb(encoded) == msgpack.packb(wire)
    assert decode_untrusted(wire) == request_


def test_every_request_kind_has_a_wire_example() -> None:
    assert {type(r) for r, _ in WIRE} == set(typing.get_args(Request))


@pytest.mark.parametrize(
    "obj",
    [
        None,
        [],
        {"k": None},
        {"k": ["monitor"]},
        {"k": "control"},
        {"k": "control", "op": {"x": 1}},
        {"k": "control", "op": "reboot"},
        {"k": "monitor"},
        {"k": "monitor", "query": "x", "params": {"a": 1}},
        {"k": "monitor", "query": "x", "params": [1]},
        {"k": "control", "op": "faults", "action": "loss", "value": float("nan")},
        {"k": "control", "op": "faults", "action": "loss", "value": True},
        {"k": "control", "op": "faults", "action": "loss", "peer": "1"},
        {"k": "control", "op": "faults", "action": "block", "peers": [1, False]},
        {"k": "control", "op": "faults", "action": "clock", "offset": float("inf")},
        {"k": "control", "op": "faults", "action": "clock", "rate": "2"},
        {"k": "control", "op": "faults", "action": "clock", "rate": None},
        {"k": "control", "op": "faults", "action": "disk", "pool": 3},
        {"k": "control", "op": "faults", "action": "disk", "full": 1},
        {"k": "control", "op": "faults", "action": "disk", "errors": float("nan")},
        {"k": "control", "op": "faults", "action": "cut", "peers": "1"},
        {"k": "control", "op": "compose", "entries": {"a": 1}},
        {"k": "control", "op": "migrate", "pool_id": "1.0"},
        {"k": "control", "op": "migrate", "pool_id": "1.0", "to": 1.5},
        {"k": "control", "op": "adopt", "mod_name": "m", "pool_name": "p", "pool_id": 3},
        {"k": "control", "op": "adopt", "mod_name": "m", "pool_name": "p", "pool_id": "3.0",
         "state": {1: 2}},
        {"k": "block", "op": "read"},
        {"k": "block", "pool": "1.0", "op": "read", "offset": None},
        {"k": "block", "pool": "1.0", "op": "read", "size": 1.5},
        {"k": "block", "pool": "1.0", "op": "write", "data": "text, not bytes"},
        {"k": "block", "pool": "1.0", "op": "write", "epoch": "7"},
        {"k": "block", "pool": "1.0", "op": "write", "writer": 7},
        {"k": "control", "op": "faults", "action": "disk", "full": "yes"},
        {"k": "control", "op": "faults", "action": "disk", "errors": "10"},
        {"k": "control", "op": "faults", "action": "disk", "latency_ms": float("inf")},
    ],
)  # fmt: skip
def test_malformed_requests_are_bad_frames(obj: Any) -> None:
    with pytest.raises(BadFrame):
        decode_untrusted(obj)


def test_missing_fields_with_defaults_take_them() -> None:
    assert decode_untrusted({"k": "monitor", "query": "q"}) == Monitor("q", {})
    assert decode_untrusted({"k": "control", "op": "faults", "action": "heal", "x": 1}) == Faults(
        "heal"
    )


# -- properties ------------------------------------------------------------------------------

_any = msgpack_values(msgpack_scalars(10), width=4, key_size=8, max_leaves=12)
_kinds = st.sampled_from(["monitor", "pool_monitor", "swim", "control", "block", "nope"])
_ops = st.sampled_from(["identity", "stop", "faults", "compose", "pools", "migrate", "adopt"])
_keys = st.sampled_from(
    ["query", "params", "pool_id", "pool", "op", "offset", "size", "data", "writer", "epoch",
     "action", "peer",
     "value", "peers", "entries", "to", "mod_name", "pool_name", "pool_query", "state"]
)  # fmt: skip


@st.composite
def _near_frames(draw: st.DrawFn) -> dict[str, Any]:
    """Maps shaped like requests, with fields of random types."""
    frame: dict[str, Any] = {"k": draw(_kinds), "op": draw(_ops)}
    frame.update(draw(st.dictionaries(_keys, _any, max_size=6)))
    return frame


@settings(max_examples=300, deadline=None)
@given(st.one_of(_any, _near_frames()))
def test_untrusted_input_raises_only_bad_frame(obj: Any) -> None:
    try:
        request = decode_untrusted(obj)
    except BadFrame:
        return
    assert isinstance(request, typing.get_args(Request))


@settings(max_examples=300, deadline=None)
@given(_any)
def test_untrusted_replies_raise_only_bad_frame(obj: Any) -> None:
    try:
        reply = decode_reply(obj)
    except BadFrame:
        return
    assert isinstance(reply, Ok | Err)


# JSON-like values that survive msgpack unchanged (lists, not tuples; no NaN: NaN != NaN).
_json = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner),
    max_leaves=8,
)
_text = st.text(max_size=12)
_params = st.dictionaries(_text, _text, max_size=4)
_ints = st.integers(-(2**31), 2**31)
_requests = st.one_of(
    st.builds(Monitor, _text, _params),
    st.builds(PoolMonitor, _text, _text, _params),
    st.builds(lambda m: Swim({**m, "k": "swim"}), st.dictionaries(_text, _json, max_size=4)),
    st.just(Identity()),
    st.just(Stop()),
    st.builds(
        Faults,
        _text,
        st.none() | _ints,
        _ints | st.floats(allow_nan=False, allow_infinity=False),
        st.tuples() | st.lists(_ints, max_size=4).map(tuple),
        st.floats(allow_nan=False, allow_infinity=False),
        st.floats(allow_nan=False, allow_infinity=False),
        _text,
        st.floats(allow_nan=False, allow_infinity=False),
        st.floats(allow_nan=False, allow_infinity=False),
        st.booleans(),
    ),
    st.builds(Compose, st.lists(_json, max_size=3).map(tuple)),
    st.just(Pools()),
    st.builds(Migrate, _text, _text | _ints),
    st.builds(Adopt, _text, _text, _text, _text, st.dictionaries(_text, _json, max_size=3)),
)


@settings(max_examples=400, deadline=None)
@given(_requests)
def test_requests_round_trip_through_the_wire(request_: Request) -> None:
    wire = msgpack.unpackb(msgpack.packb(encode(request_), use_bin_type=True), raw=False)
    assert decode_untrusted(wire) == request_


@settings(max_examples=200, deadline=None)
@given(st.builds(Ok, _json) | st.builds(Err, _ints, _text))
def test_replies_round_trip_through_the_wire(reply: Ok | Err) -> None:
    wire = msgpack.unpackb(msgpack.packb(encode_reply(reply), use_bin_type=True), raw=False)
    assert decode_reply(wire) == reply


# -- frames from the network: sizes by kind, values counted -----------------------------------


@pytest.mark.parametrize(("request_", "wire"), WIRE)
def test_the_first_bytes_name_the_kinds_size(request_: Request, wire: dict[str, Any]) -> None:
    assert frame_limit(msgpack.packb(wire)) == request_.MAX_BYTES
    assert frame_limit(msgpack.packb(wire)[:PEEK_BYTES]) == request_.MAX_BYTES


def test_only_the_migrating_kinds_get_large_frames() -> None:
    sizes = {type(r).__name__: r.MAX_BYTES for r, _ in WIRE}
    assert sizes.pop("Adopt") == sizes.pop("Swim") == MAX_FRAME
    assert sizes.pop("Compose") == 1 << 20
    assert sizes.pop("Block") == BLOCK_IO + SMALL_FRAME  # one run of an array's I/O
    assert set(sizes.values()) == {SMALL_FRAME}
    # a kind named anywhere but first, or no kind at all, gets the smallest size
    late = msgpack.packb({"pool_id": "1.0", "k": "control", "op": "adopt"})
    for prefix in (late, b"", b"\xdd\xff\xff\xff\xff", b"\x81\xa1k", b"\x00" * 64):
        assert frame_limit(prefix) == SMALL_FRAME


def test_a_frame_larger_than_its_kind_is_a_bad_frame() -> None:
    body = msgpack.packb(encode(Monitor("x" * SMALL_FRAME)))
    with pytest.raises(BadFrame, match="larger than 65536 bytes"):
        decode_frame(body)
    # ... also when its first keys named a larger kind (a repeated "k": the last one counts)
    pairs = [("k", "control"), ("op", "adopt"), ("query", "x" * SMALL_FRAME), ("k", "monitor")]
    body = b"\x84" + b"".join(msgpack.packb(k) + msgpack.packb(v) for k, v in pairs)
    assert frame_limit(body) == MAX_FRAME
    with pytest.raises(BadFrame, match="a Monitor frame is larger than 65536 bytes"):
        decode_frame(body)
    assert decode_frame(msgpack.packb(encode(Identity()))).request == Identity()


def test_values_are_counted_while_they_are_built() -> None:
    nested = {"k": "control", "op": "adopt", "mod_name": "m", "pool_name": "p", "pool_id": "8.0",
              "state": {"data": [[[]] * 100] * 100}}  # fmt: skip
    body = msgpack.packb(nested)
    assert decode_frame(body).values == 1 + 6 * 2 + 2 + 100 + 100 * 100
    with pytest.raises(BadFrame, match="more than 10000 values"):
        decode_frame(body, max_values=10_000)
    with pytest.raises(BadFrame, match="not a map"):
        unpack_untrusted(msgpack.packb([1, 2]))


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200) | _any.map(lambda v: msgpack.packb(v, use_bin_type=True)))
def test_any_bytes_raise_only_bad_frame(data: bytes) -> None:
    assert frame_limit(data) in {SMALL_FRAME, 1 << 20, MAX_FRAME}
    try:
        decoded = decode_frame(data, max_values=50)
    except BadFrame:
        return
    assert isinstance(decoded.request, typing.get_args(Request))
    assert decoded.values <= 50


# ---- memberlist's streams on the same port (rpc rule 6) -------------------------------------


def test_memberlist_streams_are_told_from_our_frames_by_their_first_bytes() -> None:
    ping = codec.encode_message(codec.Ping(7, "rt-0", "127.0.0.1", 7946, "serf-a"))
    pushpull = stream.pushpull_bytes([], join=True)
    for theirs in (ping, pushpull, b"\x08\x81", b"\x09\x82", b"\x0a\x00\x00\x01"):
        assert is_foreign(theirs[:4]), theirs[:4]
    lengths = [1, 100, 0x82A552, 0x86A553, (1 << 24) - 1, 1 << 24]  # up to MAX_FRAME
    for length in lengths:
        assert not is_foreign(struct.pack(">I", length)), length
    assert [is_foreign(b""), is_foreign(b"\x00")] == [False, False]  # too short to say: ours
