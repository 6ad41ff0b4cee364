"""The node RPC over real TCP: replies, remote errors, timeouts, malformed input; the peers of
a node's runtime; and the control operations of a node run in this process."""

from __future__ import annotations

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
from cluster.errors import (
    BadRequest,
    NotFound,
    PeerUnavailable,
    PeerUnreachable,
)
from cluster.node import (
    Compose,
    Faults,
    Identity,
    Migrate,
    Monitor,
    Node,
    PeerTimeout,
    PoolMonitor,
    Pools,
    RpcError,
    RpcPeers,
    RpcServerStats,
    Stop,
    Swim,
    open_node,
    open_rpc_listeners,
    rpc_call,
    serve_rpc,
)
from cluster.runtime.testing import FakeMember
from cluster.settings import load_settings
from swim import recv_frame, send_frame


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
    nursery: trio.Nursery, handlers: dict[type, Any] = HANDLERS
) -> tuple[int, RpcServerStats]:
    stats = RpcServerStats()

    async def serve(task_status: trio.TaskStatus[int] = trio.TASK_STATUS_IGNORED) -> None:
        async with open_rpc_listeners("127.0.0.1", 0) as listeners:
            await serve_rpc(listeners, handlers, stats, task_status=task_status)

    return await nursery.start(serve), stats


@pytest.fixture
async def server(nursery: trio.Nursery) -> tuple[int, RpcServerStats]:
    return await start_server(nursery)


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
    "data",
    [
        b"\x00\x00\x00\x00",  # zero length
        b"\xff\xff\xff\xff" + b"x" * 10,  # oversized
        struct.pack(">I", 5) + b"\xc1\xc1\xc1\xc1\xc1",  # not msgpack
        struct.pack(">I", 3) + msgpack.packb([1, 2]),  # not a map
        struct.pack(">I", 100) + b"short",  # truncated
        struct.pack(">I", 11) + msgpack.packb({"k": "nope"}),  # unknown kind
        struct.pack(">I", 22) + msgpack.packb({"k": "monitor", "query": 7}),  # bad field
        struct.pack(">I", 22) + msgpack.packb({"k": "control", "op": "stop"}),  # no handler
        b"GET / HTTP/1.1\r\nHost: x\r\n\r\n",  # wrong protocol
    ],
)
async def test_malformed_frames_close_the_connection_and_are_counted(
    server: tuple[int, RpcServerStats], data: bytes
) -> None:
    port, stats = server
    assert await raw(port, data) == b""  # closed without a reply
    assert stats.malformed == 1
    # the server is unharmed
    assert await rpc_call("127.0.0.1", port, Monitor("x"), 5) == {"echo": "x", "params": {}}


async def test_connection_refused_is_unreachable() -> None:
    with trio.socket.socket() as s:
        await s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(PeerUnreachable) as info:
        await rpc_call("127.0.0.1", port, Identity(), 2)
    assert isinstance(info.value.__cause__, OSError)


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        (b"", "the connection closed without a reply"),
        (struct.pack(">I", 4) + msgpack.packb({"x": 1}), "answered a malformed frame"),
        (struct.pack(">I", 2) + b"\xc1\xc1", "undecodable frame body"),
        (struct.pack(">I", 9) + b"abc", "stream ended inside a frame"),
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


async def test_a_blocked_peer_is_cut_off(autojump_clock: trio.testing.MockClock) -> None:
    faults = swim.Faults()
    faults.block([1])
    peers = RpcPeers(faults, timeout=5)
    start = trio.current_time()
    with pytest.raises(PeerUnavailable, match="node 1 is cut off") as info:
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
    await call(Faults("heal"))
    assert not node.swim.faults.active
    with pytest.raises(BadRequest, match="unknown fault action 'melt'"):
        await call(Faults("melt"))
    with pytest.raises(RpcError, match="handler failed: loss must be a percentage"):
        await call(Faults("loss", None, 400))

    assert (await call(Stop()))["node_id"] == 0
    assert node.stop_requested.is_set()
    assert node.rpc_stats.malformed == 0


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
        node.runtime.forward_timeout = 0.3
        with pytest.raises(PeerUnavailable, match=r"^adopt 820\.0 timed out after 0\.3s$"):
            await rpc_call("127.0.0.1", node.rpc_port, Migrate("820.0", "1"), 5)
        node.swim.faults.heal()

        body = await rpc_call("127.0.0.1", node.rpc_port, Migrate("820.0", "1"), 5)
        assert body == {"ok": True, "pool_id": "820.0", "to": 1}
        assert "820.0" not in {p["pool_id"] for p in node.runtime.pools_json()["pools"]}
        assert "820.0" in {p["pool_id"] for p in other.runtime.pools_json()["pools"]}
