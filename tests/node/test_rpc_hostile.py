"""Hostile TCP input on a real node's runtime port (issue 12): big stalled frames, a flood of idle
connections, random bytes, garbage msgpack, a half-open connection. The node stays up, answers
its RPC identity and ``/api/health`` within a second, keeps its memory, and counts every drop.

Before the limits, 30 connections holding 15 MB frames took the node to ~600 MB, a stalled
frame was held for good, and 1,000 idle connections under a 512-descriptor limit killed the node
(EMFILE in its system-stats sampling).
"""

from __future__ import annotations

import random
import resource
import socket
import struct
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import msgpack
import psutil
import pytest
import trio

from cluster.ground.errors import ApiError
from cluster.rpc import Adopt, Identity, encode, rpc_call
from cluster.rpc.frames import Block
from tests.support import HOST, Child, Harness, wait_for

pytestmark = pytest.mark.slow

NODE_NOFILE = 512  # the soft limit the node starts with (it raises it itself)
IDLE = 1000  # idle connections
BIG = 30  # connections sending a 15 MB frame, stalled before its last byte
BIG_FRAME = 15_000_000  # bytes
RSS_GROWTH = 200e6  # bytes a node may grow by under all of it (it grew ~550 MB before)
ANSWER = 1.0  # seconds: identity and health must each answer within this
TRIES = 3  # ... in the best of this many tries (two cores are shared by everyone)
CLOSE_WAIT = 30.0  # seconds a test socket waits for the node to close it (5 s frame limit)


@pytest.fixture
def fd_room() -> Iterator[None]:
    """Room for this test's own sockets: its soft open-file limit raised for the test."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    need = IDLE + BIG + 256
    if hard != resource.RLIM_INFINITY and hard < need:
        pytest.skip(f"the hard open-file limit ({hard}) is below the {need} this test needs")
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, need), hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def start_node(harness: Harness, tmp_path: Path) -> Child:
    """A node with a dashboard, no workload, started under a soft limit of ``NODE_NOFILE``."""
    config = tmp_path / "node.yaml"
    config.write_text("workload:\n  enabled: false\n")
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (NODE_NOFILE, hard))
    try:
        return harness.start_node("--config", str(config))
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def rpc_counters(port: int) -> dict[str, int]:
    """The node's RPC counters, from its identity answer (within ``ANSWER`` seconds)."""
    body = trio.run(rpc_call, HOST, port, Identity(), ANSWER)
    counters: dict[str, int] = body["rpc"]
    return counters


def connect(port: int) -> socket.socket:
    return socket.create_connection((HOST, port), timeout=10)


def closed_by_node(sock: socket.socket) -> bool:
    """Whether the node has closed ``sock`` (EOF or reset), waiting up to the socket's timeout."""
    try:
        while sock.recv(65536):
            pass
    except TimeoutError:
        return False
    except OSError:  # reset
        pass
    return True


def send_stalled(sock: socket.socket, data: bytes) -> None:
    """Send ``data`` (all but its last byte, so the frame never completes); a node that closes
    the connection meanwhile ends the sending."""
    try:
        sock.sendall(data[:-1])
    except OSError:  # reset or broken pipe: refused by the node
        pass


def big_frame() -> bytes:
    """A 15 MB Adopt frame: a kind allowed 16 MiB, so only the budget can refuse it."""
    state = {"data": bytes(BIG_FRAME - 200)}
    body = msgpack.packb(encode(Adopt("rt_bdev", "hx", "850.0", "local", state)))
    return struct.pack(">I", len(body)) + body


class Rss:
    """The node's resident memory: where it started, the most seen since."""

    def __init__(self, pid: int) -> None:
        self.process = psutil.Process(pid)
        self.start = self.peak = self.process.memory_info().rss

    def look(self) -> int:
        self.peak = max(self.peak, self.process.memory_info().rss)
        return self.peak


def answers_in_time(harness: Harness, node: Child, url: str) -> float:
    """Seconds the best of ``TRIES`` took to answer both identity (over the RPC) and
    ``/api/health``; each answer must come within ``ANSWER`` seconds."""
    best, problems = float("inf"), []
    for _ in range(TRIES):
        harness.require_alive(node)
        started = time.monotonic()
        try:
            trio.run(rpc_call, HOST, node.port, Identity(), ANSWER)
            health = httpx.get(f"{url}/api/health", timeout=ANSWER)
        except (ApiError, httpx.HTTPError) as exc:
            problems.append(repr(exc))
            continue
        assert health.status_code == 200, health.text
        best = min(best, time.monotonic() - started)
    assert best < 2 * ANSWER, f"no answer within {ANSWER}s in {TRIES} tries: {problems}"
    return best


def test_the_runtime_port_survives_hostile_connections(
    harness: Harness, tmp_path: Path, fd_room: None
) -> None:
    node = start_node(harness, tmp_path)
    harness.wait_ready(node, timeout=60)
    url = harness.dashboard_url(node, timeout=60)
    soft, hard = psutil.Process(node.pid).rlimit(resource.RLIMIT_NOFILE)
    assert soft > NODE_NOFILE, "the node raised its own open-file limit"
    rss = Rss(node.pid)
    before = rpc_counters(node.port)

    # 30 connections each sending a 15 MB frame, stalled before its last byte
    frame = big_frame()
    big = [connect(node.port) for _ in range(BIG)]
    for sock in big:
        send_stalled(sock, frame)
    rss.look()
    answers_in_time(harness, node, url)

    # 1,000 idle connections: more than the node holds at once
    idle = [connect(node.port) for _ in range(IDLE)]
    rss.look()
    during_flood = answers_in_time(harness, node, url)  # the oldest idle ones make room
    cap = before["max_connections"]
    wait_for(
        "the node to count the idle connections it could not hold",
        lambda: (c := rpc_counters(node.port))["evicted"] + c["refused"] >= IDLE - cap,
        retry_on=(ApiError,),
    )

    # a stream of random bytes; a valid length with garbage msgpack; a half-open connection
    noise = random.Random(12).randbytes(1 << 20)
    garbage = struct.pack(">I", 1000) + b"\xc1" * 1000
    stalled = struct.pack(">I", 100) + b"\x85"  # a frame that never completes
    doors = {"random": noise, "garbage": garbage + b"x", "half-open": stalled + b"x"}
    hostile = {name: connect(node.port) for name in doors}
    for name, data in doors.items():
        send_stalled(hostile[name], data)
    for name, sock in hostile.items():  # the stalled ones within the 5 s frame limit
        sock.settimeout(CLOSE_WAIT)
        assert closed_by_node(sock), f"the node still holds the {name} connection"
    for sock in big:
        sock.settimeout(CLOSE_WAIT)
        assert closed_by_node(sock), "the node still holds a 15 MB frame"
    rss.look()

    after = answers_in_time(harness, node, url)
    counted = {k: v - before.get(k, 0) for k, v in rpc_counters(node.port).items()}
    for sock in [*big, *idle, *hostile.values()]:
        sock.close()
    assert rss.peak - rss.start < RSS_GROWTH, (
        f"RSS {rss.start / 1e6:.0f} -> {rss.peak / 1e6:.0f} MB"
    )
    assert counted["over_budget"] >= 1
    assert counted["over_budget"] + counted["timed_out"] >= BIG + 1  # + the half-open one
    assert counted["evicted"] + counted["refused"] >= IDLE - cap
    assert counted["malformed"] + counted["oversized"] >= 2  # random bytes, garbage msgpack
    harness.require_alive(node)
    print(  # the figures, for the report (pytest -s)
        f"\nRSS {rss.start / 1e6:.0f} -> peak {rss.peak / 1e6:.0f} MB; nofile {soft}/{hard}; "
        f"answers in {during_flood:.3f}s during the flood, {after:.3f}s after; counted {counted}"
    )


def test_hostile_block_frames_are_refused_and_change_nothing(
    harness: Harness, tmp_path: Path
) -> None:
    """The block door (``cluster.modules.remote`` rule 1): every hostile operation on a peer's
    device is a 400 with one reason, the device's space is unchanged, and the node answers."""
    node = start_node(harness, tmp_path)
    harness.wait_ready(node, timeout=60)
    url = harness.dashboard_url(node, timeout=60)
    form = {"pool_name": "lent", "pool_id": "900.0", "bdev_type": "ram", "capacity": "1M"}
    assert httpx.post(url + "/api/mod/rt_bdev/create", data=form, timeout=30).status_code == 200

    def ask(op: str, pool: str = "900.0", **fields: Any) -> Any:
        return trio.run(rpc_call, HOST, node.port, Block(pool, op, **fields), 5.0)

    before = ask("info")
    extent = ask("allocate", size=4096)
    hostile = [
        ("read", {"offset": 0, "size": (1 << 20) + 1}),  # more than one run
        ("read", {"offset": (1 << 20) - 10, "size": 100}),  # past the end
        ("read", {"offset": -1, "size": 10}),
        ("write", {"offset": (1 << 20) - 1, "data": b"xy"}),
        ("free", {"offset": 1, "size": 4096}),  # not aligned
        ("free", {"offset": 0, "size": 0}),
        ("free", {"offset": 1 << 40, "size": 4096}),  # outside
        ("free", {"offset": 8192, "size": 4096}),  # never allocated: a double free
        ("allocate", {"size": 1 << 40}),
        ("allocate", {"size": 0}),
        ("format", {}),
    ]
    for op, fields in hostile:
        with pytest.raises(ApiError) as info:
            ask(op, **fields)
        assert info.value.status == 400, (op, fields, info.value)
    for pool in ("1.0", "nope", "9.9"):  # the admin pool, an unknown name, an unknown id
        with pytest.raises(ApiError) as info:
            ask("info", pool)
        assert info.value.status in (400, 404), (pool, info.value)
    ask("free", offset=extent["offset"], size=extent["size"])
    assert ask("info") == before
    assert httpx.get(url + "/api/health", timeout=5).status_code == 200
