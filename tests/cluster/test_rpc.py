"""The node RPC over real TCP: replies, remote errors, timeouts and malformed input."""

from __future__ import annotations

import struct
from functools import partial
from typing import Any

import msgpack
import pytest
import trio

from cluster.errors import BadRequest, NotFound
from cluster.node.rpc import RpcServerStats, rpc_call, serve_rpc
from swim import recv_frame, send_frame


async def echo(msg: dict[str, Any]) -> Any:
    return {"echo": msg.get("value")}


async def missing(msg: dict[str, Any]) -> Any:
    raise NotFound("no pool with id 9.9")


async def broken(msg: dict[str, Any]) -> Any:
    raise RuntimeError("oops")


async def slow(msg: dict[str, Any]) -> Any:
    await trio.sleep_forever()


HANDLERS = {"echo": echo, "missing": missing, "broken": broken, "slow": slow}


@pytest.fixture
async def server(nursery: trio.Nursery) -> tuple[int, RpcServerStats]:
    stats = RpcServerStats()
    port = await nursery.start(serve_rpc, "127.0.0.1", 0, HANDLERS, stats)
    return port, stats


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
    assert await rpc_call("127.0.0.1", port, {"k": "echo", "value": [1, "x"]}, 5) == {
        "echo": [1, "x"]
    }
    assert stats.requests == 1


async def test_remote_api_errors_keep_their_status(server: tuple[int, RpcServerStats]) -> None:
    port, _ = server
    with pytest.raises(NotFound, match=r"9\.9"):
        await rpc_call("127.0.0.1", port, {"k": "missing"}, 5)
    with pytest.raises(Exception, match="handler failed: oops"):
        await rpc_call("127.0.0.1", port, {"k": "broken"}, 5)


async def test_calls_are_bounded_by_their_timeout(server: tuple[int, RpcServerStats]) -> None:
    port, _ = server
    with pytest.raises(trio.TooSlowError):
        await rpc_call("127.0.0.1", port, {"k": "slow"}, 0.2)


@pytest.mark.parametrize(
    "data",
    [
        b"\x00\x00\x00\x00",  # zero length
        b"\xff\xff\xff\xff" + b"x" * 10,  # oversized
        struct.pack(">I", 5) + b"\xc1\xc1\xc1\xc1\xc1",  # not msgpack
        struct.pack(">I", 3) + msgpack.packb([1, 2]),  # not a map
        struct.pack(">I", 100) + b"short",  # truncated
        struct.pack(">I", 11) + msgpack.packb({"k": "nope"}),  # unknown kind
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
    assert await rpc_call("127.0.0.1", port, {"k": "echo", "value": 1}, 5) == {"echo": 1}


async def test_connection_refused_is_an_oserror() -> None:
    with trio.socket.socket() as s:
        await s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(OSError):
        await rpc_call("127.0.0.1", port, {"k": "echo"}, 2)


def test_bad_request_is_importable() -> None:
    assert BadRequest.status == 400


async def test_verbatim_kinds_own_their_reply_format(nursery: trio.Nursery) -> None:
    async def swim_like(msg: dict[str, Any]) -> Any:
        return {"k": "swim", "ok": True, "node_id": 4}

    stats = RpcServerStats()
    port = await nursery.start(
        partial(serve_rpc, verbatim=("swim",)),
        "127.0.0.1",
        0,
        {"swim": swim_like, "broken": broken},
        stats,
    )
    stream = await trio.open_tcp_stream("127.0.0.1", port)
    async with stream:
        await send_frame(stream, {"k": "swim", "op": "induct"})
        assert await recv_frame(stream, 1 << 20) == {"k": "swim", "ok": True, "node_id": 4}
    with pytest.raises(Exception, match="handler failed"):
        await rpc_call("127.0.0.1", port, {"k": "broken"}, 5)
