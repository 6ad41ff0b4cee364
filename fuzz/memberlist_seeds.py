"""The seeds of the memberlist targets (``memberlist``, ``memberlist_stream``) and their words;
``fuzz.seeds`` writes them with the others.

``ok-*`` packets and streams come from ``swim.memberlist``'s encoders and from real Serf
agents (``ok-serf-*``: the captures of ``tests/swim/serf_captures``, copied in); ``edge-*`` are
the refusals each limit and check of ``codec``, ``lzw`` and ``stream`` must make. The first
byte of every input is the target's mode (see the targets' docstrings).
"""

from __future__ import annotations

from pathlib import Path

import msgpack

from swim.memberlist import codec, lzw, stream
from swim.memberlist.codec import Kind
from swim.memberlist.edge import encode_tags
from tests.support.memberlist_packets import compound, compressed, pack, typed

from .targets.memberlist_stream import sealed

__all__ = ["CAPTURES", "WORDS", "seeds"]

CAPTURES = Path(__file__).resolve().parents[1] / "tests" / "swim" / "serf_captures"
HOST = "127.0.0.1"
PLAIN, KEYED, SEALED, SEALED_V0 = b"\x00", b"\x01", b"\x02", b"\x03"  # the packet target's modes
STREAM_PLAIN, STREAM_KEYED, STREAM_SEALED_NO_KEY, STREAM_SEALED = b"\x00", b"\x01", b"\x02", b"\x03"
# go-msgpack's field names (the words the fuzzer cannot guess) and memberlist's type bytes.
FIELDS = (
    "SeqNo", "Node", "SourceAddr", "SourcePort", "SourceNode", "Incarnation", "Addr", "Port",
    "Meta", "Vsn", "From", "Target", "Nack", "Payload", "Algo", "Buf", "Nodes", "UserStateLen",
    "Join", "Name", "State", "Error",
)  # fmt: skip
META = encode_tags({"role": "web"})
MESSAGES: tuple[codec.Message, ...] = (
    codec.Ping(7, "rt-0", HOST, 7946, "serf-a"),
    codec.IndirectPing(8, HOST, 7947, "serf-b", True, HOST, 7946, "serf-a"),
    codec.Ack(9),
    codec.Nack(10),
    codec.Suspect(2, "serf-b", "serf-a"),
    codec.Alive(3, "serf-a", HOST, 7946, META, codec.VSN),
    codec.Dead(4, "serf-b", "serf-b"),
)
STATES = (
    codec.NodeState("serf-a", HOST, 7946, META, 3, 0, codec.VSN),
    codec.NodeState("serf-b", "::1", 7947, b"", 1, 1, codec.VSN),
    codec.NodeState("rt-0", HOST, 7948, encode_tags({"rtsim": "0"}), 2, 3, codec.VSN),
)
WORDS: tuple[bytes, ...] = tuple(msgpack.packb(k, use_bin_type=False) for k in FIELDS)


def _flip_last(data: bytes) -> bytes:
    return data[:-1] + bytes([data[-1] ^ 1])


def _captures(prefix: str) -> dict[str, bytes]:
    files = sorted(CAPTURES.glob(prefix + "*"))
    assert files, f"no captures {prefix}* in {CAPTURES}"
    return {f"ok-serf-{p.name}": p.read_bytes() for p in files}


def _packets() -> dict[str, bytes]:
    parts = [codec.encode_message(m) for m in MESSAGES]
    ping, alive = parts[0], parts[5]
    out = {
        f"ok-{type(m).__name__.lower()}": PLAIN + p for m, p in zip(MESSAGES, parts, strict=True)
    }
    out |= {
        "ok-compound": PLAIN + codec.encode_packet(parts, None, crc=False),
        "ok-compound-crc": PLAIN + codec.encode_packet(parts, None),
        "ok-compressed": PLAIN + compressed(codec.encode_packet(parts, None, crc=False)),
        "ok-skipped": PLAIN + compound([ping, typed(Kind.USER, {}), b"\x06\x80"]),
        "ok-sealed": SEALED + codec.encode_packet(parts, None),
        "ok-sealed-v0": SEALED_V0 + codec.encode_packet([alive], None) + b"\x04" * 4,
    }
    out |= {k: PLAIN + v for k, v in _captures("udp-plain-").items()}
    out |= {k: KEYED + v for k, v in _captures("udp-sealed-").items()}
    crc = codec.encode_packet([ping], None)
    deep = ping
    for _ in range(codec.MAX_DEPTH + 1):
        deep = compound([deep])
    wide = compressed(compound([ping] * 200))
    bomb = lzw.compress(b"\x00" * 2 * 16384)
    out |= {
        "edge-empty": PLAIN,
        "edge-crc": PLAIN + crc[:1] + bytes(4) + crc[5:],
        "edge-compound-cut": PLAIN + codec.encode_packet(parts, None, crc=False)[:-3],
        "edge-compound-lengths": PLAIN + bytes([Kind.COMPOUND, 200, 0, 1]),
        "edge-deep": PLAIN + deep,
        "edge-name-utf8": PLAIN + typed(Kind.SUSPECT, {"Incarnation": 1, "Node": b"\xff\xfe"}),
        "edge-addr-5": PLAIN + typed(Kind.ALIVE, {"Node": "x", "Addr": b"\x7f\x00\x00\x01\x00"}),
        "edge-incarnation": PLAIN + typed(Kind.DEAD, {"Incarnation": 1 << 32, "Node": "x"}),
        "edge-meta": PLAIN
        + typed(Kind.ALIVE, {"Node": "x", "Addr": b"\x7f\x00\x00\x01", "Meta": b"m" * 513}),
        "edge-too-many": PLAIN + compound([wide, wide]),
        "edge-lzw-undefined": PLAIN + typed(Kind.COMPRESS, {"Buf": lzw.pack_codes([256, 65, 300])}),
        "edge-lzw-bomb": PLAIN + typed(Kind.COMPRESS, {"Algo": 0, "Buf": bomb}),
        "edge-lzw-no-end": PLAIN + typed(Kind.COMPRESS, {"Buf": lzw.pack_codes([256, 65, 66])}),
        "edge-lzw-algo": PLAIN + typed(Kind.COMPRESS, {"Algo": 1, "Buf": b""}),
        "edge-not-sealed": KEYED + crc,
        "edge-sealed-garbage": KEYED + b"\x01" + bytes(range(40)),
        "edge-padding": SEALED_V0 + crc + b"\x11",
    }
    return out


def _streams() -> dict[str, bytes]:
    push = stream.pushpull_bytes(STATES, True)
    ping = codec.encode_message(MESSAGES[0])
    header = {"Nodes": 1, "UserStateLen": 0, "Join": False}
    state = codec.encode_message(STATES[0])
    out = {
        "ok-pushpull": STREAM_PLAIN + push,
        "ok-pushpull-user-state": STREAM_PLAIN
        + typed(Kind.PUSH_PULL, {**header, "UserStateLen": 5})
        + state
        + b"serf!",
        "ok-pushpull-compressed": STREAM_PLAIN + compressed(push),
        "ok-ping": STREAM_PLAIN + ping,
        "ok-error": STREAM_PLAIN + stream.error_bytes("no"),
        "ok-sealed": STREAM_SEALED + push,
        "ok-sealed-compressed": STREAM_SEALED + compressed(push),
        "ok-serf-stream-plain": STREAM_PLAIN + (CAPTURES / "stream-plain").read_bytes(),
        "ok-serf-stream-sealed": STREAM_KEYED + (CAPTURES / "stream-sealed").read_bytes(),
        "edge-nodes-huge": STREAM_PLAIN + typed(Kind.PUSH_PULL, {**header, "Nodes": 10**9}),
        "edge-user-state-huge": STREAM_PLAIN
        + typed(Kind.PUSH_PULL, {**header, "UserStateLen": 1 << 31}),
        "edge-user-state-cut": STREAM_PLAIN
        + typed(Kind.PUSH_PULL, {**header, "Nodes": 0, "UserStateLen": 100})
        + b"x",
        "edge-sealed-4gb": STREAM_KEYED + bytes([Kind.ENCRYPT]) + b"\xff" * 4 + b"\x01" * 40,
        "edge-cut": STREAM_PLAIN + push[:-7],
        "edge-plain-with-key": STREAM_KEYED + push,
        "edge-sealed-no-key": STREAM_SEALED_NO_KEY + push,
        "edge-sealed-garbage": STREAM_KEYED + _flip_last(sealed(push)),
        "edge-bad-state": STREAM_PLAIN
        + typed(Kind.PUSH_PULL, header)
        + pack({"Name": "x", "Addr": b"\x7f\x00\x00\x01", "State": 7}),
        "edge-user-type": STREAM_PLAIN + typed(Kind.USER, {}),
        "edge-ping-not-map": STREAM_PLAIN + bytes([Kind.PING]) + pack([1, 2]),
    }
    return out


def seeds() -> dict[str, dict[str, bytes]]:
    """The two targets' seed files: name -> file name -> bytes."""
    return {"memberlist": _packets(), "memberlist_stream": _streams()}
