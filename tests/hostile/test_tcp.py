"""Hostile TCP against the node RPC (the runtime port) of a real 2-node cluster: random bytes,
bad length prefixes, garbage of a valid length, frames of known kinds with hostile values, a
peer's ``destroy`` of devices not made for it or in use, a huge length then a stall,
half-open connections, and 200 idle connections.

A connection that sent something malformed must be closed (or answered with an error reply,
never a 500) within ``HOLD_WAIT``; the node's RPC counters (``control identity``'s ``rpc``) must
count what it refused; memory must not follow what clients promise to send. After each class
the cluster must be intact (``cluster.check_intact``).
"""

from __future__ import annotations

import random
import socket
import struct
import time
from collections.abc import Sequence
from functools import partial
from typing import Any

import msgpack
import psutil
import pytest
import trio

from .attack import finish, record_intact, sample_health, verdict
from .cluster import ARRAY, CORE, LENT, OWNER, SPARE, VICTIM, Cluster
from .http_inputs import SEED
from .rawhttp import HOST
from .tally import ClassTally, Tally
from .wire_inputs import destroy_frames, frame, typed_frames

pytestmark = pytest.mark.slow

HOLD_WAIT = 9.0  # seconds a connection that sent part of a frame may stay open (the RPC's
# frame timeout is 5 s)
CONCURRENCY = 100  # connections at once: the ones the server holds until its frame timeout
# overlap instead of queueing
MAX_FRAME = 16 * 1024 * 1024  # bytes: the largest frame any RPC kind may have
STALLED = 10  # connections that promise a huge frame, send 4 MiB of it and stall
RSS_GROWTH_LIMIT = 100 * 1024 * 1024  # bytes of node RSS the stalled frames may cost at most
IDLE_CONNECTIONS = 200


async def _reply(stream: trio.SocketStream) -> str:
    """Read until the first reply frame or the end: ``reply ok``, ``err-reply <status>``,
    ``closed``, ``reset``, ``bad reply``."""
    buf = bytearray()
    while True:
        try:
            chunk = await stream.receive_some(65536)
        except trio.BrokenResourceError:
            return "reset"
        if not chunk:
            return "closed"
        buf += chunk
        if len(buf) >= 4:
            (length,) = struct.unpack(">I", buf[:4])
            if len(buf) >= 4 + length:
                try:
                    reply = msgpack.unpackb(bytes(buf[4 : 4 + length]))
                except ValueError:
                    return "bad reply"
                if isinstance(reply, dict) and reply.get("ok") is True:
                    return "reply ok"
                status = reply.get("status", "swim") if isinstance(reply, dict) else "?"
                return f"err-reply {status}"


async def probe(
    port: int, data: bytes, *, shut: bool = False, rst: bool = False, wait: float = HOLD_WAIT
) -> tuple[str, float]:
    """Send ``data`` on a fresh connection (then half-close it if ``shut``, or reset it at once
    if ``rst``) and see what the server does within ``wait`` seconds: the label, the seconds."""
    t0 = time.monotonic()
    try:
        stream = await trio.open_tcp_stream(HOST, port)
    except OSError as exc:
        return f"refused ({exc.errno})", 0.0
    async with stream:
        try:
            await stream.send_all(data)
            if shut:
                await stream.send_eof()
        except trio.BrokenResourceError:
            return "reset while sending", time.monotonic() - t0
        if rst:
            stream.socket.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            return "reset by us", 0.0
        label = "held"
        with trio.move_on_after(wait):
            label = await _reply(stream)
    return label, time.monotonic() - t0


def _judge(label: str, refuse: bool) -> str | None:
    if label == "held":
        return f"held open {HOLD_WAIT:g} s after a partial or malformed frame"
    if label == "err-reply 500":
        return "answered a 500 error reply"
    if label in ("bad reply",):
        return "answered bytes that are not a reply frame"
    if refuse and label == "reply ok":
        return "accepted what it must refuse"
    return None


async def _fire(
    port: int, items: Sequence[tuple[str, bytes]], ct: ClassTally, *, refuse: bool = True, **kw: Any
) -> None:
    limiter = trio.CapacityLimiter(CONCURRENCY)

    async def one(what: str, data: bytes) -> None:
        async with limiter:
            label, _ = await probe(port, data, **kw)
        ct.record(label, what, _judge(label, refuse))

    async with trio.open_nursery() as nursery:
        for what, data in items:
            nursery.start_soon(one, what, data)


def _rpc_counters(cluster: Cluster, i: int = 0) -> dict[str, Any]:
    """The RPC server's counters of node ``i`` (``control identity``'s ``rpc``; {} if absent)."""
    identity = cluster.harness.identity(cluster.nodes[i], timeout=10.0) or {}
    rpc = identity.get("rpc")
    return dict(rpc) if isinstance(rpc, dict) else {}


def _counted(
    cluster: Cluster, cts: Sequence[ClassTally], before: dict[str, Any], keys: Sequence[str]
) -> None:
    """Note how the RPC counters grew while the classes ``cts`` ran; a failure if fewer of
    their connections were counted under ``keys`` than the server closed on them."""
    ct = cts[0]
    after = _rpc_counters(cluster)
    grown = {k: after[k] - before.get(k, 0) for k in after if isinstance(after[k], int)}
    ct.notes["rpc_counters_grown"] = {k: v for k, v in grown.items() if v}
    if not after:
        ct.notes["rpc_counters"] = "not exposed (control identity has no 'rpc')"
        return
    refused = sum(v for c in cts for label, v in c.answers.items() if label in ("closed", "reset"))
    counted = sum(grown.get(k, 0) for k in keys)
    if counted < refused:
        ct.fail(f"{refused} connections closed, {counted} counted in {list(keys)}", str(grown))


def _random_bytes(n: int) -> list[tuple[str, bytes]]:
    rng = random.Random(SEED + 2)
    return [
        (f"random {k} bytes", rng.randbytes(k))
        for k in (rng.choice((1, 3, 4, 5, 64, 500, 2000)) for _ in range(n))
    ]


def _bad_lengths() -> tuple[list[tuple[str, bytes]], list[tuple[str, bytes]]]:
    """Length prefixes out of range or cut short; the second list is sent and half-closed."""
    items = [
        (f"length {n}", struct.pack(">I", n) + b"\x80")
        for n in (0, 1, MAX_FRAME + 1, (1 << 32) - 1, 1 << 31)
    ]
    items += [
        ("3-byte prefix", b"\x00\x00\x10"),
        ("prefix 10, 5 bytes", struct.pack(">I", 10) + b"\x81\xa1k\xa1x"),
    ]
    half = [
        ("prefix 10, 5 bytes, then EOF", struct.pack(">I", 10) + b"\x81\xa1k\xa1x"),
        ("4-byte prefix, then EOF", struct.pack(">I", 100)),
    ]
    return items, half


def test_random_bytes_and_bad_lengths(cluster: Cluster, tally: Tally) -> None:
    """Two classes at once (each waits out the server's frame timeout): random bytes, and
    length prefixes out of range or cut short."""
    rand, length, before = tally["tcp.random"], tally["tcp.length"], _rpc_counters(cluster)
    items, half = _bad_lengths()
    port = cluster.ports[0]

    async def both() -> None:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_fire, port, _random_bytes(100), rand)
            nursery.start_soon(_fire, port, items, length)
            nursery.start_soon(partial(_fire, port, half, length, shut=True))

    trio.run(both)
    _counted(cluster, [rand, length], before, ("malformed", "oversized", "timed_out"))
    record_intact(cluster, rand, "tcp.random")
    verdict(rand, "tcp.random")
    verdict(length, "tcp.length")


def _garbage() -> list[tuple[str, bytes]]:
    """Frames of a valid length whose body is not a request."""
    rng = random.Random(SEED + 3)
    out = []
    for _ in range(30):
        body = rng.randbytes(rng.choice((1, 10, 100, 1000)))
        out.append((f"{len(body)} random body bytes", struct.pack(">I", len(body)) + body))
    for obj in ([1, 2, 3], 7, "x", None, {}, {"k": 5}, {"k": "zzz"}, {"k": "control", "op": 9},
                {"k": "control", "op": "zzz"}, {1: 2}, {"k": "monitor"}):  # fmt: skip
        out.append((f"msgpack {obj!r:.30}", frame(obj)))
    return out


def test_valid_length_garbage(cluster: Cluster, tally: Tally) -> None:
    ct, before = tally["tcp.garbage"], _rpc_counters(cluster)
    trio.run(_fire, cluster.ports[0], _garbage(), ct)
    _counted(cluster, [ct], before, ("malformed",))
    finish(cluster, ct, "tcp.garbage")


def test_frames_with_hostile_values(cluster: Cluster, tally: Tally) -> None:
    """Known kinds with wrong types, malformed ids aimed at real pools, nonsense numbers and
    a push/pull lie: each refused (closed, or a 4xx error reply), none changing state."""
    ct = tally["tcp.typed"]
    items = list(typed_frames("710.0", dead_port=1))
    lenient = {"swim induct", "pushpull: node 1 dead at inc 2^63-1"}
    trio.run(_fire, cluster.ports[0], [i for i in items if i[0] not in lenient], ct)
    trio.run(
        partial(_fire, cluster.ports[0], [i for i in items if i[0] in lenient], ct, refuse=False)
    )
    finish(cluster, ct, "tcp.typed")


def test_a_peer_destroys_no_device_not_made_for_it_or_in_use(
    cluster: Cluster, tally: Tally
) -> None:
    """``remote`` rule 6: each ``destroy`` gets the refusal it must (409 for a device not made
    for the writer, or in use; 400 for a writer too long or a pool that is no block device;
    404 for no pool), and no pool of either node goes (``finish`` compares the pool tables)."""
    ct = tally["tcp.destroy"]
    pools = {
        "victim": VICTIM,
        "member": "810.0",
        "spare": SPARE,
        "spare_name": "hx_spare",
        "lent": LENT,
        "array": ARRAY,
        "core": CORE,
    }
    items = list(destroy_frames(pools, OWNER))
    expected = {what: status for what, _, status in items}

    async def each(port: int) -> None:
        for what, data, _ in items:
            label, _ = await probe(port, data, wait=5.0)
            wrong = label != f"err-reply {expected[what]}"
            ct.record(label, what, f"answered {label}, not {expected[what]}" if wrong else None)

    for port in cluster.ports:
        trio.run(each, port)
    finish(cluster, ct, "tcp.destroy")


async def _stall(cluster: Cluster, ct: ClassTally) -> int:
    """``STALLED`` connections each promising a frame of ``MAX_FRAME - 1`` bytes, sending
    4 MiB of it, then stalling; the node's peak RSS growth while they are open (bytes)."""
    node = psutil.Process(cluster.nodes[0].pid)
    base, peak = node.memory_info().rss, 0
    head = (
        struct.pack(">I", MAX_FRAME - 1)
        + b"\xdf\x00\x00\x00\x02\xa1k\xa4swim\xa5state\xdd\x00\x0f\xff\xff"
    )
    data = head + b"\xc0" * (4 << 20)

    async def watch() -> None:
        nonlocal peak
        while True:
            peak = max(peak, node.memory_info().rss - base)
            await trio.sleep(0.1)  # the RSS sampling interval, a measurement

    async with trio.open_nursery() as nursery:
        nursery.start_soon(watch)
        await _fire(cluster.ports[0], [("huge length, 4 MiB, stall", data)] * STALLED, ct)
        nursery.cancel_scope.cancel()
    return peak


def test_huge_length_then_stall(cluster: Cluster, tally: Tally) -> None:
    ct, before = tally["tcp.stall"], _rpc_counters(cluster)
    growth = trio.run(_stall, cluster, ct)
    ct.notes["rss_growth_mib"] = round(growth / (1 << 20), 1)
    if growth > RSS_GROWTH_LIMIT:
        ct.fail(f"node RSS grew {growth >> 20} MiB for {STALLED} stalled frames", "huge length")
    _counted(cluster, [ct], before, ("oversized", "over_budget", "timed_out", "malformed"))
    finish(cluster, ct, "tcp.stall")


def test_half_open_connections(cluster: Cluster, tally: Tally) -> None:
    """A frame cut by the client's EOF, and requests whose client resets before the reply."""
    ct = tally["tcp.half_open"]
    half = frame({"k": "control", "op": "pools"})
    cut = [("half a frame, then EOF", half[: len(half) // 2])] * 20
    trio.run(partial(_fire, cluster.ports[0], cut, ct, shut=True))
    asked = [("pools request, reset before the reply", half)] * 20
    trio.run(partial(_fire, cluster.ports[0], asked, ct, rst=True))
    finish(cluster, ct, "tcp.half_open")


async def _idle(cluster: Cluster, ct: ClassTally) -> None:
    """``IDLE_CONNECTIONS`` silent connections held while health and the RPC are asked."""
    port, opened = cluster.ports[0], []

    async def hold() -> None:
        try:
            stream = await trio.open_tcp_stream(HOST, port)
        except OSError as exc:
            ct.record(f"refused ({exc.errno})", "idle connection")
            return
        opened.append(stream)

    async with trio.open_nursery() as nursery:
        for _ in range(IDLE_CONNECTIONS):
            nursery.start_soon(hold)
    try:
        await sample_health(cluster, ct, 2.0)
        label, seconds = await probe(port, frame({"k": "control", "op": "identity"}), wait=5.0)
        ct.notes["identity_while_held"] = {"answer": label, "seconds": round(seconds, 3)}
        if label != "reply ok":
            ct.fail("the RPC did not answer identity while idle connections were held", label)
        for stream in opened:
            closed = False
            with trio.move_on_after(0.01):
                try:
                    closed = not await stream.receive_some(1)
                except trio.BrokenResourceError:
                    closed = True
            ct.record("closed by server" if closed else "held (idle)", "idle connection")
    finally:
        for stream in opened:
            await stream.aclose()


def test_idle_connections(cluster: Cluster, tally: Tally) -> None:
    ct = tally["tcp.idle"]
    trio.run(_idle, cluster, ct)
    finish(cluster, ct, "tcp.idle")
