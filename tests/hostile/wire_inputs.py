"""Hostile packets for the runtime port: UDP datagrams for SWIM and TCP frames for the node
RPC, generated with a fixed seed.

Rules:
1. Valid messages are built with the project's own codecs (``swim.wire``, the RPC's length
   prefix), so they stay valid when the formats gain fields; the hostile ones are those
   messages cut short, with fields swapped for out-of-range or wrong-typed values, or bytes
   from ``random.Random(SEED)``.
2. Every malformed datagram here must be dropped (and counted); none is a valid message. The
   lies (``lies``) are valid messages that say something false about a live member.
3. TCP frames that are well-formed never ask for a legitimate state change: no ``stop``, no
   ``faults`` action with an in-range value, no migrate or adopt of a real pool under its
   real id.
"""

from __future__ import annotations

import random
import struct
from collections.abc import Iterator
from typing import Any

import msgpack

from swim import wire

from .http_inputs import SEED, malformed_ids

__all__ = [
    "U63",
    "destroy_frames",
    "flood",
    "frame",
    "lies",
    "out_of_range",
    "ping",
    "random_datagrams",
    "truncated",
    "typed_frames",
]

U63 = (1 << 63) - 1
_U63_FIELDS = {"Alive": (0, 4), "Suspect": (0,), "Dead": (0,)}  # fields ranged 0..2^63-1
_BAD_VALUES: tuple[Any, ...] = (
    -1, 1 << 32, (1 << 64) - 1, -(1 << 63), 1.5, float("nan"), True, None, "", "x" * 300,
    b"\x00", [], {"a": 1}, msgpack.ExtType(1, b"x"),
)  # fmt: skip


def _samples(src_port: int) -> list[wire.Message]:
    """One valid message of each kind (node 1 speaking to node 0, acks to ``src_port``)."""
    host = "127.0.0.1"
    return [
        wire.Ping(7, 0, 1, host, src_port),
        wire.PingReq(8, 1, host, src_port, True, 1, host, src_port),
        wire.Ack(9, 1),
        wire.Nack(10, 1),
        wire.Alive(0, 1, host, src_port, 1),
        wire.Suspect(0, 1, 0),
        wire.Dead(0, 1, 0),
    ]


def random_datagrams(n: int) -> Iterator[tuple[str, bytes]]:
    rng = random.Random(SEED)
    for i in range(n):
        size = rng.choice((0, 1, 2, 3, 10, 100, 500, 1400, 1400, 9000))
        data = rng.randbytes(size)
        if i % 3 == 0 and size >= 2:  # looks like our version and a known type
            data = bytes([wire.VERSION, rng.randint(1, 8)]) + data[2:]
        yield f"random {size} bytes", data


def truncated(n: int, src_port: int) -> Iterator[tuple[str, bytes]]:
    """Valid packets (single and compound) cut at a random byte."""
    rng = random.Random(SEED + 1)
    msgs = _samples(src_port)
    packets = [wire.encode(m) for m in msgs]
    packets.append(wire.encode_compound([wire.encode_part(m) for m in msgs]))
    for _ in range(n):
        p = rng.choice(packets)
        cut = rng.randrange(0, len(p) - 1) if len(p) > 2 else 1
        yield f"{p[1]}-packet cut to {cut} of {len(p)} bytes", p[:cut]


def _raw(kind: int, body: Any, version: int = wire.VERSION) -> bytes:
    packed: bytes = msgpack.packb(body, use_bin_type=True)
    return bytes([version, kind]) + packed


def out_of_range(src_port: int) -> Iterator[tuple[str, bytes]]:
    """Every field of every message kind swapped for each bad value; wrong arity, maps,
    unknown types and versions; compound packets that break their rules."""
    for msg in _samples(src_port):
        part = wire.encode_part(msg)
        kind, body = part[0], msgpack.unpackb(part[1:])
        wide = _U63_FIELDS.get(type(msg).__name__, ())
        for i in range(len(body)):
            for bad in _BAD_VALUES:
                if type(bad) is type(body[i]) and bad == body[i]:
                    continue
                if i in wide and bad == 1 << 32:
                    continue  # a valid incarnation or boot (up to 2^63-1)
                if isinstance(body[i], str) and isinstance(bad, str) and len(bad) <= 255 and bad:
                    continue  # another host name is not out of range
                hostile = [*body[:i], bad, *body[i + 1 :]]
                yield f"{type(msg).__name__} field {i} = {bad!r:.20}", _raw(kind, hostile)
        yield f"{type(msg).__name__} one field short", _raw(kind, body[:-1])
        yield f"{type(msg).__name__} one field more", _raw(kind, [*body, 0])
        yield f"{type(msg).__name__} body a map", _raw(kind, dict(enumerate(body)))
        if isinstance(msg, wire.Alive | wire.Suspect | wire.Dead):
            yield f"{type(msg).__name__} incarnation 2^63", _raw(kind, [1 << 63, *body[1:]])
    ping = wire.encode_part(_samples(src_port)[0])
    for kind in (0, 9, 127, 255):
        yield f"unknown type {kind}", bytes([wire.VERSION, kind]) + ping[1:]
    for version in (0, 2, 255):
        yield f"version {version}", bytes([version]) + ping
    compound = wire.MsgType.COMPOUND
    yield "compound of 256 parts", _raw(compound, [ping] * 256)
    yield "compound of 0 parts", _raw(compound, [])
    yield "nested compound", _raw(compound, [bytes([compound]) + msgpack.packb([ping])])
    yield "compound of ints", _raw(compound, [1, 2, 3])
    yield "compound with an empty part", _raw(compound, [ping, b""])
    yield "array of 2^32-1 declared", bytes([wire.VERSION, 1, 0xDD, 0xFF, 0xFF, 0xFF, 0xFF])
    yield "str of 2^32-1 declared", bytes([wire.VERSION, 1, 0x91, 0xDB, 0xFF, 0xFF, 0xFF, 0xFF])


def ping(seq: int, target: int, src_port: int) -> bytes:
    """A valid ping of node ``target`` as if from node 1, acked to ``127.0.0.1:src_port``."""
    return wire.encode(wire.Ping(seq, target, 1, "127.0.0.1", src_port))


def lies(bogus_port: int) -> list[tuple[int, str, bytes]]:
    """Valid messages that lie about a live member, each with the node (0 or 1) it is sent
    to: ``Dead``/``Suspect`` at incarnation 2^63-1, a ``Dead`` claiming node 1 left, and an
    ``Alive`` moving node 1 to a port where nothing listens."""
    hijack = wire.Alive(U63, 1, "127.0.0.1", bogus_port, U63)
    return [
        (0, "Dead(node 1, inc 2^63-1, src 0) to node 0", wire.encode(wire.Dead(U63, 1, 0))),
        (1, "Suspect(node 0, inc 2^63-1, src 1) to node 1", wire.encode(wire.Suspect(U63, 0, 1))),
        (0, "Dead(node 1, inc 2^63-1, src 1: left) to node 0", wire.encode(wire.Dead(U63, 1, 1))),
        (1, "Dead(node 0, inc 2^63-1, src 0: left) to node 1", wire.encode(wire.Dead(U63, 0, 0))),
        (0, "Alive(node 1 at a dead port, inc 2^63-1)", wire.encode(hijack)),
    ]  # fmt: skip


def flood(n: int, src_port: int, peer_port: int) -> Iterator[tuple[str, bytes]]:
    """``n`` probes to node 0 as if from node 1 (acks to ``src_port``): three pings for every
    ping-req asking node 0 to probe node 1."""
    host = "127.0.0.1"
    for seq in range(n):
        if seq % 4 == 3:
            yield (
                "ping_req",
                wire.encode(wire.PingReq(seq, 1, host, peer_port, True, 1, host, src_port)),
            )
        else:
            yield "ping", wire.encode(wire.Ping(seq, 0, 1, host, src_port))  # fmt: skip


# -- TCP frames of the node RPC ----------------------------------------------------------------


def destroy_frames(pools: dict[str, str], owner: str) -> Iterator[tuple[str, bytes, int]]:
    """``destroy`` block calls a peer is refused (``remote`` rule 6), each with the status it
    must get: ``pools`` names the targets by role (``lent``: made for ``owner``'s array and
    in use; ``spare``: made for it, free; ``victim`` and ``member``: made for no array;
    ``array`` and ``core``: no block device), by pool id; ``spare_name``, by name."""

    def call(pool: str, writer: str) -> bytes:
        return frame({"k": "block", "pool": pool, "op": "destroy", "writer": writer})

    for role in ("victim", "member"):
        for writer in ("", owner, "hx/other"):
            yield f"destroy {role} as {writer or 'nobody'}", call(pools[role], writer), 409
    yield "destroy the spare as another array", call(pools["spare"], "hx/other"), 409
    yield "destroy the spare as nobody", call(pools["spare"], ""), 409
    yield "destroy the spare by name, writer cut", call(pools["spare_name"], owner[:-1]), 409
    yield "destroy the spare, writer lengthened", call(pools["spare"], owner + "x"), 409
    yield "destroy the spare, writer upper-cased", call(pools["spare"], owner.upper()), 409
    yield "destroy the spare, writer of 129", call(pools["spare"], "w" * 129), 400
    yield "destroy the lent device in use", call(pools["lent"], owner), 409
    yield "destroy the lent device, writer of 5000", call(pools["lent"], owner * 400), 400
    for role in ("array", "core"):
        yield f"destroy the {role} as its owner", call(pools[role], owner), 400
    yield "destroy no such pool", call("999.9", owner), 404
    yield "destroy a malformed id", call("830.0.0", owner), 400


def _nested(depth: int) -> list[Any]:
    """``[[[...]]]``, ``depth`` lists deep."""
    out: list[Any] = []
    for _ in range(depth - 1):
        out = [out]
    return out


def frame(obj: Any) -> bytes:
    """One RPC frame: a 4-byte big-endian length and the msgpack body."""
    body: bytes = msgpack.packb(obj, use_bin_type=True)
    return struct.pack(">I", len(body)) + body


def typed_frames(real_pool: str, dead_port: int) -> Iterator[tuple[str, bytes]]:
    """Frames of known kinds with hostile values: wrong types, malformed ids aimed at a real
    pool, out-of-range numbers, a push/pull state that lies about node 1."""
    c = "control"
    bad_pool_ids = malformed_ids(real_pool)[:24]
    for pid in bad_pool_ids:
        yield (
            f"pool_monitor pool_id {pid[:30]}",
            frame({"k": "pool_monitor", "pool_id": pid, "query": "stats"}),
        )
        yield (
            f"migrate pool_id {pid[:30]} to 1",
            frame({"k": c, "op": "migrate", "pool_id": pid, "to": 1}),
        )
    for to in (-1, U63, "99", "", "x" * 5000, "1 ", "\u0661"):
        yield (
            f"migrate 999.9 to {to!r:.20}",
            frame({"k": c, "op": "migrate", "pool_id": "999.9", "to": to}),
        )
    for bad in _BAD_VALUES[:10]:
        yield f"monitor query={bad!r:.20}", frame({"k": "monitor", "query": bad})
        yield f"faults action={bad!r:.20}", frame({"k": c, "op": "faults", "action": bad})
        yield f"compose entries={bad!r:.20}", frame({"k": c, "op": "compose", "entries": bad})
    yield from _control_values()
    yield from _swim_frames(dead_port)


def _control_values() -> Iterator[tuple[str, bytes]]:
    """Control frames of the right types with nonsense values (faults, compose, adopt)."""
    c = "control"
    for action, value in (
        ("loss", 101),
        ("loss", -1),
        ("delay", -5),
        ("delay", 1e15),
        ("loss", 1e308),
    ):
        yield (
            f"faults {action} {value}",
            frame({"k": c, "op": "faults", "action": action, "value": value}),
        )
    for peer in (-1, U63):
        yield (
            f"faults block peer {peer}",
            frame({"k": c, "op": "faults", "action": "block", "peers": [peer]}),
        )
        yield (
            f"faults cut peer {peer}",
            frame({"k": c, "op": "faults", "action": "cut", "peers": [peer]}),
        )
    for offset, rate in ((31_622_401.0, 1.0), (-1e308, 1.0), (0.0, 0.49), (0.0, 2.5), (0, -1)):
        yield (
            f"faults clock {offset} x{rate}",
            frame({"k": c, "op": "faults", "action": "clock", "offset": offset, "rate": rate}),
        )
    for fields in ({"rate": "2"}, {"offset": None}, {"full": 1}, {"pool": 7}, {"errors": []}):
        yield (
            f"faults clock {fields}",
            frame({"k": c, "op": "faults", "action": "clock", **fields}),
        )
    for pool, fault in (
        ("nope", {"errors": 100}),  # no such pool: 400
        ("rt_admin", {"errors": 100}),  # a pool that is no rt_bdev device: 400
        ("", {"full": True}),
        ("x" * 5000, {"latency_ms": 5}),
        ("hz_any", {"latency_ms": -1}),
        ("hz_any", {"latency_ms": 1e15}),
        ("hz_any", {"errors": 101}),
        ("hz_any", {"errors": -0.5}),
        ("hz_any", {"full": 1}),  # not a bool: a bad frame
    ):
        yield (
            f"faults disk {pool[:20]} {fault}",
            frame({"k": c, "op": "faults", "action": "disk", "pool": pool, **fault}),
        )
    entries: tuple[Any, ...] = (
        {"mod_name": "rt_bdev", "pool_name": "hz_t1", "bdev_type": "file", "capacity": "1P"},
        {"mod_name": "rt_bdev", "pool_name": "hz_t2", "capacity": -1},
        {"mod_name": "rt_bdev", "pool_name": "hz_t3", "pool_id": " 820.0 ", "capacity": "16K"},
        {
            "mod_name": "rt_safe_bdev",
            "pool_name": "hz_t4",
            "members": [[[[]]]],
            "max_failures": 1e308,
        },
        _nested(32),
    )
    for entry in entries:
        yield (
            f"compose entry {str(entry)[:60]}",
            frame({"k": c, "op": "compose", "entries": [entry]}),
        )
    for state in (
        {"free_runs": [[-1, -5]]},
        {"chunks": [[U63, b"x"]]},
        {"chunks": "x"},
        {"config": {"capacity": -1}},
    ):
        adopt = {
            "k": c,
            "op": "adopt",
            "mod_name": "rt_bdev",
            "pool_name": "hz_a",
            "pool_id": "998.9",
            "state": state,
        }
        yield f"adopt state {str(state)[:40]}", frame(adopt)


def _swim_frames(dead_port: int) -> Iterator[tuple[str, bytes]]:
    """Membership frames over TCP: a push/pull that lies about node 1, malformed states."""
    lie = [[1, "127.0.0.1", dead_port, U63, "dead", U63]]
    yield (
        "pushpull: node 1 dead at inc 2^63-1",
        frame({"k": "swim", "op": "pushpull", "from": 1, "state": lie}),
    )
    for state in (
        [[1, "", -1, -1, "zombie", -1]],
        [[0] * 6] * 3,
        "x",
        [[None] * 6],
        [[U63 + 1, "h", 1, 0, "alive", 0]],
    ):
        yield (
            f"pushpull state {str(state)[:40]}",
            frame({"k": "swim", "op": "pushpull", "from": 1, "state": state}),
        )
    yield "swim op unknown", frame({"k": "swim", "op": "zzz"})
    yield "swim induct", frame({"k": "swim", "op": "induct"})  # fmt: skip
