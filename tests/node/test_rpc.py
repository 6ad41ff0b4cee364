"""The node RPC over real TCP: replies, remote errors, timeouts, malformed input; the peers of
a node's runtime; and the control operations of a node run in this process."""

from __future__ import annotations

import resource
import struct
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import msgpack
import pytest
import trio
import trio.testing

import swim
from cluster.ground.errors import (
    BadRequest,
    NotFound,
    PeerUnavailable,
    PeerUnreachable,
)
from cluster.ground.settings import load_settings
from cluster.node import (
    Node,
    RpcLimits,
    RpcPeers,
    RpcServerStats,
    fds,
    open_node,
    open_rpc_listeners,
    serve_rpc,
)
from cluster.rpc import (
    Adopt,
    Compose,
    Faults,
    Identity,
    Migrate,
    Monitor,
    PeerTimeout,
    PoolMonitor,
    Pools,
    RpcError,
    Stop,
    Swim,
    encode,
    rpc_call,
)
from cluster.runtime.testing import FakeMember
from swim import recv_frame, send_frame
from tests.support import hold_port, wait_for_async


async def echo(req: Monitor) -> Any:
    return {"echo": req.query, "params": dict(req.params)}


async def missing(req: PoolMonitor) -> Any:
    raise NotFound(f"no pool with id {req.pool_id}")


async def broken(req: Identity) -> Any:
    raise RuntimeError("oops")


async def slow(req: Pools) -> Any:
    await trio.sleep_forever()


HANDLERS: dict[type, Callable[[Any], Awaitable[Any]]] = {
    Monitor: echo,
    PoolMonitor: missing,
    Identity: broken,
    Pools: slow,
}


async def start_server(
    nursery: trio.Nursery, handlers: dict[type, Any] = HANDLERS, limits: RpcLimits | None = None
) -> tuple[int, RpcServerStats]:
    stats = RpcServerStats()

    async def serve(task_status: trio.TaskStatus[int] = trio.TASK_STATUS_IGNORED) -> None:
        async with open_rpc_listeners("127.0.0.1", 0) as listeners:
            await serve_rpc(listeners, handlers, stats, limits, task_status=task_status)

    return await nursery.start(serve), stats


@pytest.fixture
async def server(nursery: trio.Nursery) -> tuple[int, RpcServerStats]:
    return await start_server(nursery)


def frame(obj: Any) -> bytes:
    body = msgpack.packb(obj, use_bin_type=True)
    return struct.pack(">I", len(body)) + body


async def raw(port: int, data: bytes) -> bytes:
    stream = await trio.open_tcp_stream("127.0.0.1", port)
    async with stream:
        chunks = b""
        with trio.fail_after(5):
            try:
                await stream.send_all(data)
                await stream.send_eof()
                while chunk := await stream.receive_some(65536):
                    chunks += chunk
            except trio.BrokenResourceError:  # reset: the server closed with our bytes unread
                pass
        return chunks


async def test_request_and_reply(server: tuple[int, RpcServerStats]) -> None:
    port, stats = server
    assert await rpc_call("127.0.0.1", port, Monitor("workers", {"a": "1"}), 5) == {
        "echo": "workers",
        "params": {"a": "1"},
    }
    assert stats.requests == 1


async def test_remote_api_errors_keep_their_status(server: tuple[int, RpcServerStats]) -> None:
    port, stats = server
    with pytest.raises(NotFound, match=r"9\.9"):
        await rpc_call("127.0.0.1", port, PoolMonitor("9.9", "stats"), 5)
    with pytest.raises(RpcError, match="handler failed: oops"):
        await rpc_call("127.0.0.1", port, Identity(), 5)
    assert stats.failed == 1


async def test_calls_are_bounded_by_their_timeout(server: tuple[int, RpcServerStats]) -> None:
    port, _ = server
    with pytest.raises(PeerTimeout) as info:
        await rpc_call("127.0.0.1", port, Pools(), 0.2)
    assert isinstance(info.value, PeerUnavailable)
    assert not isinstance(info.value, PeerUnreachable)
    assert isinstance(info.value.__cause__, trio.TooSlowError)


@pytest.mark.parametrize(
    ("data", "counter"),
    [
        (b"\x00\x00\x00\x00", "malformed"),  # zero length
        (b"\xff\xff\xff\xff" + b"x" * 10, "oversized"),  # over any kind's size
        (struct.pack(">I", 5) + b"\xc1\xc1\xc1\xc1\xc1", "malformed"),  # not msgpack
        (struct.pack(">I", 3) + msgpack.packb([1, 2]), "malformed"),  # not a map
        (struct.pack(">I", 100) + b"short", "malformed"),  # truncated
        (struct.pack(">I", 11) + msgpack.packb({"k": "nope"}), "malformed"),  # unknown kind
        (struct.pack(">I", 22) + msgpack.packb({"k": "monitor", "query": 7}), "malformed"),
        (struct.pack(">I", 22) + msgpack.packb({"k": "control", "op": "stop"}), "malformed"),
        (b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", "oversized"),  # wrong protocol: "GET " is 1.2 GB
    ],
)
async def test_malformed_frames_close_the_connection_and_are_counted(
    server: tuple[int, RpcServerStats], data: bytes, counter: str
) -> None:
    port, stats = server
    assert await raw(port, data) == b""  # closed without a reply
    closed = {k: v for k, v in stats.as_dict().items() if k in ("malformed", "oversized") and v}
    assert closed == {counter: 1}
    # the server is unharmed
    assert await rpc_call("127.0.0.1", port, Monitor("x"), 5) == {"echo": "x", "params": {}}


async def test_connection_refused_is_unreachable() -> None:
    with hold_port(listen=False) as port, pytest.raises(PeerUnreachable) as info:
        await rpc_call("127.0.0.1", port, Identity(), 2)  # bound, not listening: refused
    assert isinstance(info.value.__cause__, OSError)


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        (b"", "the connection closed without a reply"),
        (struct.pack(">I", 4) + msgpack.packb({"x": 1}), "answered a malformed frame"),
        (struct.pack(">I", 2) + b"\xc1\xc1", "undecodable frame body"),
        (struct.pack(">I", 9) + b"abc", "stream ended inside a frame"),
        (b"\xff\xff\xff\xff", "frame length 4294967295 outside"),
        (frame({"ok": True, "body": [[[]] * 1000] * 1000}), "more than 250000 values"),
    ],
)
async def test_a_bad_reply_is_unreachable(
    nursery: trio.Nursery, answer: bytes, message: str
) -> None:
    async def bad_server(stream: trio.SocketStream) -> None:
        async with stream:
            await recv_frame(stream, 1 << 20)
            await stream.send_all(answer)

    listeners = await nursery.start(trio.serve_tcp, bad_server, 0)
    port = listeners[0].socket.getsockname()[1]
    with pytest.raises(PeerUnreachable, match=message):
        await rpc_call("127.0.0.1", port, Identity(), 5)


async def test_swim_frames_are_carried_whole_and_own_their_reply(nursery: trio.Nursery) -> None:
    seen: list[Swim] = []

    async def swim_like(req: Swim) -> Any:
        seen.append(req)
        return {"k": "swim", "ok": True, "node_id": 4}

    async def swim_broken(req: Swim) -> Any:
        raise BadRequest("no")

    for handler, expect in (
        (swim_like, {"k": "swim", "ok": True, "node_id": 4}),
        (swim_broken, {"ok": False, "status": 400, "error": "no", "k": "swim"}),
    ):
        port, _ = await start_server(nursery, {Swim: handler})
        stream = await trio.open_tcp_stream("127.0.0.1", port)
        async with stream:
            await send_frame(stream, {"k": "swim", "op": "induct"})
            assert await recv_frame(stream, 1 << 20) == expect
    assert seen == [Swim({"k": "swim", "op": "induct"})]


# -- the peers of a node's runtime ------------------------------------------------------------


async def test_peers_ask_members_over_the_rpc(server: tuple[int, RpcServerStats]) -> None:
    port, _ = server
    peers = RpcPeers(swim.Faults(), timeout=5)
    member = FakeMember(1, port=port)
    assert await peers.monitor(member, "workers", {"a": "b"}) == {
        "echo": "workers",
        "params": {"a": "b"},
    }
    with pytest.raises(NotFound):
        await peers.pool_monitor(member, "9.9", "stats", {})


@pytest.mark.parametrize("how", ["block", "cut_to"])
async def test_a_blocked_peer_is_cut_off(autojump_clock: trio.testing.MockClock, how: str) -> None:
    faults = swim.Faults()
    getattr(faults, how)([1])  # a one-way cut too: a TCP request needs both ways
    peers = RpcPeers(faults, timeout=5)
    start = trio.current_time()
    with pytest.raises(PeerUnavailable, match=r"^monitor 'workers' timed out after 5s$") as info:
        await peers.monitor(FakeMember(1, port=1), "workers", {})
    assert not isinstance(info.value, PeerUnreachable)
    assert trio.current_time() - start == pytest.approx(5)


# -- the control operations of a node ---------------------------------------------------------


@pytest.fixture
async def node(tmp_path: Path) -> AsyncIterator[Node]:
    settings = load_settings("embedded", env={"HOME": str(tmp_path)}, flags={"port": 0})
    settings = replace(
        settings,
        runtime=replace(settings.runtime, data_dir=str(tmp_path / "data")),
        workload=replace(settings.workload, enabled=False),
    )
    async with open_node(settings, seed=1) as node:
        yield node


async def test_control_operations(node: Node) -> None:
    port = node.rpc_port

    async def call(request: Any) -> Any:
        return await rpc_call("127.0.0.1", port, request, 5)

    ident = await call(Identity())
    assert (ident["node_id"], ident["runtime_port"], ident["dashboard"]) == (0, port, None)
    assert (await call(Monitor("health")))["node_id"] == 0
    entry = {"mod_name": "rt_bdev", "pool_name": "extra", "pool_id": "810.0", "capacity": "64K"}
    assert (await call(Compose((entry,))))["results"][0]["pool_id"] == "810.0"
    assert "810.0" in {p["pool_id"] for p in (await call(Pools()))["pools"]}
    assert await call(PoolMonitor("810.0", "stats")) is not None
    with pytest.raises(BadRequest, match="is on node 0 already"):
        await call(Migrate("810.0", "local"))
    with pytest.raises(BadRequest, match="admin pool cannot move"):
        await call(Migrate("1.0", 0))

    assert await call(Faults("loss", None, 10)) == {"ok": True, "node_id": 0, "action": "loss"}
    assert node.swim.faults.loss_pct == 10
    await call(Faults("block", peers=(3, 4)))
    assert node.swim.faults.blocked == {3, 4}
    await call(Faults("cut", peers=(5,)))
    await call(Faults("cut", peers=(6, 5)))  # cuts add up
    assert node.swim.faults.cut == {5, 6}
    assert (await call(Monitor("faults")))["cut"] == [5, 6]
    await call(Faults("heal"))
    assert not node.swim.faults.active
    with pytest.raises(BadRequest, match="unknown fault action 'melt'"):
        await call(Faults("melt"))

    assert (await call(Stop()))["node_id"] == 0
    assert node.stop_requested.is_set()
    assert node.rpc_stats.malformed == 0


HOSTILE_FIELDS: list[tuple[Any, str]] = [
    (Faults("loss", None, -5), r"loss percent: -5 is out of range"),
    (Faults("loss", None, 400), r"loss percent: 400 is out of range"),
    (Faults("loss", None, 1e308), r"loss percent: 1e\+308 is out of range"),
    (Faults("delay", None, -1), r"delay ms: -1 is out of range"),
    (Faults("delay", None, 1e12), r"delay ms: 1e\+12 is out of range"),
    (Faults("loss", -7, 5), r"peer: -7 is out of range"),
    (Faults("delay", 2**63, 5), r"peer: 9223372036854775808 is out of range"),
    (Faults("block", peers=(3, -1)), r"peers: -1 is out of range"),
    (Faults("block", peers=(2**64 - 1,)), r"peers: 18446744073709551615 is out of range"),
    (Faults("block", peers=tuple(range(5000))), r"peers: at most 4096 node ids, got 5000"),
    (Faults("x" * 10_000), r"unknown fault action 'x{40}\.\.\.' \(one of: loss, delay"),
    (Faults("cut", peers=(2, 0)), r"peers: node 0 cannot cut itself off"),
    (Faults("cut", peers=(1, -1)), r"peers: -1 is out of range"),
    (Faults("cut", peers=tuple(range(5000))), r"peers: at most 4096 node ids, got 5000"),
    (Faults("clock", offset=31_622_401.0), r"clock offset: 3\.16224e\+07 is out of range"),
    (Faults("clock", offset=-1e308), r"clock offset: -1e\+308 is out of range"),
    (Faults("clock", rate=0.25), r"clock rate: 0\.25 is out of range \(from 0\.5 to 2\)"),
    (Faults("clock", rate=2.5), r"clock rate: 2\.5 is out of range"),
    (Faults("clock", rate=0.0), r"clock rate: 0 is out of range"),
    (Faults("clock", offset=60.0), r"clock cannot be set: its trio run has no ProcessClock"),
    (Compose(({"mod_name": "rt_bdev"},) * 300), r"at most 256 entries, not 300"),
    (PoolMonitor("-1.0", "stats"), r"bad pool id"),
    (Migrate("810.0", -5), r"unknown or malformed node id: -5"),
    (Migrate("810.0", 2**63), r"unknown or malformed node id"),
]


async def test_hostile_field_values_are_refused_with_400(node: Node) -> None:
    """Out-of-range numbers were 500s ("handler failed") or accepted (peer -7, peer 2**63)."""
    entry = {"mod_name": "rt_bdev", "pool_name": "h", "pool_id": "810.0", "capacity": "64K"}
    await rpc_call("127.0.0.1", node.rpc_port, Compose((entry,)), 5)
    for request, message in HOSTILE_FIELDS:
        with pytest.raises(BadRequest, match=message):
            await rpc_call("127.0.0.1", node.rpc_port, request, 5)
    faults = node.swim.faults
    assert not faults.active, "a refused fault changed nothing"
    assert node.rpc_stats.failed == 0


@pytest.mark.parametrize(
    "state",
    [
        {"free_runs": [["x", 1]]},  # int("x"): was a 500, and the pool stayed
        {"free_runs": [[1]]},  # one value where two go: was a 500, and the pool stayed
        {"free_runs": 7, "chunks": [[0, None]]},
        {"chunks": [[0, 1000]]},  # was bytes(1000) of zeros: bytes(10**10) took 10 GB
    ],
)
async def test_an_adoption_whose_state_cannot_be_imported_is_refused(
    node: Node, state: dict[str, Any]
) -> None:
    config = {"capacity": "64K", "bdev_type": "ram"}
    adopt = Adopt("rt_bdev", "moved", "840.0", "local", {"config": config, **state})
    with pytest.raises(BadRequest, match=r"pool 840\.0: state cannot be imported"):
        await rpc_call("127.0.0.1", node.rpc_port, adopt, 5)
    assert "840.0" not in {p["pool_id"] for p in node.runtime.pools_json()["pools"]}
    assert node.rpc_stats.failed == 0


async def test_identity_shows_the_rpc_counters(node: Node) -> None:
    ident = await rpc_call("127.0.0.1", node.rpc_port, Identity(), 5)
    assert ident["rpc"]["requests"] == 1
    assert ident["rpc"]["max_connections"] == node.rpc_stats.max_connections > 0
    assert set(ident["rpc"]) >= {"malformed", "oversized", "over_budget", "timed_out", "evicted"}


async def test_migrate_moves_a_pool_and_a_cut_off_target_times_out(
    node: Node, tmp_path: Path
) -> None:
    hostfile = tmp_path / "hosts"
    hostfile.write_text(f"127.0.0.1:{node.rpc_port}\n")
    s = load_settings("embedded", env={"HOME": str(tmp_path)}, flags={"port": 0})
    s = replace(
        s,
        networking=replace(s.networking, hostfile=str(hostfile)),
        runtime=replace(s.runtime, data_dir=str(tmp_path / "data1")),
        workload=replace(s.workload, enabled=False),
    )
    async with open_node(s, induct=True, seed=2) as other:
        assert other.node_id == 1
        with trio.fail_after(10):
            await node.swim.wait_members(lambda ms: len(ms) == 2)
        entry = {"mod_name": "rt_bdev", "pool_name": "mover", "pool_id": "820.0", "capacity": "64K"}
        await rpc_call("127.0.0.1", node.rpc_port, Compose((entry,)), 5)

        node.swim.faults.block([1])
        node.peers.timeout = 0.3
        with pytest.raises(PeerUnavailable, match=r"^adopt 820\.0 timed out after 0\.3s$"):
            await rpc_call("127.0.0.1", node.rpc_port, Migrate("820.0", "1"), 5)
        node.swim.faults.heal()

        body = await rpc_call("127.0.0.1", node.rpc_port, Migrate("820.0", "1"), 5)
        assert body == {"ok": True, "pool_id": "820.0", "to": 1}
        assert "820.0" not in {p["pool_id"] for p in node.runtime.pools_json()["pools"]}
        assert "820.0" in {p["pool_id"] for p in other.runtime.pools_json()["pools"]}


# -- the limits of the server (issue 12: no read timeout, no memory budget, no cap) ------------


async def closed_by_server(stream: trio.SocketStream, timeout: float = 10.0) -> bytes:
    """Everything the server sends until it closes the connection (reset included)."""
    data = b""
    with trio.fail_after(timeout):
        try:
            while chunk := await stream.receive_some(65536):
                data += chunk
        except trio.BrokenResourceError:
            pass
    return data


async def test_a_frame_must_arrive_whole_in_time(nursery: trio.Nursery) -> None:
    port, stats = await start_server(nursery, limits=RpcLimits(frame_timeout=0.2))
    for partial in (b"\x00\x00", frame({"k": "monitor", "query": "x"})[:-3]):
        stream = await trio.open_tcp_stream("127.0.0.1", port)
        async with stream:
            await stream.send_all(partial)  # then stall: a half-open or slow-loris client
            assert await closed_by_server(stream) == b""
    assert stats.timed_out == 2
    assert (stats.active, stats.held_bytes) == (0, 0)


async def test_an_idle_connection_is_closed(nursery: trio.Nursery) -> None:
    port, stats = await start_server(nursery, limits=RpcLimits(idle_timeout=0.2))
    stream = await trio.open_tcp_stream("127.0.0.1", port)
    async with stream:
        assert await closed_by_server(stream) == b""  # never sent a byte
    stream = await trio.open_tcp_stream("127.0.0.1", port)
    async with stream:
        await stream.send_all(frame(encode(Monitor("q"))))
        reply = await closed_by_server(stream)  # answered, then closed once idle
        assert msgpack.unpackb(reply[4:]) == {"ok": True, "body": {"echo": "q", "params": {}}}
    assert (stats.idle_closed, stats.requests, stats.active) == (2, 1, 0)


async def adopted(req: Adopt) -> Any:
    return {"pool_id": req.pool_id, "bytes": len(req.state["data"])}


async def test_frames_in_flight_share_a_budget(nursery: trio.Nursery) -> None:
    limits = RpcLimits(budget=256 << 10, small_reserve=64 << 10, max_frame=192 << 10)
    port, stats = await start_server(nursery, {**HANDLERS, Adopt: adopted}, limits)
    big = frame(encode(Adopt("rt_bdev", "p", "800.0", "local", {"data": b"x" * (150 << 10)})))
    holder = await trio.open_tcp_stream("127.0.0.1", port)
    async with holder:
        await holder.send_all(big[:1000])  # its length is charged as soon as it is known
        await wait_for_async("the first frame charged", lambda: stats.held_bytes >= len(big) - 4)
        other = await trio.open_tcp_stream("127.0.0.1", port)
        async with other:
            await other.send_all(big[:1000])
            assert await closed_by_server(other) == b""  # would pass the budget
        assert stats.over_budget == 1
        # the small kinds keep their reserve: the node still answers
        assert await rpc_call("127.0.0.1", port, Monitor("x"), 5) == {"echo": "x", "params": {}}
        await holder.send_all(big[1000:])
        assert await recv_frame(holder, 1 << 20) == {
            "ok": True,
            "body": {"pool_id": "800.0", "bytes": 150 << 10},
        }
    await wait_for_async("the budget given back", lambda: stats.held_bytes == 0)


async def test_a_frame_larger_than_its_kind_allows_is_refused_before_its_body(
    nursery: trio.Nursery,
) -> None:
    port, stats = await start_server(nursery)
    header = frame(encode(Monitor("x" * (200 << 10))))[:100]  # 200 KiB: a Monitor gets 64
    stream = await trio.open_tcp_stream("127.0.0.1", port)
    async with stream:
        await stream.send_all(header)  # the body never comes: the size alone refuses it
        assert await closed_by_server(stream) == b""
    assert (stats.oversized, stats.timed_out) == (1, 0)


async def test_a_frame_of_too_many_values_is_malformed(nursery: trio.Nursery) -> None:
    port, stats = await start_server(nursery, {**HANDLERS, Adopt: adopted})
    bomb = {"k": "control", "op": "adopt", "mod_name": "m", "pool_name": "p", "pool_id": "8.0",
            "state": {"data": [[[]] * 1000] * 1000}}  # fmt: skip
    assert await raw(port, frame(bomb)) == b""  # a million lists (64 MB) from 1 MB
    assert stats.malformed == 1


async def test_at_the_cap_the_oldest_idle_connection_makes_room(nursery: trio.Nursery) -> None:
    port, stats = await start_server(nursery, limits=RpcLimits(max_connections=2))
    assert stats.max_connections == 2
    first = await trio.open_tcp_stream("127.0.0.1", port)
    await wait_for_async("one connection open", lambda: stats.active == 1)
    second = await trio.open_tcp_stream("127.0.0.1", port)
    await wait_for_async("two connections open", lambda: stats.active == 2)
    async with first, second:
        # a new connection at the cap closes the connection idle the longest, and is served
        assert await rpc_call("127.0.0.1", port, Monitor("x"), 5) == {"echo": "x", "params": {}}
        assert await closed_by_server(first) == b""
        assert stats.evicted == 1
        await second.send_all(frame(encode(Monitor("y"))))
        assert (await recv_frame(second, 1 << 20))["body"] == {"echo": "y", "params": {}}
    assert stats.refused == 0


async def test_at_the_cap_with_none_idle_a_new_connection_is_closed_at_once(
    nursery: trio.Nursery,
) -> None:
    port, stats = await start_server(nursery, limits=RpcLimits(max_connections=2))
    busy = [await trio.open_tcp_stream("127.0.0.1", port) for _ in range(2)]
    for stream in busy:
        await stream.send_all(frame(encode(Monitor("x")))[:-1])  # inside a frame: not idle
    await wait_for_async("two frames charged", lambda: stats.active == 2 and stats.held_bytes)
    third = await trio.open_tcp_stream("127.0.0.1", port)
    async with third:
        assert await closed_by_server(third) == b""
    assert (stats.refused, stats.evicted) == (1, 0)
    for stream in busy:
        await stream.send_all(frame(encode(Monitor("x")))[-1:])
        assert (await recv_frame(stream, 1 << 20))["body"] == {"echo": "x", "params": {}}
        await stream.aclose()


async def unencodable(req: Monitor) -> Any:
    return {"a set": {1, 2}}


async def test_an_unencodable_reply_is_a_500_and_the_server_goes_on(
    nursery: trio.Nursery, caplog: pytest.LogCaptureFixture
) -> None:
    port, stats = await start_server(nursery, {Monitor: unencodable, Pools: echo_pools})
    stream = await trio.open_tcp_stream("127.0.0.1", port)
    async with stream:  # the same connection answers on
        await stream.send_all(frame(encode(Monitor("x"))))
        reply = await recv_frame(stream, 1 << 20)
        assert reply["status"] == 500
        assert reply["error"].startswith("the reply cannot be encoded: ")
        await stream.send_all(frame(encode(Pools())))
        assert await recv_frame(stream, 1 << 20) == {"ok": True, "body": "pools"}
    with pytest.raises(RpcError, match="cannot be encoded"):
        await rpc_call("127.0.0.1", port, Monitor("x"), 5)
    assert (stats.failed, stats.requests) == (2, 3)
    assert "RPC reply to Monitor cannot be sent" in caplog.text


async def echo_pools(req: Pools) -> Any:
    return "pools"


async def test_a_request_that_cannot_be_sent_is_a_bad_request() -> None:
    with pytest.raises(BadRequest, match="cannot send Faults: Integer value out of range"):
        await rpc_call("127.0.0.1", 1, Faults("loss", 2**70, 5), 5)
    with pytest.raises(BadRequest, match="cannot send Monitor: 70030 bytes, more than its 65536"):
        await rpc_call("127.0.0.1", 1, Monitor("x" * 70_000), 5)


def test_limits_hold_their_largest_frame() -> None:
    with pytest.raises(ValueError, match="budget"):
        RpcLimits(budget=1 << 20, max_frame=2 << 20)


# -- file-descriptor headroom -----------------------------------------------------------------


def test_the_connection_cap_leaves_room_under_the_open_file_limit() -> None:
    assert fds.connection_cap(1024) == 384  # (1024 - 256 reserved) / 2: the rest for the dashboard
    assert fds.connection_cap(20_000) == fds.MAX_RPC_CONNECTIONS == 512
    assert fds.connection_cap(100) == fds.MIN_RPC_CONNECTIONS
    assert fds.connection_cap() == fds.connection_cap(fds.nofile_limit())
    assert RpcLimits.for_this_process().max_connections == fds.connection_cap()


def test_opening_the_listeners_raises_the_soft_open_file_limit() -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or hard <= 300:
        pytest.skip(f"needs a finite hard open-file limit above 300, not {hard}")
    resource.setrlimit(resource.RLIMIT_NOFILE, (300, hard))
    try:

        async def open_and_close() -> None:
            async with open_rpc_listeners("127.0.0.1", 0):
                pass

        trio.run(open_and_close)
        assert resource.getrlimit(resource.RLIMIT_NOFILE) == (hard, hard)
        assert fds.raise_nofile_limit() == hard  # again: nothing left to raise, no error
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


async def test_a_silent_peer_times_out_once_in_the_peers() -> None:
    """The RPC client's own timeout is the forward's one bound: its ``PeerTimeout`` comes out
    worded as the forward's (``<what> timed out after Ns``)."""
    async with trio.open_nursery() as nursery:
        listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
        port = listeners[0].socket.getsockname()[1]

        async def silent(stream: trio.SocketStream) -> None:
            await trio.sleep_forever()

        nursery.start_soon(trio.serve_listeners, silent, listeners)
        peers = RpcPeers(swim.Faults(), timeout=0.3)
        start = trio.current_time()
        with pytest.raises(PeerUnavailable, match=r"^monitor 'workers' timed out after 0\.3s$"):
            await peers.monitor(FakeMember(1, port=port), "workers", {})
        assert trio.current_time() - start < 2.0
        nursery.cancel_scope.cancel()
