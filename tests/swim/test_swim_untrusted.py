"""Every parser of untrusted swim input, under generated input: one exception, typed results.

``wire.decode_untrusted`` (UDP packets), ``wire.decode_state_untrusted`` (push/pull state),
``exchange.open_sealed`` (sealed TCP frames) and ``RtsimDoor.receive`` (the whole intake)
either return well-typed values or fail with ``BadMessage``; nothing else ever escapes.
"""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import msgpack
from hypothesis import given, settings
from hypothesis import strategies as st

from swim import BadMessage, SimNetwork, SwimConfig, decode_untrusted
from swim.exchange import open_sealed
from swim.keyring import TCP_REQUEST, Keyring
from swim.members import MemberState
from swim.outputs import Output
from swim.rtsimdoor import RtsimDoor
from swim.wire import (
    Message,
    StateEntry,
    decode_state_untrusted,
    encode_compound,
    encode_part,
)
from tests.support.strategies import msgpack_scalars, msgpack_values, swim_messages

U16, U32, U63 = 2**16 - 1, 2**32 - 1, 2**63 - 1
_host = st.text(min_size=1, max_size=40)
_u32, _u16, _u63 = st.integers(0, U32), st.integers(0, U16), st.integers(0, U63)
MESSAGES: st.SearchStrategy[Message] = swim_messages(_u32, _host, _u16, _u63)
_scalar = msgpack_scalars(
    12, st.sampled_from(["alive", "suspected", "dead", "left", "probe_failed"])
)
_value = msgpack_values(_scalar, width=6, key_size=4, max_leaves=10)
_row = st.tuples(_u32 | _scalar, _host | _scalar, _u16 | _scalar, _u63 | _scalar,
                 st.sampled_from(["alive", "suspected", "dead", "left", "probe_failed"]) | _scalar,
                 _u63 | _scalar).map(list)  # fmt: skip


def _typed(m: Message) -> None:
    for name in m.__dataclass_fields__:
        v = getattr(m, name)
        if isinstance(v, bool):
            continue
        assert isinstance(v, int | str)
        if isinstance(v, int):
            assert 0 <= v <= U63
        else:
            assert 0 < len(v) <= 255


@settings(max_examples=300, deadline=None)
@given(st.lists(MESSAGES, min_size=1, max_size=12))
def test_every_valid_packet_decodes_to_exactly_its_messages(msgs: list[Message]) -> None:
    assert decode_untrusted(encode_compound([encode_part(m) for m in msgs])) == msgs


@settings(max_examples=500, deadline=None)
@given(
    st.one_of(
        st.binary(max_size=1500),
        st.lists(MESSAGES, min_size=1, max_size=4).map(
            lambda ms: encode_compound([encode_part(m) for m in ms])
        ),
    ),
    st.data(),
)
def test_any_bytes_decode_to_typed_messages_or_bad_message(data: bytes, d: st.DataObject) -> None:
    mutated = bytearray(data)
    for _ in range(d.draw(st.integers(0, 4))):
        if mutated:
            mutated[d.draw(st.integers(0, len(mutated) - 1))] = d.draw(st.integers(0, 255))
    try:
        msgs = decode_untrusted(bytes(mutated))
    except BadMessage:
        return
    assert isinstance(msgs, list)
    assert 1 <= len(msgs) <= 255
    for m in msgs:
        _typed(m)


@settings(max_examples=400, deadline=None)
@given(st.one_of(_value, st.lists(_row, max_size=5)))
def test_any_push_pull_state_decodes_to_entries_or_bad_message(rows: Any) -> None:
    try:
        entries = decode_state_untrusted(rows)
    except BadMessage:
        return
    assert isinstance(entries, list)
    for e in entries:
        assert isinstance(e, StateEntry)
        assert e.state in (MemberState.ALIVE, MemberState.SUSPECTED, MemberState.DEAD,
                           MemberState.LEFT)  # fmt: skip
        assert 0 <= e.node <= U32
        assert 0 <= e.port <= U16
        assert 0 <= e.incarnation <= U63
        assert 0 <= e.boot <= U63


@settings(max_examples=300, deadline=None)
@given(st.one_of(_value, st.dictionaries(st.sampled_from(["k", "sealed", "op"]), _value)))
def test_any_tcp_frame_opens_to_a_map_or_bad_message(frame: Any) -> None:
    ring = Keyring([bytes(16)])
    reason = None
    try:
        opened = open_sealed(ring, frame, TCP_REQUEST, 1 << 20)
    except BadMessage as exc:
        reason = exc.reason
    else:  # nothing forged opens: only "no frame at all" passes through
        assert frame is None
        assert opened is None
    assert reason in ("auth", "oversize", "malformed", None)


_NET = SimNetwork(3, seed=1)
_NET.run_for(2.0)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=2000), st.sampled_from([("10.1.1.1", 5), SimNetwork.address(1)]))
def test_the_machine_takes_any_packet_from_anywhere(data: bytes, src: tuple[str, int]) -> None:
    m = _NET.machine(0)
    before = m.counters.arrived
    assert isinstance(RtsimDoor(m).receive(data, src, _NET.now), Output)
    assert m.counters.arrived == before + 1


def test_the_keyed_machine_takes_any_packet_too(tmp_path: Path) -> None:
    keys = tmp_path / "k"
    keys.write_text(base64.b64encode(bytes(32)).decode())
    net = SimNetwork(2, SwimConfig(keyring_file=str(keys)), seed=1)
    m = net.machine(0)
    for data in (b"", b"\xa1", b"\xa1" + bytes(40), msgpack.packb([1, 2]), bytes(3000)):
        assert RtsimDoor(m).receive(data, net.address(1), 1.0).datagrams == ()
    assert m.counters.summary()["dropped_auth"] == 4
    assert m.counters.summary()["dropped_malformed"] == 1  # the oversized one
